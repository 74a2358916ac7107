"""Built-ins load offline and fast; tables round-trip; image sets, official split, outlier."""
import os
import time

import numpy as np
import pandas as pd
import pytest

from dpcore.data import list_datasets, load_dataset, load_split, load_table, write_idx
from dpcore.data.registry import FASHION_DIR
from dpcore.errors import DatasetUnavailable, InvalidParameter


def test_list_datasets():
    infos = {i.name: i for i in list_datasets()}
    assert set(infos) == {"digits", "fashion-mnist", "mnist", "caravan", "credit", "cps1988",
                          "two-gaussians"}
    assert infos["caravan"].rows == 5822 and infos["caravan"].columns == 85
    assert infos["digits"].kind == "image" and infos["credit"].kind == "tabular"
    for i in infos.values():
        assert i.available or i.hint


@pytest.mark.parametrize("missing", ["indicator", "category"])
@pytest.mark.parametrize("name", ["caravan", "credit", "cps1988", "two-gaussians"])
def test_tabular_round_trip(name, missing):
    ds = load_dataset(name, missing=missing)
    frame, schema = load_table(name)
    assert ds.preprocessing_private and schema.private  # hand-written public schemas
    assert 0 <= ds.features.min() and ds.features.max() <= 1
    assert ds.meta.get("clipped", {}) == {}  # the documented domains cover every row
    pd.testing.assert_frame_equal(ds.to_frame(), frame.reset_index(drop=True), check_exact=False,
                                  rtol=1e-6, atol=1e-5)
    feats, labels = ds.encoder.encode(frame)
    assert np.abs(feats - ds.features).max() < 1e-6 and np.array_equal(labels, ds.labels)


def test_caravan_and_credit_facts():
    t0 = time.perf_counter()
    car, cred = load_dataset("caravan"), load_dataset("credit")
    assert time.perf_counter() - t0 < 10
    assert (car.n, car.n_features) == (5822, 85) and 0.05 < car.labels.mean() < 0.07
    assert car.label_names == ["No", "Yes"]
    raw, _ = load_table("credit")
    assert raw.isna().any().sum() >= 3 and cred.n == len(raw)
    assert str(raw["Income"].dtype) == "Int64" and raw["Home"].dtype == "category"


def test_cps1988_facts():
    infos = {i.name: i for i in list_datasets()}["cps1988"]
    ds = load_dataset("cps")  # alias
    assert (ds.n, ds.name) == (28155, "cps1988") == (infos.rows, infos.name)
    assert ds.n_features == infos.features == 11  # wage, education, experience, 2 + 4 + 2 one-hot
    assert ds.label_names == ["no", "yes"] and 0.2 < 1 - ds.labels.mean() < 0.3  # smsa: both frequent
    spec = {c.name: c for c in ds.schema.columns}
    assert (spec["education"].lower, spec["education"].upper) == (0, 18)
    assert spec["wage"].origin == "documented" and spec["experience"].kind == "integer"
    assert list(ds.to_frame().columns) == ["wage", "education", "experience", "ethnicity", "smsa", "region",
                                           "parttime"]
    tr, te = load_split("cps1988", seed=2, test_size=0.1)
    assert tr.n + te.n == 28155 and abs(te.n - 2816) <= 1
    assert abs(tr.labels.mean() - te.labels.mean()) < 0.01  # stratified by smsa


