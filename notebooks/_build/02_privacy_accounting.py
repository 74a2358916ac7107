# %% [markdown]
# # Privacy accounting: where ε comes from
#
# A DP model never "has" an ε built in. It makes a list of noisy releases from the private data — the
# **ledger** — and an **accountant** adds up what each release reveals. This notebook walks through
# that bookkeeping, from one noisy number to a whole P3GM training run:
#
# 1. the Gaussian mechanism: add noise, and check that the noise really is what the ledger claims;
# 2. Rényi DP (RDP): a way of measuring privacy loss that makes composition a simple sum;
# 3. how P3GM splits one budget between its encoder and its decoder;
# 4. why the RDP accountant gives a smaller ε than adding up the parts one after another;
# 5. the tight and the classic conversion from RDP to (ε, δ);
# 6. a table of ε, noise and training length to plan a run.
#
# Nothing here trains a model, so it all runs in seconds.

# %%
import os

import numpy as np
import pandas as pd
import plotly.io as pio
from IPython.display import display

from dpcore.privacy import accountant
from dpcore.privacy.ledger import MechanismRecord, PrivacyLedger

SMALL = os.environ.get("DPCORE_SMALL") == "1"  # set by the test suite: fewer repetitions
# Interactive figures in JupyterLab, Notebook 7 and VS Code (plotly.js embedded for classic Jupyter);
# the committed copy was built with PLOTLY_RENDERER set to add a PNG of each figure for GitHub.
pio.renderers.default = "json" if SMALL else os.environ.get("PLOTLY_RENDERER", "plotly_mimetype+notebook")
DELTA = 1e-5

# %% [markdown]
# ## 1. The Gaussian mechanism
#
# Suppose we want to publish how many of 1,000 people have some property. Adding or removing one
# person changes that count by at most 1: the **sensitivity** Δ is 1. The Gaussian mechanism
# publishes the count plus noise with standard deviation σ·Δ, where σ is the **noise multiplier**.
#
# Let us release the same count many times and measure the noise we actually got. Each release is
# also written into a ledger, just as DP-PCA and DP-EM do.

# %%
from dpcore.privacy.mechanisms import gaussian_mechanism

rng = np.random.default_rng(0)
true_count = 412.0
repeats = 2_000 if SMALL else 20_000
rows = []
for sigma in (0.5, 1.0, 2.0, 5.0):
    ledger = PrivacyLedger()
    noisy = np.array([gaussian_mechanism(true_count, 1.0, sigma, rng, ledger=ledger, name="count")
                      for _ in range(repeats)])
    rec = list(ledger)[0]
    rows.append({"σ": sigma, "claimed noise std σ·Δ": sigma * rec.sensitivity,
                 "measured noise std": noisy.std(), "mean error": noisy.mean() - true_count,
                 "releases in the ledger": rec.steps})
pd.DataFrame(rows).round(3)

# %% [markdown]
# The measured noise matches the claim, and the ledger merged the identical releases into one record
# with a step count. Now: how much does **one** release at noise multiplier σ reveal? The accountant
# answers with ε at our δ = 10⁻⁵ (δ is the small probability that the guarantee fails). Bigger σ,
# smaller ε: more noise, more privacy.

# %%
def one_release(sigma, steps=1):
    led = PrivacyLedger()
    led.add(MechanismRecord("release", "gaussian", sigma, steps=steps))
    return led


pd.DataFrame([{"σ": s, "ε (one release)": accountant.epsilon(one_release(s), DELTA),
               "ε (10 releases)": accountant.epsilon(one_release(s, 10), DELTA)}
              for s in (0.5, 1, 2, 5, 10, 50)]).round(3)

# %% [markdown]
# A single (ε, δ) pair hides that a mechanism satisfies a whole curve of them: smaller ε with larger
# δ and vice versa. The **privacy profile** δ(ε) below comes from the PLD accountant
# (dp-accounting); the star is the (ε, δ) we report.

# %%
from dpcore.figures import pld_figure

pld_figure(one_release(2.0), DELTA).show()

# %% [markdown]
# ## 2. Rényi DP and composition
#
# Rényi DP measures privacy loss at an **order** α > 1 (a dial between "average" and "worst case").
# For the Gaussian mechanism it is simply R(α) = α / (2σ²). Its best property: running several
# mechanisms on the same data **adds** their RDP curves, order by order. So the accountant keeps one
# curve per ledger record, sums them, and converts the sum into (ε, δ) at the end, picking the best α.

