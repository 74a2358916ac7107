"""DOMIAS (van Breugel et al., AISTATS 2023, Eq. 2): score(x) = p_synthetic(x) / p_reference(x).

Why a density ratio: a generator that overfits puts *more* mass near its training rows than the
data distribution does; dividing by a reference density (held-out real rows, never targets) removes
"x lies in a dense region", which fools plain distance attacks. Both densities are Gaussian KDEs in
a whitened PCA space fitted on the reference rows (≤ 10 dimensions: KDE needs few), bandwidth by
Scott's rule h = n^(−1/(k+4)); the log-sum-exp is streamed over chunks of rows.
"""
from __future__ import annotations

import math
import time

import numpy as np
import torch

from dpcore.evaluate.attacks.result import attack_result
from dpcore.evaluate.attacks.targets import Targets, pca_basis, project

KDE_DIM = 10


def kde_logpdf(x: np.ndarray, rows: np.ndarray, bandwidth: float, chunk: int = 8192) -> np.ndarray:
    """log (1/n) Σ_j N(x; row_j, h² I), for every x (streamed over chunks of rows)."""
    t = torch.as_tensor(x, dtype=torch.float64)
    k = t.shape[1]
    acc = torch.full((t.shape[0],), -math.inf, dtype=torch.float64)
    for i in range(0, len(rows), chunk):
        s = torch.as_tensor(rows[i:i + chunk], dtype=torch.float64)
        d2 = torch.cdist(t, s) ** 2
        acc = torch.logaddexp(acc, torch.logsumexp(-d2 / (2 * bandwidth ** 2), dim=1))
    norm = math.log(max(1, len(rows))) + 0.5 * k * math.log(2 * math.pi * bandwidth ** 2)
    return (acc - norm).numpy()


def scott_bandwidth(n: int, k: int) -> float:
    return float(max(n, 2) ** (-1.0 / (k + 4)))


def domias(targets: Targets, synthetic, *, delta=0.0, confidence=0.95, dim: int = KDE_DIM,
           max_rows: int = 20_000, seed: int = 0):
    """DOMIAS with KDEs; at most `max_rows` synthetic rows (seeded subset) enter the density."""
    t0 = time.perf_counter()
    ref = targets.reference.features
    mean, comp = pca_basis(ref, min(dim, ref.shape[1], max(1, len(ref) - 1)), whiten=True)
    syn = synthetic.features
    if len(syn) > max_rows:
        syn = syn[np.sort(np.random.default_rng(seed).choice(len(syn), max_rows, replace=False))]
    t, s, r = project(targets.features(), mean, comp), project(syn, mean, comp), project(ref, mean, comp)
    k = t.shape[1]
    log_syn = kde_logpdf(t, s, scott_bandwidth(len(s), k))
    log_ref = kde_logpdf(t, r, scott_bandwidth(len(r), k))
    mem, non = targets.split(log_syn - log_ref)
    return attack_result("domias", "synthetic rows + reference real rows", mem, non, delta=delta,
                         confidence=confidence, seconds=time.perf_counter() - t0,
                         notes=[f"Gaussian KDE in a whitened PCA-{k} space ({len(s)} synthetic, "
                                f"{len(r)} reference rows)"],
                         member_index=targets.member_index, non_member_index=targets.non_member_index)
