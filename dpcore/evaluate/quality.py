"""A one-number quality summary of synthetic rows against real ones, with its parts.

Why: a mean TVD per column and per pair is two numbers in "lower is better" units that a data owner
has to put together; SDMetrics' quality report (and the tools built on it) gives one score in
[0, 1], higher is better, made of two properties. This is that report on the workbench's own
marginals (`dpcore.evaluate.marginals`, numerics in equal-width bins of the declared bounds plus
their atoms), so the score and the TVDs beside it can never disagree:

- column shapes: the mean over columns of 1 − the column's 1-way TVD (SDMetrics' TVComplement;
  for numerics it uses a KS statistic, here the binned TVD);
- column pairs: the mean over column pairs of 1 − the pair's 2-way TVD (SDMetrics'
  ContingencySimilarity on 5 bins per numeric; the pairs are the `two_way_tvd` matrix's, at most
  its `max_columns` highest-entropy columns);
- score: the mean of the two (of shapes alone when there is no pair).

Scores against real rows are an evaluation for whoever holds the real data: not covered by ε,
never part of a shareable release.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from dpcore.data.dataset import Dataset


def quality_summary(one_way: dict[str, float], matrix: pd.DataFrame) -> dict:
    """{"score", "column_shapes", "column_pairs" (NaN without pairs), "shapes" (per column),
    "pairs" (how many)} from 1-way TVDs per column and a 2-way TVD matrix (NaN diagonal)."""
    tvd1 = np.fromiter(one_way.values(), dtype=np.float64)
    shapes = float(1.0 - tvd1.mean()) if tvd1.size else float("nan")
    z = np.asarray(matrix, dtype=np.float64)
    upper = z[np.triu_indices(len(z), k=1)] if z.ndim == 2 and len(z) > 1 else np.zeros(0)
    upper = upper[np.isfinite(upper)]
    pairs = float(1.0 - upper.mean()) if upper.size else float("nan")
    parts = [v for v in (shapes, pairs) if np.isfinite(v)]
    return {"score": float(np.mean(parts)) if parts else float("nan"), "column_shapes": shapes,
            "column_pairs": pairs, "shapes": {str(k): 1.0 - float(v) for k, v in one_way.items()},
            "pairs": int(upper.size)}


def quality_report(real: Dataset, synthetic: Dataset, max_columns: int = 20) -> dict:
    """`quality_summary` of `synthetic` against `real` (see the module docstring)."""
    from dpcore.evaluate.marginals import one_way_tvd, two_way_tvd

    return quality_summary(one_way_tvd(real, synthetic), two_way_tvd(real, synthetic, max_columns=max_columns)[1])
