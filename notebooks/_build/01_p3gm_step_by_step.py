# %% [markdown]
# # P3GM, step by step
#
# **P3GM** (Takagi et al., ICDE 2021) is a generative model that learns to produce new images (or
# table rows) while protecting every person in the training data with **differential privacy (DP)**.
#
# A plain VAE learns its encoder and its decoder together, and doing all of that with noisy gradients
# is hard. P3GM makes the job easier by splitting it into three phases, each one private on its own:
#
# 1. **DP-PCA**: find the main directions of the data with a noisy covariance matrix. The encoder is
#    simply "project onto these directions", so it never has to be learned.
# 2. **DP-EM**: fit a mixture of Gaussians to the projected data (the *codes*), with noisy statistics.
#    This mixture becomes the prior we sample from later.
# 3. **DP-SGD**: train the decoder (codes → images) with clipped, noisy gradients.
#
# In this notebook we build the three phases by hand from `dpcore`'s building blocks, look at what
# the noise does at each step, draw new digits, and then do the same thing again with one `fit` call.
#
# Every number called ε below comes from `dpcore`'s accountant, never from a formula typed in here.

# %%
import os

import numpy as np
import pandas as pd
import plotly.io as pio
import torch
from torch import nn

# DPCORE_SMALL=1 (set by the test suite) makes everything tiny so the notebook runs in seconds.
SMALL = os.environ.get("DPCORE_SMALL") == "1"
# Interactive figures in JupyterLab, Notebook 7 and VS Code (plotly.js embedded for classic Jupyter);
# the committed copy was built with PLOTLY_RENDERER set to add a PNG of each figure for GitHub.
pio.renderers.default = "json" if SMALL else os.environ.get("PLOTLY_RENDERER", "plotly_mimetype+notebook")
torch.manual_seed(0)

# %% [markdown]
# ## The data
#
# We use scikit-learn's **digits**: 1,797 handwritten digits of 8 × 8 pixels (it ships with
# scikit-learn, so nothing is downloaded). `load_split` gives a training split (the private data)
# and a test split (never used for training).

# %%
from dpcore.data import Dataset, load_split
from dpcore.figures import image_grid_figure

train, test = load_split("digits", seed=0)
X = train.features  # (n, 64) pixels in [0, 1]
print(f"{train.n} training images, {test.n} test images, {train.n_features} pixels each")
image_grid_figure(train, n=48, seed=0, ncols=12).show()

# %% [markdown]
# ## The privacy budget
#
# We pick a total budget (ε, δ) and decide which share of it goes to the encoder side (DP-PCA and
# DP-EM); DP-SGD gets the rest. `calibrate_p3gm` turns that into a **noise multiplier** for each
# phase: σ_p for the covariance, σ_e for the EM statistics, σ_s for the gradients (a noise multiplier
# is the noise's standard deviation divided by how much one person can change the result).
#
# Digits is tiny (about 1,600 training images; the paper uses 60,000). With so few people, each one
# matters a lot, so we need a larger ε than the paper's ε = 1 to get recognisable digits. Try ε = 1
# at the end and see what happens.

# %%
from dpcore.privacy import accountant

EPSILON, DELTA, ENCODER_SHARE = 10.0, 1e-5, 0.3
PCA_DIM, COMPONENTS, EM_ITERS = 10, 5, 10
BATCH = 100
EPOCHS = 1 if SMALL else 20
HIDDEN = 64 if SMALL else 256
WARMUP = 10 if SMALL else 300

cal = accountant.calibrate_p3gm(EPSILON, DELTA, ENCODER_SHARE, n=train.n, batch=BATCH, epochs=EPOCHS,
                                components=COMPONENTS, em_iters=EM_ITERS)
pd.DataFrame({"noise multiplier": [cal.mean_sigma, cal.pca_sigma, cal.em_sigma, cal.sgd_sigma]},
             index=["σ_m (data mean)", "σ_p (covariance)", "σ_e (each EM statistic)", "σ_s (gradients)"]).round(3)

