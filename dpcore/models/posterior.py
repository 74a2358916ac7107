"""Posterior re-sampling: one synthetic row per record, decoded from z drawn given that record.

Why: the L-VAE certificate (dpcore.models.lvae) is about this release — z ~ p(z | x) for a record x
with the decoder fixed, then x̃ = μ̄(z) — not about prior draws. It is also where a vanilla VAE
shows memorisation most plainly: the re-sample of an outlier the VAE has memorised is the outlier.

Two samplers for p(z | x) ∝ p(z) · p(x | z):
- `mcmc_steps = 0`: z ~ q(z | x), the encoder's Gaussian (an approximation of the posterior; the
  certificate does not cover it);
- `mcmc_steps = T > 0`: T steps of independence Metropolis–Hastings with q(z | x) as the proposal,
  started from a q draw: accept z' with probability min(1, π(z') q(z) / (π(z) q(z'))), π the
  unnormalised posterior. Its stationary law is the exact posterior; T finite is an approximation
  whose quality the returned acceptance rate indicates (near 1: q ≈ p).

Not covered by ε, ever: the encoder reads every raw record at release time, outside any ledger,
and the result has one row per training record. So DP models are refused (their output would
pass for a DP sample), and the result is marked (`meta["covered_by_epsilon"] = False`, its name).
Finite-T Metropolis–Hastings is not the exact posterior sampler the L-VAE certificate is about.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import torch

from dpcore.data.dataset import Dataset
from dpcore.errors import InvalidParameter, check_int
from dpcore.models.mixture import diag_gauss_logpdf, mog_logpdf
from dpcore.models.rows import split_output


def posterior_resample(model, data: Dataset, *, mcmc_steps: int = 0, seed: int | None = None,
                       chunk: int = 4096) -> tuple[Dataset, dict]:
    """Re-sample every record of `data` through `model` (a fitted VAE, DP-VAE or L-VAE).

    Returns (re-sampled rows in the original schema, marked not covered by ε; {"acceptance": mean
    MH acceptance rate or None, "mcmc_steps": T}). The row order matches `data`.
    """
    if getattr(model, "private", True):
        raise InvalidParameter(f"posterior re-sampling reads every raw record outside the ledger (not covered "
                               f"by ε): refused for the DP model {model.name}; use a VAE or L-VAE")
    model._check_fitted()
    mcmc_steps = check_int("mcmc_steps", mcmc_steps, minimum=0)
    if model.encoder is None or not hasattr(model, "latent_decoder"):
        raise InvalidParameter(f"{model.name} has no variational encoder: posterior re-sampling needs "
                               "a VAE, DP-VAE or L-VAE")
    X = model._rows(data)
    dev = model.device
    gen = torch.Generator(device="cpu").manual_seed(0 if seed is None else int(seed))
    dec = model.latent_decoder()
    prior = {k: torch.as_tensor(v, device=dev) for k, v in model.mog.items()}
    nll = getattr(model, "posterior_nll", model._recon)  # L-VAE: the certified sampler's likelihood

    def log_target(z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return (mog_logpdf(z, prior["weights"], prior["means"], prior["variances"])
                - nll(dec(z), x))

    outs, accepted, proposals = [], 0.0, 0
    with torch.no_grad():
        for i in range(0, len(X), chunk):
            x = torch.as_tensor(X[i:i + chunk], device=dev)
            mu, logvar = model.encoder(x)
            std = torch.exp(0.5 * logvar)

            def draw(mu=mu, std=std) -> torch.Tensor:  # this chunk's posterior
                return mu + std * torch.randn(mu.shape, generator=gen).to(dev)

            z = draw()
            if mcmc_steps:
                lp, lq = log_target(z, x), diag_gauss_logpdf(z, mu, logvar)
                for _ in range(mcmc_steps):
                    zp = draw()
                    lpp, lqp = log_target(zp, x), diag_gauss_logpdf(zp, mu, logvar)
                    u = torch.rand(len(z), generator=gen).to(dev)
                    take = torch.log(u) < (lpp - lp) + (lq - lqp)
                    z = torch.where(take[:, None], zp, z)
                    lp, lq = torch.where(take, lpp, lp), torch.where(take, lqp, lq)
                    accepted += float(take.sum())
                    proposals += len(take)
            outs.append(model.output_mean(dec(z)).cpu().numpy())
    rows = np.concatenate(outs) if outs else np.zeros((0, model.width), np.float32)
    feats, labels = split_output(rows, model.n_features, model.n_classes)
    info = {"mcmc_steps": mcmc_steps, "acceptance": accepted / proposals if proposals else None}
    out = model.template.with_features(feats, labels)
    meta = {**out.meta, "release": "posterior_resamples", "covered_by_epsilon": False}
    return dataclasses.replace(out, name=f"{out.name} (posterior re-samples, not covered by ε)", meta=meta), info