# %%
orders = np.array([1.5, 2, 4, 8, 16, 32, 64])
one, ten = one_release(2.0), one_release(2.0, steps=10)
table = pd.DataFrame({"α": orders, "R(α), one release": accountant.rdp(one, orders),
                      "R(α), ten releases": accountant.rdp(ten, orders)})
table["ten / one"] = table["R(α), ten releases"] / table["R(α), one release"]
table.round(4)

# %% [markdown]
# Converting to (ε, δ): for each order, ε(α) = R(α) + (a term that depends on α and δ); the
# accountant takes the smallest. The table shows the candidates for the ten releases; the marked row
# is the one the accountant picks.

# %%
candidates = accountant.rdp(ten, orders) + accountant.conversion_offset(orders, DELTA)
eps, best_order = accountant.epsilon_and_order(ten, DELTA, orders=orders)
pd.DataFrame({"α": orders, "ε(α) candidate": candidates,
              "picked": np.where(orders == best_order, "←", "")}).round(3)

# %% [markdown]
# ### Subsampling helps
#
# DP-SGD does not look at every example at each step: each example joins a batch with probability q.
# An example that is not in the batch is not at risk in that step, so each step reveals much less.
# Compare 1,000 noisy steps over everyone with 1,000 steps over a 1 % sample.

# %%
def sgd_ledger(q, sigma, steps):
    led = PrivacyLedger()
    led.add(MechanismRecord("dp-sgd", "subsampled_gaussian" if q < 1 else "gaussian", sigma,
                            sampling_rate=q, steps=steps))
    return led


pd.DataFrame([{"sampling rate q": q, "σ": 1.0, "steps": 1000,
               "ε": accountant.epsilon(sgd_ledger(q, 1.0, 1000), DELTA)} for q in (1.0, 0.1, 0.01)]).round(3)

# %% [markdown]
# ## 3. Splitting the budget in P3GM
#
# P3GM spends its budget three ways: DP-PCA, DP-EM (together, the *encoder share*) and DP-SGD (the
# rest). `calibrate_p3gm` takes the total (ε, δ) and the share, and solves for the noise multipliers.
# Here with the paper's MNIST setting (63,000 rows, batch 300, 4 epochs, one mixture component, 20 EM
# iterations) at ε = 1. A larger encoder share means a cleaner PCA and mixture (smaller σ_p, σ_e) but
# noisier gradients (larger σ_s). Every row still adds up to ε = 1.

# %%
N, BATCH, EPOCHS, K, T = 63_000, 300, 4, 1, 20
shares = (0.1, 0.3, 0.5, 0.7) if SMALL else (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9)
cals = {s: accountant.calibrate_p3gm(1.0, DELTA, s, N, BATCH, EPOCHS, components=K, em_iters=T) for s in shares}
pd.DataFrame([{"encoder share": s, "σ_p (PCA)": c.pca_sigma, "σ_e (EM)": c.em_sigma,
               "σ_s (DP-SGD)": c.sgd_sigma, "ε (accountant)": c.epsilon} for s, c in cals.items()]).round(3)

# %% [markdown]
# Where the budget goes at share 0.3: each record's share of the total RDP, at the order α where the
# final ε is attained.

# %%
from dpcore.figures import budget_share_figure

budget_share_figure(cals[0.3].ledger, DELTA).show()

# %% [markdown]
# ## 4. RDP composition vs the paper's sequential baseline
#
# The P3GM paper compares against a simpler analysis: give each part its own ε (the Gaussian
# mechanism bound for PCA, zero-concentrated DP for EM, the moments accountant for DP-SGD) and add
# the three ε's. Adding ε's is always allowed, but it is loose: RDP composes the parts *before*
# converting to (ε, δ), and pays the conversion only once.
#
# This is the official configuration of the paper (σ_p = 5, σ_e = 100, σ_s = 1.4; no private mean,
# as in the official code). The paper reports about 1.0 with RDP and about 2.2 for the baseline.

# %%
from dpcore.figures import composition_figure
from dpcore.privacy.budget import composition_table

