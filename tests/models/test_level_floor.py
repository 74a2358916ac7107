"""AIM's and MST's level floor: a declared level the noise cannot tell from zero is still generated, at
one noise std of share, by moving rows from the largest level; missing-value flags are left alone;
post-processing, saved with the model."""
import dataclasses
import json
import math

import numpy as np
import pandas as pd
import pytest

from dpcore.data.csv import dataset_from_frame
from dpcore.errors import RunError
from dpcore.models import load_model, make_model
from dpcore.models.level_floor import floor_kind, level_floors, raise_to_floor
from dpcore.models.marginal_data import Attr
from dpcore.privacy.accountant import epsilon


def test_floors_are_one_noise_std_of_share_for_declared_levels_only():
    ones = {"cat": (np.array([900.0, 80.0, -3.0]), 30.0), "flag": (np.array([990.0, 5.0]), 30.0),
            "age": (np.arange(10.0), 30.0), "y": (np.array([500.0, 500.0]), 900.0)}
    kinds = {"cat": "onehot", "flag": "bool", "age": "int", "y": "label"}
    got = level_floors(ones, kinds, total=1000.0)
    assert got == {"cat": pytest.approx(0.03), "flag": pytest.approx(0.03), "y": pytest.approx(0.5)}
    assert level_floors(ones, kinds, total=0.0) == {}
    assert level_floors(ones, {**kinds, "flag": "missing"}, total=1000.0).keys() == {"cat", "y"}
    assert floor_kind(Attr("3:income:missing", "bool", 2)) == "missing"
    assert floor_kind(Attr("4:overtime:value", "bool", 2)) == "bool"
    assert floor_kind(Attr("5:x:missing:value", "bool", 2)) == "bool"  # the role is the last part of the name


def test_raise_to_floor_tops_up_thin_levels_from_the_largest_and_leaves_the_rest():
    rng = np.random.default_rng(0)
    codes = {"cat": np.array([0] * 90 + [1] * 10), "other": np.arange(100)}
    before = {k: v.copy() for k, v in codes.items()}
    out = raise_to_floor(codes, {"cat": 3, "other": 100}, {"cat": 0.05}, rng)
    counts = np.bincount(out["cat"], minlength=3)
    assert counts.tolist() == [85, 10, 5]  # level 2 had none: 5 rows from level 0; level 1 already had 10
    moved = np.flatnonzero(out["cat"] != before["cat"])
    assert moved.size == 5 and (before["cat"][moved] == 0).all()
    assert all(np.array_equal(codes[k], before[k]) for k in codes)  # the input is not changed
    assert out["other"] is codes["other"]  # columns without a floor are not touched


@pytest.fixture(scope="module")
def rare():
    """3 000 rows; city 'd' in 4 rows and income missing in 5: far under a 1-way count's noise at ε = 0.5."""
    rng = np.random.default_rng(1)
    n = 3000
    city = rng.choice(["a", "b", "c"], n)
    city[:4] = "d"
    income = rng.uniform(0, 5000, n)
    income[10:15] = np.nan
    y = rng.random(n) < 0.3
    frame = pd.DataFrame({"city": city, "income": income, "y": np.where(y, "yes", "no")})
    return dataset_from_frame(frame, target="y", types={"city": "categorical", "income": "numeric", "y": "categorical"},
                              bounds={"income": (0, 5000)}, categories={"city": ["a", "b", "c", "d"], "y": ["no", "yes"]},
                              nullable={"city": False, "income": True})


