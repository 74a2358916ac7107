# %% [markdown]
# # Attacks and trade-offs: what can an attacker learn from the samples?
#
# A DP guarantee is a promise about *any* attacker. Here we play one: the **Monte Carlo membership
# inference attack** (Hilprecht et al., 2019). The attacker gets a pile of synthetic images and a
# target image, and guesses whether the target was in the training data. The idea is simple: if many
# synthetic images lie very close to the target, the generator has probably seen it.
#
# We attack a non-private VAE (ε = ∞) and P3GM at a few values of ε, and compare:
# * how well the attack does (its **trade-off curve**) with what the DP guarantee allows (the
#   **f-DP bound**);
# * what happens to a single unusual person: we add one **outlier** to the training data;
# * how useful the synthetic data is at each ε (the **privacy–utility curve**).

# %%
import os

import numpy as np
import pandas as pd
import plotly.io as pio
from IPython.display import display

SMALL = os.environ.get("DPCORE_SMALL") == "1"  # set by the test suite: tiny models, fewer samples
# Interactive figures in JupyterLab, Notebook 7 and VS Code (plotly.js embedded for classic Jupyter);
# the committed copy was built with PLOTLY_RENDERER set to add a PNG of each figure for GitHub.
pio.renderers.default = "json" if SMALL else os.environ.get("PLOTLY_RENDERER", "plotly_mimetype+notebook")

# %% [markdown]
# ## The data, with one outlier
#
# `load_split("digits", outlier=True)` adds one extra training image in which every pixel is fully
# inked (the dark square in the last position below). Nobody else looks like that, so a generator
# that reproduces it has clearly memorised one person. The test split holds the **non-members**: real
# digits the models never see.

# %%
from dpcore.data import load_split
from dpcore.figures import image_grid_figure

train, test = load_split("digits", seed=0, outlier=True)
print(f"{train.n} members (training rows, the outlier is row {train.outlier_index}), {test.n} non-members")
show = train.subset(np.r_[np.arange(11), train.outlier_index])
image_grid_figure(show, n=show.n, ncols=12).update_layout(title="Training images; last: the outlier").show()

# %% [markdown]
# ## The models
#
# A non-private VAE, trained for a long time (the way a model ends up memorising its data), and P3GM
# at several budgets. For P3GM, ε is the accountant's number for everything the model did with the
# training data.

# %%
from dpcore.models import make_model

DELTA = 1e-5
EPSILONS = (1.0, 10.0) if SMALL else (1.0, 10.0, 100.0)
common = dict(hidden=64 if SMALL else 256, batch_size=100, seed=0)
N_SYNTHETIC = 1_000 if SMALL else 10_000

# The VAE trains long (1,000 epochs, about two minutes on two cores): long enough to memorise.
models = {"VAE (ε = ∞)": make_model("vae", latent_dim=10, epochs=1 if SMALL else 1000, **common)}
for eps in EPSILONS:
    models[f"P3GM ε = {eps:g}"] = make_model("p3gm", epsilon=eps, delta=DELTA, pca_dim=10, epochs=1 if SMALL else 20,
                                             warmup_steps=10 if SMALL else 300, **common)
fits, synthetic = {}, {}
for name, model in models.items():
    fits[name] = model.fit(train)
    synthetic[name] = model.sample(N_SYNTHETIC, seed=1)
    print(f"{name:>16}: ε = {fits[name].epsilon:.3g}, {fits[name].seconds:.1f} s")

# %%
for name, syn in synthetic.items():
    image_grid_figure(syn, n=24, ncols=12).update_layout(title=f"{name}: synthetic samples").show()

