"""Quality summary (shapes, pairs, their mean) and point masses in the marginals."""
import numpy as np
import pandas as pd
import pytest

from dpcore.data.csv import dataset_from_frame
from dpcore.evaluate.marginals import one_way_histogram, one_way_tvd
from dpcore.evaluate.quality import quality_report, quality_summary


def _pair(zero_share_synth: float, n: int = 2000, seed: int = 0):
    """(real, synthetic) tables: real income 0 in 40 % of rows; synthetic in `zero_share_synth`,
    its other incomes spread over the first bin as a smearing model would put them."""
    rng = np.random.default_rng(seed)
    real = np.where(rng.random(n) < 0.4, 0.0, rng.uniform(0, 100, n))
    synth = np.where(rng.random(n) < zero_share_synth, 0.0, rng.uniform(0, 100, n))
    synth[(synth > 0) & (rng.random(n) < 0.4 - zero_share_synth)] = 1.5  # inside the first bin, not on 0
    region = rng.choice(["n", "s"], n)

    def ds(income):
        frame = pd.DataFrame({"income": income, "region": region})
        return dataset_from_frame(frame, types={"income": "numeric"}, bounds={"income": (0.0, 100.0)})
    return ds(real), ds(synth)


def test_summary_is_the_mean_of_shapes_and_pairs():
    matrix = pd.DataFrame([[np.nan, 0.2, 0.4], [0.2, np.nan, 0.0], [0.4, 0.0, np.nan]])
    q = quality_summary({"a": 0.1, "b": 0.3, "c": 0.2}, matrix)
    assert q["column_shapes"] == pytest.approx(0.8) and q["column_pairs"] == pytest.approx(0.8)
    assert q["score"] == pytest.approx(0.8) and q["pairs"] == 3 and q["shapes"]["b"] == pytest.approx(0.7)
    alone = quality_summary({"a": 0.25}, pd.DataFrame([[np.nan]]))
    assert alone["score"] == pytest.approx(0.75) and np.isnan(alone["column_pairs"])


def test_a_point_mass_is_a_bin_of_its_own_in_the_tvd_and_the_bars():
    real, smeared = _pair(0.0)
    _, kept = _pair(0.4)
    # the 40 % of zeros moved just off 0 stay in the first bin: a binned TVD would not see it
    assert one_way_tvd(real, smeared)["income"] > 0.35 > 0.1 > one_way_tvd(real, kept)["income"]
    assert quality_report(real, kept)["score"] > quality_report(real, smeared)["score"] + 0.15
    h = one_way_histogram(real, smeared, "income")
    assert h["bins"][0] == "= 0" and h["atom"][0] and not any(h["atom"][1:])  # before the first bin
    assert h["real"][0] == pytest.approx(0.4, abs=0.03) and h["synthetic"][0] == 0.0
    assert "= 100" not in h["bins"] and "missing" not in h["bins"]  # empty atoms are left out
    assert sum(h["real"]) == pytest.approx(1.0)


def test_the_atom_bar_is_drawn_hatched():
    from dpcore.figures.data import one_way_figure

    real, smeared = _pair(0.0)
    fig = one_way_figure(real, smeared, "income")
    assert fig.data[0].x[0] == "= 0" and fig.data[0].marker.pattern.shape[0] == "/"
    assert "point mass" in fig.layout.title.text
