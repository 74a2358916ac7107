"""Seeded, stratified, disjoint splits; official split; outlier always a member; check_pca_dim."""
import numpy as np
import pytest

from dpcore.data import Dataset, add_outlier, check_pca_dim, load_dataset, train_test_split
from dpcore.errors import InvalidParameter


def _toy(n=200, classes=(0.9, 0.1)):
    rng = np.random.default_rng(0)
    labels = rng.choice(len(classes), size=n, p=classes)
    return Dataset("toy", rng.random((n, 3)), labels=labels, label_names=list(range(len(classes))))


@pytest.mark.parametrize("test_size", [0.1, 0.2])
def test_stratified_split(test_size):
    ds = _toy()
    train, test = train_test_split(ds, test_size=test_size, seed=3)
    assert train.n + test.n == ds.n
    rows = {tuple(r) for r in ds.features.round(6)}
    assert {tuple(r) for r in train.features.round(6)} | {tuple(r) for r in test.features.round(6)} == rows
    assert not ({tuple(r) for r in train.features} & {tuple(r) for r in test.features})
    for c in (0, 1):  # each class split in the requested proportion (up to rounding)
        share = (test.labels == c).sum() / (ds.labels == c).sum()
        assert abs(share - test_size) < 0.05
    assert test.meta["role"] == "test" and train.meta["split"] == "stratified"


def test_split_is_seeded():
    ds = _toy()
    a, _ = train_test_split(ds, 0.2, seed=1)
    b, _ = train_test_split(ds, 0.2, seed=1)
    c, _ = train_test_split(ds, 0.2, seed=2)
    assert np.array_equal(a.features, b.features) and not np.array_equal(a.features, c.features)


def test_unlabelled_split_and_bad_sizes():
    ds = Dataset("u", np.random.default_rng(0).random((50, 2)))
    train, test = train_test_split(ds, 0.2, seed=0)
    assert (train.n, test.n) == (40, 10) and train.meta["split"] == "random"
    for bad in (0, 1, 1.5, -0.1):
        with pytest.raises(InvalidParameter, match="test_size"):
            train_test_split(ds, bad)


def test_outlier_stays_in_train():
    ds = load_dataset("digits", outlier=True)
    assert ds.outlier_index == ds.n - 1 and np.all(ds.features[ds.outlier_index] == 1.0)
    for seed in range(5):
        train, test = train_test_split(ds, 0.2, seed=seed)
        assert train.outlier_index is not None and np.all(train.features[train.outlier_index] == 1.0)
        assert test.outlier_index is None and not np.any(np.all(test.features == 1.0, axis=1))
    with pytest.raises(InvalidParameter, match="outlier"):
        add_outlier(load_dataset("two-gaussians"))


def test_check_pca_dim():
    ds = load_dataset("two-gaussians", dim=5, n=20)
    assert check_pca_dim(ds, 5) == 5
    for bad in (6, 0, 2.5):
        with pytest.raises(InvalidParameter, match="pca_dim"):
            check_pca_dim(ds, bad)