# %% [markdown]
# ## Phase 1 — DP-PCA: what the noise does to the components
#
# Each image is clipped to length 1, so one person can change the covariance matrix by at most 1.
# DP-PCA adds Gaussian noise (std σ_p) to every entry of that matrix and takes its top eigenvectors.
#
# Below, each row shows the 10 principal components as 8 × 8 images: first without noise, then with
# a little noise, with the calibrated noise, and with a lot. Grey means 0, dark and light are
# positive and negative weights. The table says what each release would cost on its own, and how much
# of the true 10-dimensional subspace it recovers (1 = all of it).

# %%
from dpcore.privacy.dp_pca import DPPCA
from dpcore.privacy.ledger import PrivacyLedger

settings = {"no noise": None, "σ_p = 0.5": 0.5, f"σ_p = {cal.pca_sigma:.2f} (calibrated)": cal.pca_sigma,
            "σ_p = 20": 20.0}
RAW = float(np.sqrt(X.shape[1]))  # no row of pixels in [0, 1] is longer: the mean sees the raw rows
exact = DPPCA(pca_dim=PCA_DIM, noise_multiplier=None, mean_clip_norm=RAW).fit(X, None, rng=0)
rows, images = [], []
for label, sigma in settings.items():
    led = PrivacyLedger()
    pca = DPPCA(pca_dim=PCA_DIM, noise_multiplier=sigma, mean_clip_norm=RAW).fit(X, led if sigma else None, rng=1)
    overlap = np.linalg.norm(pca.components_.T @ exact.components_) ** 2 / PCA_DIM
    rows.append({"setting": label, "ε of this release alone": accountant.epsilon(led, DELTA) if sigma else np.inf,
                 "subspace recovered": overlap})
    v = pca.components_.T  # (PCA_DIM, 64): one component per row
    images.append(0.5 + 0.5 * v / np.abs(v).max(axis=1, keepdims=True))

grid = Dataset(name="components", features=np.concatenate(images), image_shape=(8, 8))
fig = image_grid_figure(grid, n=grid.n, ncols=PCA_DIM)
fig.update_layout(title="Principal components, one row per noise level (top: no noise, bottom: σ_p = 20)")
fig.show()
pd.DataFrame(rows).round(3)

# %% [markdown]
# The first components (the broad strokes) survive moderate noise; the later ones, whose eigenvalues
# are small, drown first. Now the real thing: DP-PCA with the calibrated noise, recorded in the
# **ledger** — the list of every noisy release made from the private data. The noisy data mean used
# for centring is a release too, so it is in the ledger as well.
#
# One detail matters a lot: each image is centred on that mean *first* and only then scaled to
# length 1 (`mean_clip_norm=RAW`). The official code does it the other way round, and the centred
# unit-length images then keep only about a third of their length: the same noise swamps a signal
# three times weaker. (`P3GM` also averages 2 × 2 pixel blocks of larger images before the PCA —
# less noise per direction — but 8 × 8 digits are too small for that.)

# %%
ledger = PrivacyLedger()
pca = DPPCA(pca_dim=PCA_DIM, noise_multiplier=cal.pca_sigma, mean_noise_multiplier=cal.mean_sigma,
            mean_clip_norm=RAW)
pca.fit(X, ledger, rng=1)
codes = pca.transform(X)  # the encoder mean: (n, 10) codes, each of length ≤ 1
pd.DataFrame([r.to_dict() for r in ledger])

# %% [markdown]
# ## Phase 2 — DP-EM: a mixture of Gaussians on the codes
#
# EM alternates two steps: assign each code softly to the components, then re-estimate each
# component's weight, mean and variance from those assignments. DP-EM adds noise to the three sums
# behind these estimates at every iteration (2K + 1 releases per iteration for K components).
#
# The pictures show the codes (projected to 2-D, coloured by digit) with each component drawn as an
# ellipse holding about 95 % of its mass: first plain EM, then DP-EM with the calibrated σ_e.

# %%
from dpcore.figures import latent_figure
from dpcore.privacy.dp_em import DPEM

plain_em = DPEM(n_components=COMPONENTS, n_iter=EM_ITERS, noise_multiplier=None).fit(codes, None, rng=2)
em = DPEM(n_components=COMPONENTS, n_iter=EM_ITERS, noise_multiplier=cal.em_sigma).fit(codes, ledger, rng=2)


def prior_of(m):
    return {"weights": m.weights_, "means": m.means_, "variances": m.variances_}


