"""AIM and MST (mbi): ε from the accountant hits the target, rows in the original schema, events,
stop, save/load, and mbi's sampler keeping conditionally independent columns independent."""
import numpy as np
import pandas as pd
import pytest

from dpcore.data.csv import dataset_from_frame
from dpcore.errors import InvalidParameter
from dpcore.models import load_model, make_model
from dpcore.privacy.accountant import epsilon

DELTA = 1e-5


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(0)
    n = 3000
    y = rng.random(n) < 0.2
    frame = pd.DataFrame({
        "age": np.clip(np.round(30 + 15 * y + rng.normal(0, 5, n)), 18, 90).astype(int),
        "income": np.clip(1000 + 800 * y + rng.normal(0, 300, n), 0, 5000),
        "city": np.where(y, "a", rng.choice(["a", "b", "c"], n)),
        "y": np.where(y, "yes", "no")})
    return dataset_from_frame(frame, target="y", types={"age": "integer", "income": "numeric",
                                                        "city": "categorical", "y": "categorical"},
                              bounds={"age": (18, 90), "income": (0, 5000)},
                              categories={"city": ["a", "b", "c"], "y": ["no", "yes"]},
                              nullable={"age": False, "income": False, "city": False})


@pytest.fixture(scope="module")
def mst(table):
    events = []
    m = make_model("mst", epsilon=1.0, iters=200, bins=16)
    m.fit(table, callback=events.append)
    return m, events


def test_mst_epsilon_is_the_accountants_and_hits_the_target(mst, table):
    m, events = mst
    eps = epsilon(m.privacy_ledger(), DELTA)
    assert m.fit_result.epsilon == eps and 0.999 < eps <= 1.0
    kinds = {r.mechanism for r in m.privacy_ledger()}
    assert kinds == {"gaussian", "exponential"}
    assert events and events[-1].epsilon == pytest.approx(eps) and events[-1].step == events[-1].total_steps and len(m.calibration["selected"]) == 3


def test_rows_come_back_in_the_schema_and_keep_the_structure(mst, table):
    m, _ = mst
    s = m.sample(4000, seed=1).to_frame()
    real = table.to_frame()
    assert list(s.columns) == list(real.columns)
    assert s["age"].between(18, 90).all() and (s["age"] == s["age"].round()).all()
    assert s["income"].between(0, 5000).all() and set(s["city"]) <= {"a", "b", "c"}
    assert set(s["y"]) == {"no", "yes"}  # both classes of the target
    assert abs((s["y"] == "yes").mean() - (real["y"] == "yes").mean()) < 0.05
    # the tree keeps the strong y–age dependence
    gap = s.groupby("y")["age"].mean()
    assert gap["yes"] - gap["no"] > 8


def test_save_load_samples_alike(mst, tmp_path):
    m, _ = mst
    m.save(tmp_path)
    back = load_model(tmp_path)
    a, b = m.sample(500, seed=3).to_frame(), back.sample(500, seed=3).to_frame()
    pd.testing.assert_frame_equal(a, b)
    assert epsilon(back.privacy_ledger(), DELTA) == pytest.approx(m.fit_result.epsilon)


def test_aim_hits_the_target_and_stops_cleanly(table):
    m = make_model("aim", epsilon=1.0, rounds=6, round_iters=50, iters=100, bins=16, max_time=60)
    r = m.fit(table)
    assert r.epsilon == epsilon(m.privacy_ledger(), DELTA) and 0.999 < r.epsilon <= 1.0
    assert any(rec.mechanism == "exponential" for rec in m.privacy_ledger())
    stop = make_model("aim", epsilon=1.0, rounds=6, round_iters=50, iters=50, bins=16)
    seen = []
    r2 = stop.fit(table, callback=lambda e: seen.append(e) or len(seen) < 2)
    assert r2.stopped and len(seen) == 2 and r2.epsilon < 1.0
    assert stop.sample(10, seed=0).n == 10


def test_bad_inputs_fail_before_work(digits):
    with pytest.raises(InvalidParameter, match="tables"):
        make_model("mst").fit(digits[0])
    with pytest.raises(InvalidParameter, match="bins"):
        make_model("aim", bins=1)
    with pytest.raises(InvalidParameter, match="finite"):
        make_model("mst", epsilon=float("inf"))


def test_sampler_keeps_conditionally_independent_columns_independent():
    """mbi 1.1's rounding sampler assigned both children of a parent in the same rank order
    (private-pgm PR #145), so a ⟂ b | c came out strongly dependent."""
    from dpcore.models.marginal_base import _draw, _mbi

    mbi = _mbi()
    rng = np.random.default_rng(0)
    n = 20000
    c = rng.integers(0, 2, n)
    a = np.where(c == 1, rng.integers(0, 4, n), rng.integers(0, 2, n))
    b = np.where(c == 1, rng.integers(0, 4, n), rng.integers(2, 4, n))
    dom = mbi.Domain(["a", "b", "c"], [4, 4, 2])
    data = mbi.Dataset({"a": a, "b": b, "c": c}, dom)
    ms = [mbi.LinearMeasurement(np.asarray(data.project(cl).datavector(), float), cl, stddev=1.0)
          for cl in (("a", "c"), ("b", "c"))]
    model = mbi.estimation.MirrorDescent().estimate(dom, ms, known_total=n, iters=300)
    s = _draw(model, n, 5)
    for level in (0, 1):
        rows = s["c"] == level
        joint = np.histogram2d(s["a"][rows], s["b"][rows], bins=[4, 4], range=[[0, 4], [0, 4]])[0]
        p = joint / joint.sum()
        prod = p.sum(1, keepdims=True) * p.sum(0, keepdims=True)
        mi = float(np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1) / np.where(prod > 0, prod, 1)), 0)))
        assert mi < 0.01, (level, mi)