# %% [markdown]
# ## The Monte Carlo attack
#
# For each target (members and non-members, the same number of each; the outlier is always among the
# members) the attack counts the synthetic images within a radius r of the target, and calls the
# targets with the highest counts "members". Sliding the threshold gives a curve of two error rates:
# * **type I error α**: calling a non-member a member (false positive rate);
# * **type II error β**: missing a member (1 − true positive rate).
#
# Guessing at random gives the diagonal β = 1 − α. A DP guarantee says the curve of *every* attack
# stays above a bound curve; below, the dashed curves are those bounds for each P3GM model, computed
# from its ledger (the PLD envelope: the tightest curve its (ε, δ(ε)) profile implies).

# %%
from dpcore.evaluate import bound_curves
from dpcore.evaluate.attacks import run_attacks
from dpcore.figures import mia_tradeoff_figure

# the workbench's attack ladder, its Monte Carlo attack only: as many targets per side as half the
# test rows (the other half is the reference set the calibrated attacks of the ladder may use)
attacks = {name: run_attacks(syn, train, test, attacks=["monte-carlo"], n_targets=test.n, seed=0,
                             delta=DELTA if models[name].private else 0.0)[0][0]
           for name, syn in synthetic.items()}
bounds = []
for name, model in models.items():
    if model.private:
        curves = bound_curves(model.privacy_ledger(), DELTA)
        bounds += [(f"bound for {name}", a, b) for label, a, b in curves if label == "PLD envelope"]
mia_tradeoff_figure(list(attacks.items()), bounds).show()

pd.DataFrame([{"model": name, "ε (accountant)": fits[name].epsilon, "attack AUC": r.auc,
               "ε lower bound from the attack": r.eps_lower_bound,
               "outlier rank (1 = most suspicious)": r.outlier_rank} for name, r in attacks.items()]).round(3)

# %% [markdown]
# How to read this: an AUC of 0.5 means the attack is no better than a coin. The "ε lower bound"
# column turns the attack's best point into the smallest ε consistent with it (with a 95 % confidence
# margin). It must stay below the accountant's ε; if it did not, the privacy claim would be wrong.
# With a few hundred targets the attack is weak, so these lower bounds are far below the guarantee:
# the guarantee covers the worst case, while this is one particular, fairly simple attacker.

# %% [markdown]
# ## An attacker who holds the model
#
# The attack above sees only synthetic images, and finds nothing. Whoever gets the *model* itself
# can do more: the **loss attack** scores each target by how well the model reconstructs it, and a
# model that memorised its training images reconstructs them better than unseen ones. This is the
# leak the Story page shows: a long-trained non-private model gives its members away, while P3GM's
# bound holds whatever the attacker sees.

# %%
white_box = {name: run_attacks(synthetic[name], train, test, model=models[name], attacks=["loss"],
                               n_targets=test.n, seed=0, delta=DELTA if models[name].private else 0.0)[0][0]
             for name in models}
pd.DataFrame([{"model": name, "ε (accountant)": fits[name].epsilon, "loss attack AUC": r.auc,
               "ε lower bound from the attack": r.eps_lower_bound} for name, r in white_box.items()]).round(3)

# %% [markdown]
# Read it the same way: above 0.5, members are easier to spot than non-members. On these 1,600
# digits the gap is small even for the non-private VAE — a few hundred targets cannot show a leak
# of a few percent — and whatever an attack finds against a P3GM model must stay within its ε
# (the lower-bound column). The Story page plants canaries, rare images an attacker knows to look
# for, and its audit shows the non-private model giving them away far more clearly.

# %% [markdown]
# ## The outlier
#
# Averages over many targets hide what happens to one unusual person. Two questions for each model:
# * **Do its samples reproduce the outlier?** This is what an attacker sees. We show the synthetic
#   images closest to the outlier, and compare their distance with how far a real, unseen digit
#   typically is from its nearest training digit (a distance that small would mean "reproduced").
# * **Did it learn the outlier at all?** We encode the outlier and decode it back. A model can
#   remember an image well and still almost never produce it when sampling, if it parks that image
#   in a corner of its latent space that the prior rarely visits.

# %%
from dpcore.data import Dataset
from dpcore.figures import mia_scores_figure

