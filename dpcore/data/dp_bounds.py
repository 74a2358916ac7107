"""Numeric scaling bounds estimated under DP (the ledgered alternative to declaring them).

Why: min/max of private rows are somebody's values. Here each undeclared numeric column gets a
histogram over a PUBLIC grid of signed powers of two, every count gets Gaussian noise, and the
bounds are the outer edges of the bins whose noisy count clears ~3.7 noise standard deviations
(set so that no empty bin of the grid clears it by noise, with 99 % probability).
One row changes one count per column, so the L2 sensitivity of all k histograms together is √k:
one Gaussian mechanism with noise multiplier σ, recorded in the ledger for the accountant.

A date column (days since 1970, `dpcore.data.dates`) gets a public grid of calendar years instead:
on powers of two its days fall in [2^14, 2^15), i.e. bounds 2014-11-10 to 2059-09-18 for any table
of recent dates, and synthetic dates spread over 45 years. The year grid (1900–2100) is as public and
data-independent as the powers of two, and one row still moves one count per column.

Category lists are NOT estimated here (an observed-category list cannot be released by a Gaussian
histogram without a public domain); columns with data-derived categories keep origin "data" and
the Dataset stays marked "preprocessing not covered by ε".
"""
from __future__ import annotations

import math
from dataclasses import replace
from statistics import NormalDist

import numpy as np
import pandas as pd

from dpcore.data.schema import Schema, cast_frame
from dpcore.errors import DataError, check_positive

_POW = 2.0 ** np.arange(-10, 41)
GRID = np.concatenate([-_POW[::-1], [0.0], _POW])  # public bin edges, independent of the data
# dates: 1 January of every year 1900–2100, as days since 1970-01-01 (the date columns' unit)
DATE_GRID = (np.arange("1900", "2101", dtype="datetime64[Y]").astype("datetime64[D]")
             - np.datetime64("1970-01-01", "D")).astype(float)
# A bin is kept when its noisy count clears τ = z·σ·√k. Nearly every bin of a grid is empty for any
# table, so z is set for the whole grid: the chance that any empty bin clears τ by noise alone is
# FALSE_KEEP (a function of the public grid only). At a flat 3 sds one of the ~100 power-of-two bins
# did in ~13 % of releases per column, one of the ~200 year bins in ~24 %, and the bounds stretched
# to it: the journey's bmi got an upper bound of 6.9e10, its 2023–2024 dates one in 2053.
FALSE_KEEP = 0.01


def _keep_sds(grid: np.ndarray) -> float:
    """z such that no empty bin of `grid` clears z noise sds, with probability 1 − FALSE_KEEP."""
    return NormalDist().inv_cdf(1 - FALSE_KEEP / (len(grid) - 1))


THRESHOLD_SDS = _keep_sds(GRID)  # 3.72
DATE_THRESHOLD_SDS = _keep_sds(DATE_GRID)  # 3.89


def privatise_bounds(frame: pd.DataFrame, schema: Schema, *, noise_multiplier: float = 10.0,
                     seed: int | np.random.Generator | None = None, columns: list[str] | None = None
                     ) -> tuple[Schema, dict | None]:
    """Replace data-derived bounds of numeric/integer columns by noisy-histogram bounds.

    Returns the new schema (those columns get origin "dp") and the ledger record as a dict in
    `MechanismRecord.to_dict()` form (None when no column needed it); dpcore.data sits below
    dpcore.privacy, so models turn it into a record with `MechanismRecord.from_dict`. `noise_multiplier` σ: noise std is σ·√k on every count.
    seed: a run passes its secret noise stream (`NoiseSource.numpy("dp-bounds")`, dpcore.runs.store);
    None draws the noise from fresh OS entropy (a secret 128-bit SeedSequence); an int, or a
    generator that does not declare itself secret (`dp_noise_kind`), makes the record say
    "seeded" (not private: debugging only).
    """
    sigma = check_positive("noise_multiplier", noise_multiplier)
    todo = [c for c in schema.feature_columns if c.is_continuous and c.origin == "data"
            and (columns is None or c.name in columns)]
    if not todo:
        return schema, None
    sub = Schema([replace(c, origin="declared") for c in todo])
    canon = cast_frame(frame[[c.name for c in todo]], sub)
    k = len(todo)
    sensitivity = math.sqrt(k)
    rng = np.random.default_rng(seed)
    new = schema
    for spec in todo:
        grid, z = (GRID, THRESHOLD_SDS) if spec.date_format is None else (DATE_GRID, DATE_THRESHOLD_SDS)
        tau = z * sigma * sensitivity
        nbins = len(grid) - 1
        x = canon[spec.name].to_numpy(dtype=float, na_value=np.nan)
        x = x[np.isfinite(x)]
        bins = np.clip(np.searchsorted(grid, x, side="right") - 1, 0, nbins - 1)
        noisy = np.bincount(bins, minlength=nbins) + rng.normal(0.0, sigma * sensitivity, nbins)
        kept = np.flatnonzero(noisy > tau)
        if kept.size == 0:
            raise DataError(f"too few rows to estimate the bounds of column {spec.name!r} privately "
                            f"(noise_multiplier={sigma}); declare its bounds instead")
        lo, hi = float(grid[kept[0]]), float(grid[kept[-1] + 1])
        if spec.kind == "integer":
            lo, hi = math.floor(lo), math.ceil(hi)
        # the precision read off the rows goes with the raw bounds: it is not privatised
        new = new.with_column(spec.name, lower=lo, upper=hi, origin="dp", decimals=None)
    record = {"name": "preprocessing: noisy bounds", "mechanism": "gaussian", "noise_multiplier": sigma,
              "sampling_rate": 1.0, "steps": 1, "sensitivity": sensitivity,
              "noise": _noise_kind(seed), "partition": "all"}  # read before the split: every row
    return new, record


def _noise_kind(seed) -> str:
    """"secret" for fresh OS entropy or a generator dpcore.privacy made secret, else "seeded"."""
    if seed is None:
        return "secret"
    return "secret" if getattr(seed, "dp_noise_kind", None) == "secret" else "seeded"
