"""Seeded train/test split and the PCA-dimension check.

Why it matters: the test split is the real hold-out for utility (train on synthetic, test on
real) and the non-member set for membership inference, so it must never touch training; the
injected outlier is always a member (training row); image sets keep their official split.
"""
from __future__ import annotations

import numpy as np

from dpcore.data.dataset import Dataset
from dpcore.errors import InvalidParameter, check_int, check_probability


def train_test_split(ds: Dataset, test_size: float = 0.1, seed: int = 0, *,
                     stratify: bool = True) -> tuple[Dataset, Dataset]:
    """(train, test). Stratified by label when labelled; the official split when the dataset has
    one (meta "official_test" = (start, stop, n_rows)), whatever `test_size` says."""
    test_size = check_probability("test_size", test_size)
    seed = check_int("seed", seed, minimum=0)
    n = ds.n
    official = ds.meta.get("official_test")
    if official is not None and tuple(official)[2] == n:
        start, stop, _ = official
        is_test = np.zeros(n, dtype=bool)
        is_test[start:stop] = True
        how = "official"
    else:
        is_test = _random_test_mask(ds, test_size, seed, stratify)
        how = "stratified" if (stratify and ds.labels is not None) else "random"
    if ds.outlier_index is not None:
        is_test[ds.outlier_index] = False  # the outlier is a member by construction
    if not is_test.any() or is_test.all():
        raise InvalidParameter(f"test_size={test_size} leaves an empty train or test split for {n} rows")
    meta = {"split": how, "split_seed": seed, "test_size": float(is_test.mean())}
    train, test = ds.subset(np.flatnonzero(~is_test)), ds.subset(np.flatnonzero(is_test))
    for part, role in ((train, "train"), (test, "test")):
        part.meta.pop("official_test", None)
        part.meta.update(meta, role=role)
    return train, test


def all_rows(*parts: Dataset, role: str = "train") -> Dataset:
    """Every row of `parts` as one set (no split: `--test-size 0`, or a held-out file)."""
    first = parts[0]
    if len(parts) > 1:
        import dataclasses

        first = dataclasses.replace(first, features=np.concatenate([p.features for p in parts]),
                                    labels=None if first.labels is None else np.concatenate([p.labels for p in parts]),
                                    outlier_index=first.outlier_index, meta=dict(first.meta))
    out = first.subset(np.arange(first.n))
    out.meta.pop("official_test", None)
    out.meta.update(split="none", role=role)
    return out


def _random_test_mask(ds: Dataset, test_size: float, seed: int, stratify: bool) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = ds.n
    pool = np.arange(n)
    if ds.outlier_index is not None:
        pool = pool[pool != ds.outlier_index]
    is_test = np.zeros(n, dtype=bool)
    if stratify and ds.labels is not None:
        labels = ds.labels[pool]
        for c in np.unique(labels):
            members = rng.permutation(pool[labels == c])
            k = int(round(test_size * len(members)))
            k = min(k, len(members) - 1)  # every class keeps a training row
            is_test[members[:k]] = True
    else:
        k = int(round(test_size * len(pool)))
        is_test[rng.permutation(pool)[:k]] = True
    return is_test


def check_pca_dim(dataset: Dataset | int, pca_dim: int) -> int:
    """`pca_dim` as int, or InvalidParameter naming pca_dim when it exceeds the feature count."""
    d = dataset if isinstance(dataset, (int, np.integer)) else dataset.n_features
    pca_dim = check_int("pca_dim", pca_dim, minimum=1)
    if pca_dim > d:
        raise InvalidParameter(f"pca_dim={pca_dim} is larger than the number of features ({d})")
    return pca_dim
