"""The target's pairs measured on a coarse grid: each column's levels grouped into a few groups,
one noisy count per (group, class).

Why: on a small wide table the budget per measurement is tiny (issue 29's table: 1 176 rows,
31 columns, ε = 1 gives σ ≈ 34 per cell), while the minority class spreads ~200 rows over the
column's levels, so a pair measured cell by cell has about as much noise as count — and after
domain compression a merged level's count carries σ·√(levels merged) (income: 115 rows of the
minority class against noise 145). Summing the cells *before* the noise is added gives each group
noise σ whatever its size: a few well-measured groups tell the model how the target moves with the
column, which the fine cells could not.

Privacy: one row changes one cell of the pair, so one group's count, by 1 (L2 sensitivity 1, the
same Gaussian record as any marginal). The groups are cut from the model's 1-way estimates, which
come from measurements already released (post-processing), never from the rows.
"""
from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True, eq=False)
class GroupedQuery:
    """mbi query: the marginal's cells summed into groups, `matrix` (groups × cells) of 0/1.

    mbi traces queries as static values; like its WeightedQuery, equality is identity."""

    matrix: np.ndarray

    def __call__(self, factor):
        return self.matrix @ factor.datavector()

    def op_norm_sq(self) -> float:
        """‖A‖² of a 0/1 matrix with disjoint rows: the largest group."""
        return float(self.matrix.sum(axis=1).max())

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other


def level_groups_by_mass(estimate: np.ndarray, ordered: bool, groups: int) -> np.ndarray:
    """The group of each level, at most `groups` of them, from a column's estimated 1-way counts.

    Ordered levels (numeric bins, integers, in value order): runs of neighbouring levels of about
    equal estimated mass (cuts at the estimated quantiles), so a threshold effect keeps its side.
    Unordered levels: the `groups` − 1 largest alone, the rest together."""
    k = estimate.size
    if k <= groups:
        return np.arange(k)
    p = np.clip(np.asarray(estimate, np.float64), 0.0, None)
    p = p / p.sum() if p.sum() > 0 else np.full(k, 1.0 / k)
    if ordered:
        mid = np.cumsum(p) - p / 2.0  # each level's position in the estimated distribution
        code = np.minimum((mid * groups).astype(np.int64), groups - 1)
        return np.unique(code, return_inverse=True)[1].astype(np.int64)  # no empty groups
    top = np.argsort(-p, kind="stable")[: groups - 1]
    code = np.full(k, groups - 1, np.int64)
    code[top] = np.arange(groups - 1)
    return code


def pair_query(groups_of_levels: np.ndarray, classes: int) -> GroupedQuery:
    """The query of the pair (column, target), cells in mbi's order (column major, target minor)."""
    g = np.asarray(groups_of_levels, np.int64)
    cells = g.size * classes
    rows = (g[:, None] * classes + np.arange(classes)[None, :]).ravel()
    matrix = np.zeros((int(g.max() + 1) * classes, cells))
    matrix[rows, np.arange(cells)] = 1.0
    return GroupedQuery(matrix)


def shrink_to_independence(y: np.ndarray, classes: int, sigma: float) -> tuple[np.ndarray, float]:
    """A grouped pair's noisy counts (groups × classes, class minor) pulled toward the independence
    table of their own noisy margins by the positive-part James–Stein factor λ = max(0, 1 − df·σ²/‖D‖²),
    D the deviation from independence and df = (groups − 1)(classes − 1); returns (counts, λ).

    Why: at ε = 1 a column's link to the target is about as large as the noise on it (median noise /
    count 0.5 per group), so the many columns that do not move the target get spurious links as
    strong as the real ones, and the synthetic rows teach a classifier those. Shrinking each link by
    how far it stands above its noise keeps the strong links and damps the ones the noise alone
    explains. The margins (each group's and each class's noisy total) are unchanged. Post-processing
    of a released measurement (its counts and σ): no privacy cost."""
    t = np.asarray(y, np.float64).reshape(-1, classes)
    total = t.sum()
    if t.shape[0] < 2 or classes < 2 or not total > 0:
        return np.asarray(y, np.float64), 1.0
    dev = t - np.outer(t.sum(axis=1), t.sum(axis=0)) / total
    df = (t.shape[0] - 1) * (classes - 1)
    ss = float((dev ** 2).sum())
    lam = max(0.0, 1.0 - df * sigma ** 2 / ss) if ss > 0 else 0.0
    return (t - (1.0 - lam) * dev).ravel(), lam