official = accountant.p3gm_ledger(N, BATCH, EPOCHS, pca_sigma=5.0, em_sigma=100.0, em_iters=T,
                                  components=K, sgd_sigma=1.4, center="none")
display(pd.DataFrame([r.to_dict() for r in official]))
rows = composition_table(official, DELTA)
composition_figure(official, DELTA, rows=rows).show()
pd.DataFrame(rows).round(3)

# %% [markdown]
# ## 5. Tight vs classic conversion
#
# Two formulas turn an RDP curve into (ε, δ). The classic one (Mironov 2017) is
# ε = R(α) + log(1/δ)/(α − 1); the tight one (Balle et al. 2020) subtracts a little more and is
# always smaller. The table shows both for DP-SGD with the MNIST schedule at several noise levels,
# next to the PLD accountant, which is close to exact.

# %%
q, steps = accountant.sgd_schedule(N, BATCH, EPOCHS)
sigmas = (0.8, 1.4, 3.0) if SMALL else (0.6, 0.8, 1.0, 1.4, 2.0, 3.0, 5.0)
conv = []
for s in sigmas:
    led = sgd_ledger(q, s, steps)
    conv.append({"σ_s": s, "classic": accountant.classic_epsilon(led, DELTA),
                 "tight (reported)": accountant.epsilon(led, DELTA), "PLD": accountant.pld_epsilon(led, DELTA)})
conv = pd.DataFrame(conv)
conv["classic / tight"] = conv["classic"] / conv["tight (reported)"]
conv.round(3)

# %% [markdown]
# ## 6. Planning a run: ε, noise and epochs
#
# Training longer means more noisy steps, so at a fixed ε every step needs more noise. The table
# gives the DP-SGD noise multiplier σ_s needed for a target ε and a number of epochs (MNIST size,
# batch 300). Read it as: "if I want ε = 1 and 10 epochs, my gradients get noise σ_s = ...".

# %%
def sigma_for(epsilon, epochs, n=N, batch=BATCH, delta=DELTA):
    q, steps = accountant.sgd_schedule(n, batch, epochs)
    return accountant.calibrate_sgd(epsilon, delta, q, steps)


eps_grid = (0.5, 1, 4) if SMALL else (0.25, 0.5, 1, 2, 4, 8)
epoch_grid = (1, 4) if SMALL else (1, 4, 10, 30)
plan = pd.DataFrame([{"ε": e, "epochs": E, "σ_s": sigma_for(e, E)} for e in eps_grid for E in epoch_grid])
plan.pivot(index="ε", columns="epochs", values="σ_s").round(3)

# %% [markdown]
# And the other way round: the ε that a given noise level and training length cost.

# %%
def epsilon_for(sigma, epochs, n=N, batch=BATCH, delta=DELTA):
    q, steps = accountant.sgd_schedule(n, batch, epochs)
    return accountant.epsilon(sgd_ledger(q, sigma, steps), delta)


sigma_grid = (0.8, 1.4) if SMALL else (0.6, 0.8, 1.0, 1.4, 2.0, 4.0)
cost = pd.DataFrame([{"σ_s": s, "epochs": E, "ε": epsilon_for(s, E)} for s in sigma_grid for E in epoch_grid])
cost.pivot(index="σ_s", columns="epochs", values="ε").round(3)

# %% [markdown]
# If `ipywidgets` is installed, the cell below adds sliders for the same calculation (it is optional;
# the tables above are all you need).

# %%
try:
    import ipywidgets as widgets
except ImportError:
    widgets = None
if widgets is not None and not SMALL:
    widgets.interact(lambda epsilon=1.0, epochs=4: f"σ_s = {sigma_for(epsilon, epochs):.3f}",
                     epsilon=widgets.FloatLogSlider(value=1.0, base=10, min=-1, max=1.3, step=0.05),
                     epochs=widgets.IntSlider(value=4, min=1, max=50))
else:
    print("ipywidgets is not installed: use sigma_for(epsilon, epochs) and epsilon_for(sigma, epochs)")

# %% [markdown]
# ## Things to try
#
# * In section 3, set ε = 0.5 or 4: how do the best noise levels move?
# * In section 4, give the official configuration 10 epochs: which analysis grows faster?
# * Why does subsampling help less when σ is small? Try `sgd_ledger(0.01, 0.5, 1000)`.
