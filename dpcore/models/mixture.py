"""Mixture-of-Gaussians maths: P3GM's latent prior (and the standard normal of the VAEs, K = 1)."""
from __future__ import annotations

import math

import numpy as np
import torch

LOG_2PI = math.log(2 * math.pi)


def diag_gauss_logpdf(z: torch.Tensor, mean: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
    """log N(z; mean, diag exp(logvar)) summed over the last axis."""
    return -0.5 * (LOG_2PI + logvar + (z - mean) ** 2 * torch.exp(-logvar)).sum(-1)


def mog_logpdf(z: torch.Tensor, weights: torch.Tensor, means: torch.Tensor,
               variances: torch.Tensor) -> torch.Tensor:
    """log Σ_k π_k N(z; μ_k, diag σ²_k) for z (b, d) → (b,) (the P3GM prior, Eq. of the ELBO)."""
    logv = torch.log(variances)                                   # (K, d)
    diff = z[:, None, :] - means[None]                            # (b, K, d)
    comp = -0.5 * (LOG_2PI + logv[None] + diff ** 2 / variances[None]).sum(-1)
    return torch.logsumexp(comp + torch.log(weights)[None], dim=1)


def clip_codes(Z: np.ndarray, radius: float | None) -> np.ndarray:
    """Rows of Z scaled onto the L2 ball of `radius` (what P3GM's DP-EM fits; its encoder emits the same)."""
    if radius is None or not math.isfinite(radius):
        return Z.astype(np.float32)
    norms = np.linalg.norm(Z, axis=1, keepdims=True)
    return (Z * np.minimum(1.0, radius / np.maximum(norms, 1e-12))).astype(np.float32)


def mog_sample(n: int, weights: np.ndarray, means: np.ndarray, variances: np.ndarray,
               rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """z ~ Σ_k π_k N(μ_k, diag σ²_k): (z (n, d) float32, component index (n,))."""
    w = np.asarray(weights, dtype=np.float64)
    w = np.clip(w, 0, None)
    w = w / w.sum()
    comp = rng.choice(len(w), size=n, p=w)
    eps = rng.standard_normal((n, means.shape[1]))
    z = means[comp] + np.sqrt(variances[comp]) * eps
    return z.astype(np.float32), comp
