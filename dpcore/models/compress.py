"""Domain compression for AIM and MST: which levels the noisy 1-way counts merge, the compressed
domain's shape, drawing original levels back from merged ones, and the saved form of the merge map.

Why a module of its own: compression is post-processing of released 1-way counts with its own
rules (the MST paper's compress_domain, extended to ordered columns) and its own persisted state
(`merged`), separate from how marginals are measured and estimated (marginal_base).
"""
from __future__ import annotations

import numpy as np

from dpcore.errors import RunError
from dpcore.models.marginal_data import Discretizer


def level_groups(y: np.ndarray, sigma: float, ordered: bool, sigmas: float = 3.0) -> np.ndarray | None:
    """The compressed code of each level from its noisy count y (noise σ), or None to keep them all.

    Unordered levels (categories, the target): those under `sigmas`·σ become one level (the MST
    paper's rule). Ordered levels (numeric bins, integers): a level over `sigmas`·σ stays alone;
    thinner consecutive levels join a run until the run's noisy sum reaches `sigmas`·σ·√(run
    length) (the noise of a sum of k cells is σ√k) or a well-measured level comes, so a
    column with few rows per level becomes a coarser histogram of neighbouring values, and an empty
    tail (wide declared bounds) one run, instead of one bucket mixing both ends.
    """
    if ordered:
        code, g, acc, k = np.zeros(y.size, np.int64), 0, 0.0, 0
        for i, v in enumerate(y):
            if v >= sigmas * sigma and k:  # a level measured well on its own ends the open run
                g, acc, k = g + 1, 0.0, 0
            code[i], acc, k = g, acc + v, k + 1
            if acc >= sigmas * sigma * np.sqrt(k):
                g, acc, k = g + 1, 0.0, 0
        return None if int(code.max()) + 1 == y.size else code
    rare = y < sigmas * sigma
    if rare.sum() < 2:
        return None
    code = np.full(y.size, int((~rare).sum()), np.int64)
    code[~rare] = np.arange(int((~rare).sum()))
    return code


def compressed_shape(disc: Discretizer, merged: dict[str, list[int]]) -> list[int]:
    """Each attribute's size once merged: the number of its codes."""
    return [max(merged[a.name]) + 1 if a.name in merged else a.size for a in disc.attrs]


def expand(codes: dict[str, np.ndarray], merged: dict[str, list[int]], rng: np.random.Generator,
           atoms: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Compressed codes → original levels: a code of several levels becomes one of them drawn
    uniformly (the MST paper's reverse mapping; public randomness). An atom (a point mass,
    `atoms[name]` marks its levels) merged with bins is not drawn: a width-zero level the noise could
    not tell apart from its neighbours would otherwise get a whole bin's share of exact values."""
    out = dict(codes)
    for name, mapping in merged.items():
        mapping = np.asarray(mapping, np.int64)
        groups = int(mapping.max()) + 1
        mask = (atoms or {}).get(name)
        drop = np.zeros(mapping.size, bool)  # levels never drawn: atoms sharing a code with a bin
        if mask is not None and mask.any():
            drop = mask & (np.bincount(mapping, weights=(~mask).astype(float), minlength=groups)[mapping] > 0)
        key = mapping * 2 + drop  # levels grouped by code, the dropped ones after the others
        order = np.argsort(key, kind="stable")
        starts = np.searchsorted(key[order], np.arange(groups) * 2)
        sizes = np.bincount(mapping[~drop], minlength=groups)
        c = np.asarray(codes[name], np.int64)
        pick = starts[c] + np.floor(rng.random(c.size) * sizes[c]).astype(np.int64)
        out[name] = order[pick]
    return out


def merged_from_json(value, disc: Discretizer, where: str) -> dict[str, list[int]]:
    sizes = {a.name: a.size for a in disc.attrs}
    if not isinstance(value, dict):
        raise RunError(f"{where}: 'merged' must map attributes to lists of codes")
    out = {}
    for name, codes in value.items():
        if (name not in sizes or not isinstance(codes, list) or len(codes) != sizes[name]
                or not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < sizes[name] for v in codes)
                or set(codes) != set(range(max(codes) + 1))):
            raise RunError(f"{where}: bad merged levels of {str(name)[:40]!r}")
        out[name] = codes
    return out
