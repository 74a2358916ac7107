"""dpcore.evaluate.checks' after-run checks: collapsed columns named, preprocessing not covered
(which columns), and the target check (labelled not covered by ε) telling signal from noise."""
import numpy as np
import pandas as pd

from dpcore.data.csv import dataset_from_frame
from dpcore.evaluate.checks import coverage_warnings, fit_warnings, synthetic_warnings, target_check


def _table(n=400, seed=0, bounds=True):
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 1, n)
    y = (x + 0.3 * rng.normal(0, 1, n)) > 0
    frame = pd.DataFrame({"x": np.clip(x, -4, 4), "city": rng.choice(["a", "b", "<c>"], n),
                          "y": np.where(y, "yes", "no")})
    kw = {"bounds": {"x": (-4, 4)}} if bounds else {}
    return dataset_from_frame(frame, target="y", types={"x": "numeric", "city": "categorical"},
                              categories={"city": ["a", "b", "<c>"], "y": ["no", "yes"]},
                              nullable={"x": False, "city": False}, **kw)


def test_collapsed_columns_are_named_by_column_and_level():
    real = _table()
    feats = np.array(real.features, copy=True)
    city = [b for b in real.encoder.blocks if b.column == "city"][0]
    feats[:, city.start:city.stop] = 0.0
    feats[:, city.start] = 1.0  # every synthetic row is city a: b and <c> never appear
    w = " | ".join(synthetic_warnings(real.with_features(feats, real.labels), real))
    assert "3 encoded columns collapsed" in w and "city=b" in w and "city=<c>" in w and "city=a" not in w


def test_a_large_set_sorted_by_class_is_read_across_all_its_rows():
    """The spread is read from a strided sample (at most 10 000 rows): a column that varies only in
    the last class's rows of a class-sorted set still counts as varying."""
    from dpcore.data.dataset import Dataset

    n = 30_000
    labels = np.repeat([0, 1, 2], n // 3)
    feats = np.zeros((n, 3), dtype=np.float32)
    feats[:, 0] = np.random.default_rng(0).random(n)
    feats[labels == 2, 1] = np.random.default_rng(1).random(n // 3)  # varies in the last third only
    real = Dataset(name="sorted", features=feats, labels=labels)
    flat = feats.copy()
    flat[:, 1] = 0.5
    w = " | ".join(synthetic_warnings(real.with_features(flat, labels), real))
    assert "1 encoded column collapsed" in w or "1 pixel collapsed" in w, w
    assert synthetic_warnings(real.with_features(feats[::-1].copy(), labels), real) == []


def test_coverage_names_the_columns_read_off_the_rows():
    assert coverage_warnings(_table()) == []
    w = coverage_warnings(_table(bounds=False))
    assert len(w) == 1 and "NOT covered" in w[0] and "(x)" in w[0]


def test_target_check_tells_a_predictive_set_from_noise_and_says_not_covered():
    train, test = _table(seed=1), _table(seed=2)
    good = target_check(train, test)
    assert good["predicts"] and good["value"] > 0.8 and good["covered_by_epsilon"] is False
    assert "not covered by ε" in good["text"]
    noise = _table(seed=3)
    noise = noise.with_features(noise.features, 1 - noise.labels)  # the target's link turned around
    bad = target_check(noise, test)
    assert not bad["predicts"] and "do NOT predict" in bad["text"]
    warns, check = fit_warnings(noise, train, test)
    assert check == bad and bad["text"] in warns
    warns, check = fit_warnings(train, train, test)
    assert warns == [] and check["predicts"]
    assert target_check(train, None) is None
