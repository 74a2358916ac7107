"""Decoding continuous model outputs into flags and levels that keep the outputs' own shares.

Why: a model that writes a row as numbers in [0, 1] (a flat decoder's means, a GAN's sigmoids)
gives a missing-value flag or a one-hot block as soft values. A fixed 0.5 threshold turns a flag
whose values are 0.1 everywhere into "never missing" and one at 0.6 into "always missing"; an
argmax gives every row the most likely level, so a level that is second everywhere vanishes and the
first is inflated. The outputs' column means are the model's own estimate of the shares, so the
decoding keeps them: round(mean·n) rows get the flag (those with the largest values), and each
level gets its share of rows, the rows that prefer it most. Exact 0/1 values (real rows, per-column
heads' draws, marginal models) decode as before. Post-processing of the model's output: it reads
nothing but that output, so it costs no privacy.
"""
from __future__ import annotations

import numpy as np

from dpcore.errors import InvalidParameter


def quota_counts(shares: np.ndarray, n: int) -> np.ndarray:
    """Integer counts summing to n, proportional to `shares` (largest remainders get the rest)."""
    shares = np.asarray(shares, np.float64)
    if shares.ndim != 1 or not len(shares) or np.any(shares < 0) or not shares.sum() > 0:
        raise InvalidParameter("shares must be a non-empty vector of non-negative numbers")
    exact = shares / shares.sum() * n
    counts = np.floor(exact).astype(np.int64)
    rest = int(n - counts.sum())
    counts[np.argsort(-(exact - counts), kind="stable")[:rest]] += 1
    return counts


def flag_rows(values: np.ndarray) -> np.ndarray:
    """Which rows carry a 0/1 flag given as values in [0, 1]: the round(mean·n) largest (ties in
    row order). A flag whose mean share rounds to no row is never set."""
    v = np.clip(np.asarray(values, np.float64), 0.0, 1.0)
    out = np.zeros(len(v), dtype=bool)
    k = int(np.round(v.sum())) if len(v) else 0
    if k:
        out[np.argsort(-v, kind="stable")[:k]] = True
    return out


def level_codes(block: np.ndarray) -> np.ndarray:
    """One level per row of a one-hot block given as values: level j gets its share of the rows
    (the block's clipped column means, normalised; `quota_counts`), filled by the rows whose value
    for j is largest. Rounds of proposals: every row still open proposes its preferred level among
    those with places left, each level keeps its best proposers up to its places; at most one round
    per level. A block with no positive value takes the argmax."""
    x = np.clip(np.asarray(block, np.float64), 0.0, None)
    n, k = x.shape
    if n == 0 or k == 0 or not x.sum() > 0:
        return np.argmax(block, axis=1) if n and k else np.zeros(n, np.int64)
    places = quota_counts(x.mean(0), n)
    codes = np.full(n, -1, np.int64)
    open_rows = np.arange(n)
    while len(open_rows):
        pref = np.where(places > 0, x[open_rows], -1.0)  # a full level takes no one
        choice = np.argmax(pref, axis=1)
        for j in np.unique(choice):
            rows = open_rows[choice == j]
            take = rows[np.argsort(-x[rows, j], kind="stable")[:places[j]]]
            codes[take] = j
            places[j] -= len(take)
        open_rows = open_rows[codes[open_rows] < 0]
    return codes