for title, m in (("plain EM (no privacy)", plain_em), (f"DP-EM, σ_e = {cal.em_sigma:.1f}", em)):
    fig = latent_figure(codes, train.labels, prior=prior_of(m), label_names=train.label_names)
    fig.update_layout(title=f"Codes and mixture prior: {title}")
    fig.show()
print("DP-EM weights:", np.round(em.weights_, 3))

# %% [markdown]
# The noisy mixture is coarser: with few images, the noise on each sum is comparable to the sum
# itself, so components merge, shift or get little weight. That is the price of privacy on small
# data. Sampling from it still produces codes that lie where the data is.
#
# ## A free warm-up for the decoder
#
# Before touching the private images again, we can already teach the decoder something. DP-PCA gave
# us directions, so for a code z drawn from the DP-EM mixture, "z times the components plus the mean"
# is a rough image (the PCA reconstruction). Training the decoder to reproduce these rough images uses
# only things we have already released, so it costs **no** privacy: that is *post-processing*, and DP
# is immune to it. (The images were shrunk to length 1 for DP-PCA, so we rescale each rough image so
# that its brightest pixel is 1.)

# %%
from dpcore.figures import loss_curves_figure

gen = torch.Generator().manual_seed(0)
encoder_logvar = nn.Sequential(nn.Linear(64, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, PCA_DIM))
decoder = nn.Sequential(nn.Linear(PCA_DIM, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 64))
bce = nn.functional.binary_cross_entropy_with_logits

components = torch.as_tensor(pca.components_, dtype=torch.float32)
center = torch.as_tensor(pca.mean_, dtype=torch.float32)
warm_opt = torch.optim.Adam(decoder.parameters(), lr=1e-3)
warm_rng = np.random.default_rng(4)
events = []
for step in range(1, WARMUP + 1):
    z = torch.as_tensor(em.clip(em.sample(BATCH, warm_rng)[0]), dtype=torch.float32)
    rough = z @ components.T + center
    rough = (rough / rough.amax(1, keepdim=True).clamp_min(1e-3)).clamp(0, 1)
    loss = bce(decoder(z), rough, reduction="none").sum(1).mean()
    warm_opt.zero_grad()
    loss.backward()
    warm_opt.step()
    events.append({"phase": "warmup", "step": step, "losses": {"recon": loss.item()}})
print(f"ε spent so far: {accountant.epsilon(ledger, DELTA):.3f} (unchanged by the warm-up)")

# %% [markdown]
# ## Phase 3 — the decoder, trained with DP-SGD
#
# The encoder mean is fixed: it is the DP-PCA projection. What is left to learn is a small network
# for the encoder's *variance* and the decoder. The loss is the usual VAE loss (reconstruction error
# plus a KL term), with the DP-EM mixture as the prior.
#
# DP-SGD changes three things in ordinary training:
# * each image joins a batch independently with probability q = B / n (Poisson sampling);
# * each image's gradient is clipped to length C = 1, so no one image can push the model far;
# * Gaussian noise with std σ_s · C is added to the summed gradients.
#
# `dpcore.privacy.dpsgd.DPSGD` does all three in `step(per_example_losses)` and records each step in
# the ledger.

# %%
from dpcore.privacy.dpsgd import DPSGD

with torch.no_grad():  # start the encoder variance at the prior's (uses released numbers only)
    encoder_logvar[-1].weight.mul_(0.01)
    encoder_logvar[-1].bias.fill_(float(np.log(em.variances_.mean())))
model = nn.ModuleDict({"encoder_logvar": encoder_logvar, "decoder": decoder})
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
dp = DPSGD(model, optimizer, noise_multiplier=cal.sgd_sigma, max_grad_norm=1.0, n=train.n,
           expected_batch_size=BATCH, ledger=ledger, generator=gen)

Xt, Zt = torch.as_tensor(X), torch.as_tensor(codes, dtype=torch.float32)
w, mu_k, var_k = (torch.as_tensor(a, dtype=torch.float32) for a in (em.weights_, em.means_, em.variances_))


def log_normal(z, mean, var):  # log N(z; mean, diag var), summed over dimensions
    return -0.5 * (torch.log(2 * torch.pi * var) + (z - mean) ** 2 / var).sum(-1)