def test_digits_and_two_gaussians():
    t0 = time.perf_counter()
    d = load_dataset("digits")
    load_dataset("two-gaussians", dim=1000, n=2000)
    assert time.perf_counter() - t0 < 5
    assert (d.n, d.n_features, d.image_shape) == (1797, 64, (8, 8)) and d.features.max() == 1.0
    assert d.to_frame().shape == (1797, 65)
    g = load_dataset("two-gaussians", dim=50, n=400, seed=3)
    assert (g.n, g.n_features) == (400, 50) and g.labels.sum() == 200
    x = g.to_frame().drop(columns="class").to_numpy()
    assert np.all(np.sign(x[g.labels == 1].mean(0)) == 1) and np.all(np.sign(x[g.labels == 0].mean(0)) == -1)
    assert np.array_equal(g.features, load_dataset("two-gaussians", dim=50, n=400, seed=3).features)
    for bad in (4, 1001):
        with pytest.raises(InvalidParameter, match="dim"):
            load_dataset("two-gaussians", dim=bad)
    with pytest.raises(InvalidParameter, match="dim"):
        load_dataset("digits", dim=10)
    with pytest.raises(InvalidParameter, match="unknown dataset 'cifar'"):
        load_dataset("cifar")


def test_load_split_outlier_and_n():
    train, test = load_split("digits", seed=0, test_size=0.2, outlier=True)
    assert train.outlier_index == train.n - 1 and np.all(train.features[-1] == 1.0)
    assert test.outlier_index is None and abs(test.n - 0.2 * 1797) <= 5
    tr, te = load_split("credit", n=500, seed=1)
    assert tr.n + te.n == 500 and te.meta["role"] == "test"
    with pytest.raises(InvalidParameter, match="outlier"):
        load_split("credit", outlier=True)


def _mnist_folder(folder, n_train=70, n_test=14):
    rng = np.random.default_rng(0)
    folder.mkdir()
    write_idx(folder / "train-images-idx3-ubyte.gz", rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8))
    write_idx(folder / "train-labels-idx1-ubyte.gz", (np.arange(n_train) % 10).astype(np.uint8))
    write_idx(folder / "t10k-images-idx3-ubyte", rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8))
    write_idx(folder / "t10k-labels-idx1-ubyte", (np.arange(n_test) % 10).astype(np.uint8))


def test_mnist_from_folder_official_split(tmp_path, monkeypatch):
    _mnist_folder(tmp_path / "mnist")
    train, test = load_split("mnist", path=tmp_path / "mnist", outlier=True, test_size=0.5)
    assert (train.n, test.n) == (71, 14) and train.image_shape == (28, 28)
    assert train.outlier_index == 70 and test.meta["split"] == "official"
    full = load_dataset("mnist", path=tmp_path / "mnist", outlier=True)
    from dpcore.data import train_test_split
    a, b = train_test_split(full, test_size=0.3, seed=5)
    assert np.array_equal(a.features, train.features) and np.array_equal(b.features, test.features)
    monkeypatch.setenv("DPCORE_MNIST_DIR", str(tmp_path / "mnist"))
    assert load_dataset("mnist").n == 84 and {i.name: i for i in list_datasets()}["mnist"].available
    monkeypatch.delenv("DPCORE_MNIST_DIR")
    with pytest.raises(DatasetUnavailable, match="DPCORE_MNIST_DIR"):
        load_dataset("mnist")


def test_fashion_absent_names_install_command(tmp_path, monkeypatch):
    monkeypatch.setenv("DPCORE_FASHION_MNIST_DIR", str(tmp_path))
    with pytest.raises(DatasetUnavailable, match="apt-get install dataset-fashion-mnist"):
        load_split("fashion-mnist")
    info = {i.name: i for i in list_datasets()}["fashion-mnist"]
    assert not info.available and "apt-get install dataset-fashion-mnist" in info.hint


@pytest.mark.skipif(not os.path.isdir(FASHION_DIR),
                    reason="Fashion-MNIST not installed (apt-get install dataset-fashion-mnist)")
def test_real_fashion_mnist():
    t0 = time.perf_counter()
    train, test = load_split("fashion-mnist", outlier=True)
    elapsed = time.perf_counter() - t0
    assert (train.n, test.n, train.n_features) == (60_001, 10_000, 784) and elapsed < 15
    assert train.label_names[0] == "T-shirt/top" and np.bincount(test.labels).tolist() == [1000] * 10
    assert 0.0 == train.features.min() and train.features.max() == 1.0
    assert train.outlier_index == 60_000
