import numpy as np
import pandas as pd
import pytest

from dpcore.data.dataset import Dataset
from dpcore.evaluate.marginals import one_way_tvd, two_way_tvd
from dpcore.figures.data import class_mean_images_figure, image_grid_figure, one_way_figure, two_way_heatmap


class _Encoder:
    """Stand-in for the tabular encoder: column 0 numeric x ∈ [0, 10], columns 1–3 one-hot colour."""

    def decode(self, features, labels):
        colours = np.array(["red", "green", "blue"], dtype=object)
        return pd.DataFrame({"x": features[:, 0] * 10.0, "colour": colours[features[:, 1:4].argmax(1)],
                             "y": labels})


def _tab(x, colour, y):
    f = np.zeros((len(x), 4), np.float32)
    f[:, 0] = x
    f[np.arange(len(x)), 1 + np.asarray(colour)] = 1
    return Dataset("tab", f, np.asarray(y), label_names=[0, 1], encoder=_Encoder())


def test_identical_data_give_zero(digits):
    for key in ("train", "train_img"):
        ds = digits[key]
        assert max(one_way_tvd(ds, ds).values()) == 0.0
        mean, mat = two_way_tvd(ds, ds)
        assert mean == 0.0 and mat.shape == (20, 20)
    rng = np.random.default_rng(0)
    t = _tab(rng.random(300), rng.integers(0, 3, 300), rng.integers(0, 2, 300))
    assert one_way_tvd(t, t) == {"x": 0.0, "colour": 0.0, "y": 0.0}
    assert two_way_tvd(t, t)[0] == 0.0


def test_hand_computed_tvd():
    n = 400
    a = np.r_[np.zeros(n // 2), np.ones(n // 2)] * 0.99
    # real: x and colour agree; synthetic: same 1-way marginals, opposite pairing
    real = _tab(a, (a > 0.5).astype(int), np.zeros(n, int))
    synth = _tab(a, (a < 0.5).astype(int), np.zeros(n, int))
    one = one_way_tvd(real, synth)
    assert one["x"] == 0.0 and one["colour"] == 0.0
    mean, mat = two_way_tvd(real, synth)
    assert mat.loc["x", "colour"] == pytest.approx(1.0)
    assert mat.loc["x", "y"] == 0.0
    assert mean == pytest.approx(1 / 3)
    # categorical shift: all red vs half red half blue → TVD 0.5
    half = _tab(a, np.where(a > 0.5, 2, 0), np.zeros(n, int))
    allred = _tab(a, np.zeros(n, int), np.zeros(n, int))
    assert one_way_tvd(allred, half)["colour"] == pytest.approx(0.5)


def test_pair_cap_prefers_informative_columns(digits):
    ds = digits["train_img"]
    mean, mat = two_way_tvd(ds, ds.with_features(np.clip(ds.features + 0.3, 0, 1), ds.labels), max_columns=6)
    assert mat.shape == (6, 6) and np.isnan(np.diag(mat.to_numpy())).all()
    assert "px0" not in mat.columns  # constant border pixel (entropy 0) is never chosen
    assert mean > 0.1


def test_figures(digits):
    ds = digits["train_img"]
    assert len(one_way_figure(ds, ds, "px20").data) == 2
    assert len(one_way_figure(ds, ds, "label").data) == 2
    _, mat = two_way_tvd(ds, ds, max_columns=4)
    assert two_way_heatmap(mat).data[0].z.shape == (4, 4)
    assert len(image_grid_figure(ds, n=16).data) == 1
    assert len(class_mean_images_figure(ds).data) == 10


def test_class_means_keep_a_panel_for_a_class_never_generated(digits):
    ds = digits["train_img"]
    no_five = ds.subset(ds.labels != 5)
    fig = class_mean_images_figure(no_five)
    titles = [a.text for a in fig.layout.annotations]
    assert len(fig.data) == 10 and len(titles) == 10
    assert [t for t in titles if "none generated" in t] == ["5 (none generated)"]
