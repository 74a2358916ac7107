"""Latent views (numbers): the 2-D projection of codes and the prior's components as ellipses.

Why: P3GM's whole idea is a MoG prior fitted (with DP-EM) to the PCA codes; a teacher wants to show
whether the components sit where the data is. PCA is linear, so a component N(μ, Σ) projects exactly
to N(Wᵀ(μ − m), WᵀΣW) and can be drawn as an ellipse; UMAP is not, so only component means are
shown (transformed like any other point). The figure is `dpcore.figures.latent.latent_figure`.
"""
from __future__ import annotations

import numpy as np

MAX_POINTS = 5000


def pca_projection(codes: np.ndarray):
    """(mean, W) of a 2-D PCA of `codes` (W: d × 2, components sorted by variance)."""
    x = np.asarray(codes, dtype=np.float64)
    mean = x.mean(0)
    if x.shape[1] <= 2:
        w = np.eye(x.shape[1], 2)
        return mean, w
    _, _, vt = np.linalg.svd(x - mean, full_matrices=False)
    return mean, vt[:2].T


def prior_covariances(prior: dict, d: int) -> np.ndarray:
    if "covariances" in prior and prior["covariances"] is not None:
        cov = np.asarray(prior["covariances"], dtype=np.float64)
        if cov.ndim == 2:  # (K, d) given under the other name: diagonal variances
            return np.stack([np.diag(v) for v in cov])
        return cov
    var = np.asarray(prior["variances"], dtype=np.float64)
    if var.ndim == 1:
        var = np.broadcast_to(var, (np.asarray(prior["means"]).shape[0], d))
    return np.stack([np.diag(v) for v in var])


def ellipse_points(mean2: np.ndarray, cov2: np.ndarray, n_std: float = 2.0, n: int = 60) -> np.ndarray:
    """Points (n, 2) on the n_std-sigma contour of a 2-D Gaussian."""
    vals, vecs = np.linalg.eigh(cov2)
    t = np.linspace(0, 2 * np.pi, n)
    circle = np.stack([np.cos(t), np.sin(t)], 1)
    return mean2 + n_std * circle * np.sqrt(np.maximum(vals, 0)) @ vecs.T


def subsample_index(n: int, rng) -> np.ndarray:
    return np.sort(rng.choice(n, MAX_POINTS, replace=False)) if n > MAX_POINTS else np.arange(n)


