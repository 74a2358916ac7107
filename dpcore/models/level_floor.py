"""Every declared level of a category, a boolean or the target generated at least at the noise's share.

Why: a level whose true count is under the noise of its 1-way measurement (σ of a 1-way count is
20–40 at ε = 1 on a table of a thousand rows) often comes out of the graphical model with share 0,
so the synthetic rows never take it: the column reads as collapsed, and a downstream classifier
never sees the level. Such a level is not known to be absent — its noisy count cannot
tell it from zero — so it is kept at one noise standard deviation of share, σ/ñ, or 1/k of the rows
when that is smaller (the rule P3GM's categorical heads follow, `label_shares.level_shares`).

How: after the rows are drawn, a level with fewer rows than ⌈floor·n⌉ takes the rows it lacks from
the attribute's largest level, picked uniformly (public randomness), which keeps every other column
of those rows. Post-processing of released values (σ, ñ) and of the model's draws: no privacy cost.
Ordered attributes (numeric bins, integers) are left alone: an empty tail level is data, not a
declared category. So are missing-value flags: a declared schema makes every column nullable by
default, and a floor on the flags put ~4 % missing values into every column of a table that has
none (measured: MST, the wide bench table with its types declared, ε = 1); a flag's "missing" level
is a possibility the schema allows, not a level the data is known to use.
"""
from __future__ import annotations

import math

import numpy as np

from dpcore.errors import RunError

FLOOR_KINDS = ("onehot", "bool", "label")  # declared levels: categories, boolean columns, the target


def floor_kind(attr) -> str:
    """An attribute's kind for the floor: a missing-value flag (a "bool" attribute whose encoder role
    is "missing", see Discretizer.for_dataset's names) is "missing", which has none."""
    return "missing" if attr.kind == "bool" and attr.name.endswith(":missing") else attr.kind


def level_floors(one_ways: dict[str, tuple[np.ndarray, float]], kinds: dict[str, str],
                 total: float) -> dict[str, float]:
    """{attribute: floor share} = min(σ / ñ, 1 / levels) for the attributes of `FLOOR_KINDS`, from
    each one's noisy 1-way counts and their noise std (`one_ways`, as `_Context.noisy_one_ways`)."""
    out = {}
    if not total > 0:
        return out
    for name, (y, sigma) in one_ways.items():
        k = int(np.size(y))
        if kinds.get(name) in FLOOR_KINDS and k >= 2 and sigma > 0 and math.isfinite(sigma):
            out[name] = float(min(sigma / total, 1.0 / k))
    return out


def raise_to_floor(codes: dict[str, np.ndarray], sizes: dict[str, int], floors: dict[str, float],
                   rng: np.random.Generator) -> dict[str, np.ndarray]:
    """`codes` with every level of each floored attribute taking at least ⌈floor·n⌉ rows, the
    missing rows moved from the attribute's largest level (a new array; the input is not changed)."""
    out = dict(codes)
    for name, floor in floors.items():
        c = np.array(codes[name], np.int64, copy=True)
        n, k = c.size, int(sizes[name])
        need = math.ceil(floor * n - 1e-9) if n else 0
        if need <= 0 or k < 2:
            continue
        counts = np.bincount(c, minlength=k)
        for level in np.flatnonzero(counts < need):
            donor = int(np.argmax(counts))
            take = min(need - int(counts[level]), int(counts[donor]) - need)
            if take <= 0:
                continue
            rows = rng.choice(np.flatnonzero(c == donor), take, replace=False)
            c[rows] = level
            counts[level] += take
            counts[donor] -= take
        out[name] = c
    return out


def missing_scores(one_ways: dict[str, tuple[np.ndarray, float]], kinds: dict[str, str]) -> dict[str, float]:
    """{missing flag: its noisy count of missing rows in noise stds}, from `one_ways` (released)."""
    return {name: float(np.asarray(y, np.float64)[1] / sigma) for name, (y, sigma) in one_ways.items()
            if kinds.get(name) == "missing" and np.size(y) == 2 and sigma > 0 and math.isfinite(sigma)}


def drop_unseen_missing(codes: dict[str, np.ndarray], scores: dict[str, float],
                        sigmas: float) -> dict[str, np.ndarray]:
    """`codes` with every missing flag whose score is under `sigmas` set to "present" in every row.

    Why: a declared schema makes every column nullable, and a flag's noisy count of missing rows,
    projected onto counts ≥ 0, gives a complete column about σ·0.4 missing rows (0.08–1.8 % of the
    values on average, 5.4 % in the worst column, of the wide bench table with its types declared, ε = 1,
    MST): missing values the data never had,
    in every column. A count under `sigmas`·σ cannot be told from zero, so the column is generated
    complete; a column missing in fewer rows than that loses its missing values instead (the cost).
    Post-processing of released counts: no privacy cost."""
    out = dict(codes)
    for name, z in scores.items():
        if z < sigmas and name in out:
            out[name] = np.zeros_like(np.asarray(out[name]))
    return out


def floors_from_json(value, attrs, where: str) -> dict[str, float]:
    """Saved `level_floors`: shares in [0, 1] of attributes that have a floor (a run folder is data)."""
    return _numbers_from_json(value, attrs, where, "level_floors", "level floor", FLOOR_KINDS,
                              lambda v: 0.0 <= v <= 1.0)


def scores_from_json(value, attrs, where: str) -> dict[str, float]:
    """Saved `missing_scores`: finite numbers of missing-value flags."""
    return _numbers_from_json(value, attrs, where, "missing_scores", "missing score", ("missing",), math.isfinite)


def _numbers_from_json(value, attrs, where: str, key: str, what: str, kinds, valid) -> dict[str, float]:
    kind = {a.name: floor_kind(a) for a in attrs}
    if not isinstance(value, dict):
        raise RunError(f"{where}: '{key}' must map attributes to numbers")
    for name, v in value.items():
        if kind.get(name) not in kinds or not isinstance(v, (int, float)) or isinstance(v, bool) or not valid(v):
            raise RunError(f"{where}: bad {what} of {str(name)[:40]!r}")
    return {name: float(v) for name, v in value.items()}
