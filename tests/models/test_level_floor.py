"""AIM's and MST's level floor: a declared level the noise cannot tell from zero is still generated, at
one noise std of share, by moving rows from the largest level; post-processing, saved with the model."""
import dataclasses
import json
import math

import numpy as np
import pandas as pd
import pytest

from dpcore.data.csv import dataset_from_frame
from dpcore.errors import RunError
from dpcore.models import load_model, make_model
from dpcore.models.level_floor import level_floors, raise_to_floor
from dpcore.privacy.accountant import epsilon


def test_floors_are_one_noise_std_of_share_for_declared_levels_only():
    ones = {"cat": (np.array([900.0, 80.0, -3.0]), 30.0), "flag": (np.array([990.0, 5.0]), 30.0),
            "age": (np.arange(10.0), 30.0), "y": (np.array([500.0, 500.0]), 900.0)}
    kinds = {"cat": "onehot", "flag": "bool", "age": "int", "y": "label"}
    got = level_floors(ones, kinds, total=1000.0)
    assert got == {"cat": pytest.approx(0.03), "flag": pytest.approx(0.03), "y": pytest.approx(0.5)}
    assert level_floors(ones, kinds, total=0.0) == {}


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
    assert set(floors) >= {a.name for a in m.disc.attrs if a.kind in ("onehot", "bool", "label")}
    assert not any(a.kind in ("bins", "int") for a in m.disc.attrs if a.name in floors)
    n = 3000
    for seed in range(3):
        s = m.sample(n, seed=seed).to_frame()
        assert (s["city"] == "d").sum() >= 1 and s["income"].isna().sum() >= 1
        assert set(s["y"]) == {"no", "yes"}
        assert (s["city"] == "a").sum() > 600  # the donors keep their size
    flag = next(a for a in m.disc.attrs if a.kind == "bool")
    need = math.ceil(floors[flag.name] * n - 1e-9)
    assert s["income"].isna().sum() >= need
    # the floor is post-processing: nothing is added to the ledger, ε is the accountant's
    assert m.privacy_ledger().to_list() == led.to_list() and epsilon(led, 1e-5) <= 0.5
    # off: the model's own draws, which are allowed to miss the rare levels
    off = dataclasses.replace(m.config, level_floor=False)
    m.config = off
    assert m.sample(n, seed=0).n == n
    m.config = dataclasses.replace(off, level_floor=True)
    # saved with the model, validated when loaded
    m.save(tmp_path)
    back = load_model(tmp_path)
    assert back.level_floor == pytest.approx(floors)
    pd.testing.assert_frame_equal(back.sample(500, seed=4).to_frame(), m.sample(500, seed=4).to_frame())
    meta = json.loads((tmp_path / "model.json").read_text())
    numeric = next(a.name for a in m.disc.attrs if a.kind == "bins")
    for bad in ({numeric: 0.1}, {flag.name: 2.0}, {flag.name: "0.1"}, ["x"]):
        meta["level_floors"] = bad
        (tmp_path / "model.json").write_text(json.dumps(meta))
        with pytest.raises(RunError, match="level"):
            load_model(tmp_path)


def test_models_saved_before_the_floor_load_without_it(rare, tmp_path):
    m = make_model("mst", epsilon=1.0, iters=50, bins=8)
    m.fit(rare)
    m.save(tmp_path)
    meta = json.loads((tmp_path / "model.json").read_text())
    del meta["level_floors"]
    del meta["config"]["level_floor"]
    (tmp_path / "model.json").write_text(json.dumps(meta))
    back = load_model(tmp_path)
    assert back.level_floor == {} and back.config.level_floor is False
    m.config = dataclasses.replace(m.config, level_floor=False)
    pd.testing.assert_frame_equal(back.sample(300, seed=5).to_frame(), m.sample(300, seed=5).to_frame())