@pytest.mark.parametrize("name", ["mst", "aim"])
def test_rare_declared_levels_are_generated_and_the_floor_costs_no_privacy(name, rare, tmp_path):
    extra = {"max_time": 5.0, "rounds": 4} if name == "aim" else {}
    m = make_model(name, epsilon=0.5, iters=100, bins=16, **extra)
    m.fit(rare)
    led = m.privacy_ledger()
    floors = m.level_floor
    kinds = {a.name: a.kind for a in m.disc.attrs}
    flag = next(a.name for a in m.disc.attrs if a.name.endswith(":missing"))
    assert {kinds[a] for a in floors} == {"onehot", "label"} and flag not in floors
    n = 3000
    off = dataclasses.replace(m.config, level_floor=False)
    for seed in range(3):
        s = m.sample(n, seed=seed).to_frame()
        city = next(a for a in floors if kinds[a] == "onehot")
        assert (s["city"] == "d").sum() >= math.ceil(floors[city] * n - 1e-9)
        assert set(s["y"]) == {"no", "yes"}
        assert (s["city"] == "a").sum() > 600  # the donors keep their size
        on_config, m.config = m.config, off
        plain = m.sample(n, seed=seed).to_frame()
        m.config = on_config
        assert s["income"].isna().sum() == plain["income"].isna().sum()  # the missing flag is not floored
    # the floor is post-processing: nothing is added to the ledger, ε is the accountant's
    assert m.privacy_ledger().to_list() == led.to_list() and epsilon(led, 1e-5) <= 0.5
    # saved with the model, validated when loaded
    m.save(tmp_path)
    back = load_model(tmp_path)
    assert back.level_floor == pytest.approx(floors)
    pd.testing.assert_frame_equal(back.sample(500, seed=4).to_frame(), m.sample(500, seed=4).to_frame())
    meta = json.loads((tmp_path / "model.json").read_text())
    numeric = next(a.name for a in m.disc.attrs if a.kind == "bins")
    for bad in ({numeric: 0.1}, {flag: 0.1}, {city: 2.0}, {city: "0.1"}, ["x"]):
        meta["level_floors"] = bad
        (tmp_path / "model.json").write_text(json.dumps(meta))
        with pytest.raises(RunError, match="level"):
            load_model(tmp_path)


def test_models_saved_before_the_floor_load_without_it(rare, tmp_path):
    m = make_model("mst", epsilon=1.0, iters=50, bins=8)
    m.fit(rare)
    m.save(tmp_path)
    meta = json.loads((tmp_path / "model.json").read_text())
    del meta["level_floors"], meta["missing_scores"]
    del meta["config"]["level_floor"], meta["config"]["missing_sigmas"]
    (tmp_path / "model.json").write_text(json.dumps(meta))
    back = load_model(tmp_path)
    assert back.level_floor == {} and back.config.level_floor is False
    assert back.missing_scores == {} and back.config.missing_sigmas == 0.0
    m.config = dataclasses.replace(m.config, level_floor=False, missing_sigmas=0.0)
    pd.testing.assert_frame_equal(back.sample(300, seed=5).to_frame(), m.sample(300, seed=5).to_frame())


def test_missing_flags_under_the_threshold_are_generated_complete(rare, tmp_path):
    """A flag's noisy missing count under `missing_sigmas` σ: the column comes back complete; over it,
    as the model draws it. Scores are post-processing of released counts, saved and validated."""
    from dpcore.models.level_floor import drop_unseen_missing, missing_scores

    ones = {"f": (np.array([990.0, 12.0]), 30.0), "c": (np.array([5.0, 6.0]), 30.0)}
    assert missing_scores(ones, {"f": "missing", "c": "onehot"}) == {"f": pytest.approx(0.4)}
    codes = {"f": np.array([0, 1, 1]), "c": np.array([1, 1, 0])}
    out = drop_unseen_missing(codes, {"f": 0.4}, 1.0)
    assert out["f"].tolist() == [0, 0, 0] and out["c"] is codes["c"] and codes["f"].tolist() == [0, 1, 1]
    assert drop_unseen_missing(codes, {"f": 1.5}, 1.0)["f"] is codes["f"]

    m = make_model("mst", epsilon=1.0, iters=50, bins=8)
    m.fit(rare)
    flag = next(a.name for a in m.disc.attrs if a.name.endswith(":missing"))
    assert set(m.missing_scores) == {flag}
    plain = dataclasses.replace(m.config, missing_sigmas=0.0)
    m.missing_scores = {flag: 0.5}
    assert m.sample(3000, seed=1).to_frame()["income"].isna().sum() == 0
    m.missing_scores = {flag: 5.0}
    kept = m.sample(3000, seed=1).to_frame()["income"].isna().sum()
    on, m.config = m.config, plain
    assert m.sample(3000, seed=1).to_frame()["income"].isna().sum() == kept
    m.config = on
    m.save(tmp_path)
    assert load_model(tmp_path).missing_scores == {flag: 5.0}
    meta = json.loads((tmp_path / "model.json").read_text())
    city = next(a.name for a in m.disc.attrs if a.kind == "onehot")
    for bad in ({city: 1.0}, {flag: float("inf")}, {flag: True}, [flag]):
        meta["missing_scores"] = bad
        (tmp_path / "model.json").write_text(json.dumps(meta))
        with pytest.raises(RunError, match="missing"):
            load_model(tmp_path)
