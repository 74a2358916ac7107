"""P3GM's decoder warm-up on tables: the DP-PCA reconstruction is spread back to the data's width
(`warmup_scale`), from released values only, without touching the privacy of the run."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpcore.data.csv import dataset_from_frame
from dpcore.models import make_model
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


def test_the_spread_is_the_noisy_means_and_within_its_declared_bounds():
    data = _table()
    model = _fit(data)
    m = np.clip(model.pca["mean"].astype(np.float64), 0, 1)  # the released noisy mean
    spread = model.calibration["warmup_spread"]
    assert spread == pytest.approx(max(1.0, math.sqrt(np.sum(m * (1 - m)))), rel=1e-6)
    width = model.pca["mean"].shape[0]
    assert 1.0 < spread <= math.sqrt(width) / 2  # m(1 − m) ≤ 1/4 per column; this table's rows are longer than 1
    assert _fit(data, warmup_scale=1.0).calibration["warmup_spread"] == 1.0
    assert _fit(data, warmup_scale=2.5).calibration["warmup_spread"] == 2.5


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
    for key, kw in {"unscaled": dict(warmup_scale=1.0, warmup_residual=False), "default": {},
                    "3 components": dict(pca_dim=3), "3 components, no residual": dict(pca_dim=3, warmup_residual=False),
                    }.items():
        model = _fit(data, "pgm", stop_after_warmup=True, **{"pca_dim": 12, "hidden": 64, "warmup_steps": 300, **kw})
        std[key] = model.sample(2000, seed=1).to_frame()["amount"].astype(float).std() / real
    assert std["unscaled"] < 0.7, std
    assert 0.75 < std["default"] < 1.3 and 0.75 < std["3 components"] < 1.3, std
    assert std["3 components, no residual"] < 0.5, std


def test_the_residual_is_on_numeric_columns_only_and_bounded_by_the_released_diagonal():
    data = _table()
    model = _fit(data)
    spread = model.calibration["warmup_spread"]
    res = model._warmup_residual(spread).cpu().numpy()
    numeric = model.heads.heads[0]  # "amount", the first column
    assert (res[numeric.stop:] == 0).all() and (res >= 0).all()
    assert res[0] <= spread * math.sqrt(max(model._column_variance[0], 0.0)) + 1e-6
    assert _fit(data, warmup_residual=False)._warmup_residual(spread) is None


def test_images_ignore_the_setting(digits):
    model = make_model("p3gm", pca_dim=8, hidden=32, epochs=1, batch_size=100, warmup_steps=5, warmup_scale=3.0)
    model.fit(digits[0])
    assert "warmup_spread" not in model.calibration
