"""P3GM's decoder warm-up on tables: the DP-PCA reconstruction is spread back to the data's width
(`warmup_scale`), from released values only, without touching the privacy of the run."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpcore.data.csv import dataset_from_frame
from dpcore.models import make_model
from dpcore.models.warmup import COLUMN_FACTOR, released_row_norm
from dpcore.privacy.accountant import epsilon as accountant_epsilon

SMALL = dict(pca_dim=6, hidden=32, epochs=1, batch_size=50, warmup_steps=5)


def _table(n=400, seed=0):
    """A wide-ish mixed table: a numeric spread over its declared range, categoricals, a target."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "amount": np.round(rng.uniform(0, 100, n), 2).astype(str),
        "a": rng.choice(list("pqrs"), n), "b": rng.choice(list("xyz"), n), "c": rng.choice(list("uvw"), n),
        "y": rng.choice(["0", "1"], n)})
    return dataset_from_frame(frame, target="y", types={"amount": "numeric"}, bounds={"amount": (0.0, 100.0)})


def _fit(data, name="p3gm", stop_after_warmup=False, **kw):
    model = make_model(name, **{**SMALL, **kw})
    stop = (lambda e: e.phase in ("pca", "em", "warmup")) if stop_after_warmup else None
    model.fit(data, callback=stop)
    return model


def test_the_row_norm_from_exact_statistics_is_the_rows_norm():
    """On exact statistics (what DP-PCA releases, without its noise) the estimate is the rows'
    root-mean-square ‖x − m‖; the bound √Σ m(1 − m) is larger (numerics vary less than 0/1 columns)."""
    from dpcore.models.heads import TabularHeads
    from dpcore.models.rows import model_matrix
    from dpcore.privacy.mechanisms import clip_rows

    data = _table()
    X, _ = model_matrix(data)
    m = X.mean(0)
    heads = TabularHeads.for_data(data.encoder, data.n_features, data.n_classes, bins=50, atoms=True)
    norm = released_row_norm(heads, m, (clip_rows(X - m, 1.0) ** 2).mean(0))
    true = math.sqrt(((X - m) ** 2).sum(1).mean())
    assert norm == pytest.approx(true, rel=0.05)
    assert norm < math.sqrt(np.sum(m * (1 - m)))
    assert released_row_norm(heads, m, None) == pytest.approx(math.sqrt(np.sum(m * (1 - m))))


def test_the_spread_and_column_factors_come_from_released_values_within_their_bounds():
    data = _table()
    model = _fit(data)
    mean = model.pca["mean"].astype(np.float64)  # the released noisy mean
    spread = model.calibration["warmup_spread"]
    assert spread == pytest.approx(released_row_norm(model.heads, mean, model.pca_.noisy_variance_), rel=1e-6)
    m = np.clip(mean, 0, 1)
    assert 1.0 <= spread <= max(1.0, math.sqrt(np.sum(m * (1 - m))))
    factors = np.array(model.calibration["warmup_column_factors"])
    numeric = model.heads.heads[0]  # "amount", the first column
    assert COLUMN_FACTOR[0] <= factors[0] <= COLUMN_FACTOR[1]
    assert (factors[numeric.stop:] == 1.0).all()
    assert _fit(data, warmup_scale=1.0).calibration["warmup_spread"] == 1.0
    assert _fit(data, warmup_scale=2.5).calibration["warmup_spread"] == 2.5
    assert "warmup_column_factors" not in _fit(data, warmup_columns=False).calibration


def test_the_spread_costs_no_privacy():
    """The same mechanisms on the rows, and ε is the accountant's of the ledger, at the budget.
    (The noise multipliers differ between two fits: the row count is released with fresh noise.)"""
    data = _table()
    names = {}
    for scale in (1.0, None):
        model = make_model("p3gm", **{**SMALL, "warmup_scale": scale})
        result = model.fit(data)
        ledger = model.privacy_ledger()
        names[scale] = [(r.name, r.sensitivity) for r in ledger.records]
        assert result.epsilon == pytest.approx(accountant_epsilon(ledger, result.delta))
        assert result.epsilon == pytest.approx(1.0, abs=1e-3)
    assert names[1.0] == names[None]
    assert {"dataset-size", "dp-pca", "dp-pca-mean", "dp-sgd"} <= {n for n, _ in names[None]}


def test_the_warmed_up_decoder_is_as_wide_as_the_data_not_a_fraction_of_it():
    """PGM (exact PCA, no noise) stopped after the warm-up: with the spread and the residual the
    numeric column's standard deviation is near the real one; unscaled it is a fraction of it (the
    cut tails), and with too few components to hold the column, the residual is what keeps it."""
    data = _table()
    real = data.to_frame()["amount"].astype(float).std()
    std = {}
    for key, kw in {"unscaled": dict(warmup_scale=1.0, warmup_residual=False, warmup_columns=False), "default": {},
                    "3 components": dict(pca_dim=3),
                    "3 components, no residual": dict(pca_dim=3, warmup_residual=False, warmup_columns=False),
                    }.items():
        model = _fit(data, "pgm", stop_after_warmup=True, **{"pca_dim": 12, "hidden": 32, "warmup_steps": 200, **kw})
        std[key] = model.sample(2000, seed=1).to_frame()["amount"].astype(float).std() / real
    assert std["unscaled"] < 0.7, std
    assert 0.75 < std["default"] < 1.3 and 0.75 < std["3 components"] < 1.3, std
    assert std["3 components"] > std["3 components, no residual"] + 0.15, std


def test_the_residual_is_on_numeric_columns_only_and_bounded_by_the_released_diagonal():
    data = _table()
    model = _fit(data)
    targets = model._warmup_targets()
    res = targets.residual
    numeric = model.heads.heads[0]  # "amount", the first column
    assert (res[numeric.stop:] == 0).all() and (res >= 0).all()
    assert res[0] <= targets.spread * math.sqrt(max(model._column_variance[0], 0.0)) + 1e-6
    assert _fit(data, warmup_residual=False)._warmup_targets().residual is None


def test_images_ignore_the_setting(digits):
    model = make_model("p3gm", pca_dim=8, hidden=32, epochs=1, batch_size=100, warmup_steps=5, warmup_scale=3.0)
    model.fit(digits[0])
    assert "warmup_spread" not in model.calibration
