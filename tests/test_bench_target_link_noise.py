"""bench/target_link_noise.py: the idealised star predicts the target when its links are clean, not when
they drown in noise, and the σ it reports are the ones AIM's defaults give."""
import math

import numpy as np
import pytest


@pytest.fixture(scope="module")
def tln(bench_script):
    return bench_script("target_link_noise")


@pytest.fixture(scope="module")
def split():
    import pandas as pd

    from dpcore.data import dataset_from_frame
    from dpcore.data.schema import ColumnSpec, Schema
    from dpcore.data.split import train_test_split

    rng = np.random.default_rng(0)
    n = 1200
    x = rng.integers(0, 10, n)
    noise = rng.uniform(0, 100, n)
    y = rng.random(n) < 1 / (1 + np.exp(-(x - 4.5)))
    frame = pd.DataFrame({"x": x, "noise": noise.round(1), "y": np.where(y, "yes", "no")})
    schema = Schema([ColumnSpec("x", "integer", 0, 9), ColumnSpec("noise", "numeric", 0.0, 100.0),
                     ColumnSpec("y", "categorical", categories=["no", "yes"])], target="y")
    return train_test_split(dataset_from_frame(frame, schema=schema), test_size=0.25, seed=0)


def test_clean_links_predict_and_drowned_links_do_not(tln, split):
    train, test = split
    star = tln.Star(train, groups=4)
    clean = [tln.tstr(star.draw(0.0, np.random.default_rng(r)), test, r)["logistic_regression"] for r in range(3)]
    drowned = [tln.tstr(star.draw(1e5, np.random.default_rng(r)), test, r)["logistic_regression"]
               for r in range(6)]
    assert min(clean) > 0.85
    assert np.mean(drowned) < 0.65 and max(drowned) < min(clean)  # random links: no better than chance
    rows = star.draw(0.0, np.random.default_rng(0))
    assert rows.n == train.n and rows.n_features == train.n_features
    assert set(np.unique(rows.labels)) == {0, 1}


def test_default_sigmas_follow_aim_plan(tln):
    from dpcore.models.aim import ALPHA, AIMConfig, planned_rounds

    one, four = tln.default_sigmas(1.0, 1e-5, 31), tln.default_sigmas(4.0, 1e-5, 31)
    T = planned_rounds(AIMConfig(), 31)
    assert T == 31 + 2 * 30
    assert one["defaults"] == pytest.approx(math.sqrt(T / (2 * ALPHA * one["rho"])) / math.sqrt(2.0))
    assert one["all of rho"] == pytest.approx(math.sqrt(30 / (2 * one["rho"])))
    assert one["all of rho"] < one["defaults"] and four["defaults"] < one["defaults"] / 3
    assert 0.02 < one["rho"] < 0.04