outlier_row = train.subset([train.outlier_index])
outlier = outlier_row.features[0]
# for scale: how far a real test digit typically is from its nearest training digit
typical = np.median(np.linalg.norm(test.features[:, None] - train.features[None], axis=2).min(axis=1))
rows, recons = [], []
for name, syn in synthetic.items():
    dist = np.linalg.norm(syn.features - outlier, axis=1)
    closest = syn.subset(np.argsort(dist)[:12])
    image_grid_figure(closest, n=12, ncols=12).update_layout(
        title=f"{name}: the 12 samples closest to the outlier").show()
    model = models[name]
    recon = np.clip(model.decode(model.encode(outlier_row))[:, :train.n_features], 0, 1)
    recons.append(recon)
    rows.append({"model": name, "closest sample": dist.min(), "reproduced?": dist.min() < typical,
                 "reconstruction error": np.linalg.norm(recon[0] - outlier),
                 "outlier rank in the attack": attacks[name].outlier_rank})
grid = Dataset(name="reconstructions", features=np.concatenate([outlier[None], *recons]), image_shape=(8, 8))
image_grid_figure(grid, n=grid.n, ncols=grid.n).update_layout(
    title="The outlier, then each model's reconstruction of it: " + ", ".join(synthetic)).show()
print(f"typical distance of a real unseen digit to its nearest training digit: {typical:.2f}; "
      f"ranks go from 1 (most suspicious) to {2 * attacks[name].n_targets}")
display(pd.DataFrame(rows).round(2))
mia_scores_figure(attacks["VAE (ε = ∞)"], title="VAE (ε = ∞): attack scores, members vs non-members").show()

# %% [markdown]
# What to look for: a model that memorised the outlier has samples at a distance comparable to the
# typical one, and the attack ranks the outlier near the top. DP forbids exactly that: with a small ε
# no single image can change the samples much, so P3GM can neither reproduce nor reconstruct it well.
# The non-private VAE has no such limit, but it may still not *sample* the outlier: a standard VAE
# tends to reconstruct a strange image from a latent code far from the prior's centre, which
# sampling rarely visits. "Not reproduced in 10,000 samples" is not a privacy guarantee — only the
# DP bound is: a better attacker (one that looks for codes far from the centre, say) could find it.

# %% [markdown]
# ## The privacy–utility curve
#
# Privacy is only half the story: the synthetic images should also be useful. We train a small
# classifier on each synthetic set and test it on the real test digits ("train on synthetic, test on
# real"). The dashed line is the non-private VAE, the dotted one the same classifier trained on the
# real images; the curve shows P3GM's accuracy as ε grows. The second plot shows the attack's AUC for
# the same models.

# %%
from dpcore.evaluate import utility_scores
from dpcore.figures import privacy_utility_figure

real = utility_scores(train, test, seed=0).mean["accuracy"]  # the same classifier trained on real data
results = []
for name, syn in synthetic.items():
    u = utility_scores(syn, test, seed=0)
    results.append({"model": name.split(" ")[0], "epsilon": fits[name].epsilon,
                    "utility": u.mean["accuracy"], "reference": real, "auc": attacks[name].auc})
privacy_utility_figure(results, metric="utility").update_layout(
    yaxis_title="accuracy (train on synthetic, test on real)").show()
privacy_utility_figure([{k: v for k, v in r.items() if k != "reference"} for r in results], metric="auc"
                       ).update_layout(title="Attack success across ε", yaxis_title="attack AUC (0.5 = guessing)").show()
pd.DataFrame(results).round(3)

# %% [markdown]
# ## Things to try
#
# * Train the VAE for only 100 epochs: does it still reconstruct the outlier? Is the attack's AUC different?
# * Attack with `features="pca40"` or `radius=("percentile", 1)`: is the attack sensitive to them?
# * Add `make_model("dp-vae", epsilon=10)` (a VAE trained entirely with DP-SGD) to the list.