def per_example_loss(idx):
    x, mean = Xt[idx], Zt[idx]
    logvar = encoder_logvar(x).clamp(-12, 6)
    z = mean + torch.exp(0.5 * logvar) * torch.randn(mean.shape, generator=gen)
    recon = bce(decoder(z), x, reduction="none").sum(1)
    log_prior = torch.logsumexp(torch.log(w) + log_normal(z[:, None], mu_k, var_k), dim=1)
    kl = log_normal(z, mean, torch.exp(logvar)) - log_prior  # one-sample estimate of KL(q ‖ prior)
    return recon, kl


steps = int(np.ceil(EPOCHS * train.n / BATCH))  # what the calibration assumed
for step in range(WARMUP + 1, WARMUP + steps + 1):
    idx = dp.poisson_batch()
    recon, kl = per_example_loss(idx)
    dp.step(recon + kl)
    events.append({"phase": "sgd", "step": step, "losses": {"recon": recon.mean().item(),
                                                            "kl": kl.mean().item()}})
print(f"{steps} DP-SGD steps, ε spent so far: {accountant.epsilon(ledger, DELTA):.3f}")
loss_curves_figure(events, title="Decoder warm-up (free) and DP-SGD (private), per image").show()

# %% [markdown]
# ## Sampling new digits
#
# To make a new image we draw a code from the DP-EM mixture and run it through the decoder. This
# touches no private data, so it costs no privacy: everything we use is already a noisy release
# (DP-PCA, DP-EM) or was trained with DP-SGD. You can draw as many samples as you like.

# %%
z, _ = em.sample(48, rng=3)
with torch.no_grad():
    pixels = torch.sigmoid(decoder(torch.as_tensor(z, dtype=torch.float32))).numpy()
samples = Dataset(name="hand-built P3GM", features=pixels, image_shape=(8, 8))
image_grid_figure(samples, n=48, ncols=12).show()

# %% [markdown]
# ## Where did the budget go?
#
# The ledger now lists every release: the mean, the covariance, the EM statistics and the DP-SGD
# steps. The accountant composes them (Rényi DP) and converts the total to (ε, δ). The bars show each
# phase's share of the budget; the total should match the budget we asked for.

# %%
from dpcore.figures import budget_share_figure

print(f"asked for ε = {EPSILON}, the accountant says ε = {accountant.epsilon(ledger, DELTA):.3f}")
print("the ledger holds exactly the releases the calibration planned:", list(ledger) == list(cal.ledger))
budget_share_figure(ledger, DELTA).show()

# %% [markdown]
# ## The same model in one call
#
# `dpcore.models.P3GM` runs the same three phases (plus a free decoder warm-up on samples of the
# DP-PCA/DP-EM model, which is post-processing). It also appends the one-hot label to every image, so
# its samples come with labels. A callback receives one event per step, which is how the workbench
# draws its live loss curves.

# %%
from dpcore.models.p3gm import P3GM

p3gm = P3GM(epsilon=EPSILON, delta=DELTA, encoder_share=ENCODER_SHARE, pca_dim=PCA_DIM,
            components=COMPONENTS, em_iters=EM_ITERS, hidden=HIDDEN, epochs=EPOCHS, batch_size=BATCH,
            warmup_steps=WARMUP, seed=0)
fit_events = []
result = p3gm.fit(train, callback=lambda e: fit_events.append(e.to_dict()))
print(f"ε = {result.epsilon:.3f} (δ = {result.delta:g}), {result.steps} steps in {result.seconds:.1f} s")
loss_curves_figure(fit_events).show()

# %%
synthetic = p3gm.sample(48, seed=0)
print("labels of the samples:", synthetic.labels[:12], "...")
image_grid_figure(synthetic, n=48, ncols=12).show()
latent_figure(p3gm.encode(test), test.labels, prior=p3gm.latent_prior(), label_names=test.label_names).show()

# %% [markdown]
# ## Try it yourself
#
# * Set `EPSILON = 1` and rerun everything: which phase suffers most?
# * Move `ENCODER_SHARE` between 0.1 and 0.7: a sharper encoder or a better decoder?
# * Use `COMPONENTS = 1` (the paper's choice) or 10 and compare the DP-EM pictures.
