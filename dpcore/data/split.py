"""Train/test splits (keyed per row for files, seeded for built-ins) and the PCA-dimension check.

Why it matters: the test split is the real hold-out for utility (train on synthetic, test on
real) and the non-member set for membership inference, so it must never touch training; the
injected outlier is always a member (training row); image sets keep their official split.

Why a file is split row by row: ε is stated for the file the user hands over (add/remove one
row). A seeded permutation of the row order moves dozens of rows between train and test when one
row is added, so neighbouring files would give training sets far apart. A file's split instead
decides each row on its own: row i is a test row iff

    u_i = BLAKE2b_key(content digest of row i, occurrence index of that content)  <  test_size

with `key` a secret 256-bit key kept beside the file (dpcore.runs.uploads.split_key; never
published, never derived from a seed). Adding or removing one row changes at most that row's
membership, and every run on one file shares one test set. Built-in datasets keep their public
seeded (stratified) split: their relation is about the built-in file, which is public.
"""
from __future__ import annotations

import hashlib

import numpy as np

from dpcore.data.dataset import Dataset
from dpcore.errors import InvalidParameter, check_int, check_probability

KEY_BYTES = 32  # the split key: 256 bits of OS entropy


def row_digests(frame) -> np.ndarray:
    """(n, 2) uint64: a 64-bit digest of each raw row's content (its cells as written) and the
    occurrence index of that content (0 for its first copy, 1 for the second, ...).

    With the occurrence index, identical rows get distinct identities; removing one copy of a
    repeated row changes the identity set by exactly one element, as for any other row.
    """
    import pandas as pd

    digest = pd.util.hash_pandas_object(frame.astype(str), index=False).to_numpy(np.uint64)
    occurrence = pd.Series(digest).groupby(digest).cumcount().to_numpy(np.uint64)
    return np.stack([digest, occurrence], axis=1)


def row_coins(row_ids: np.ndarray, key: bytes, purpose: str) -> np.ndarray:
    """u_i in [0, 1) per row: keyed BLAKE2b of (purpose, row identity); a function of the row and
    the key only, so one row more or less leaves every other row's coin unchanged."""
    if not isinstance(key, (bytes, bytearray)) or len(key) != KEY_BYTES:
        raise InvalidParameter(f"a split key is {KEY_BYTES} bytes")
    ids = np.ascontiguousarray(row_ids, dtype="<u8")
    tag = purpose.encode()
    out = np.empty(len(ids), dtype=np.float64)
    for i, row in enumerate(ids):
        h = hashlib.blake2b(row.tobytes(), digest_size=8, key=bytes(key), person=tag[:16].ljust(16, b"."))
        out[i] = int.from_bytes(h.digest(), "little") / 2.0 ** 64
    return out


def keyed_subset(ds: Dataset, share: float, key: bytes) -> Dataset:
    """The rows of `ds` whose keyed "rows" coin is below `share` (each row decided on its own)."""
    if ds.row_ids is None:
        raise InvalidParameter("a keyed subset needs the rows' identities (a table read from a file)")
    return ds.subset(np.flatnonzero(row_coins(ds.row_ids, key, "rows") < share))


def train_test_split(ds: Dataset, test_size: float = 0.1, seed: int = 0, *,
                     stratify: bool = True, key: bytes | None = None) -> tuple[Dataset, Dataset]:
    """(train, test). With `key` (a file's secret split key) each row is decided on its own by its
    keyed coin (see the module docstring); otherwise stratified by label when labelled, seeded
    (built-ins), and the official split when the dataset has one (meta "official_test" =
    (start, stop, n_rows)), whatever `test_size` says."""
    test_size = check_probability("test_size", test_size)
    seed = check_int("seed", seed, minimum=0)
    n = ds.n
    official = ds.meta.get("official_test")
    if key is not None:
        if ds.row_ids is None:
            raise InvalidParameter("a keyed split needs the rows' identities (a table read from a file)")
        is_test = row_coins(ds.row_ids, key, "split") < test_size
        how = "keyed"
    elif official is not None and tuple(official)[2] == n:
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
    meta = {"split": how, "test_size": float(is_test.mean())}
    if how != "keyed":
        meta["split_seed"] = seed
    train, test = ds.subset(np.flatnonzero(~is_test)), ds.subset(np.flatnonzero(is_test))
    for part, role in ((train, "train"), (test, "test")):
        part.meta.pop("official_test", None)
        if how == "keyed":
            part.meta.pop("split_seed", None)
        part.meta.update(meta, role=role)
    return train, test


def all_rows(*parts: Dataset, role: str = "train") -> Dataset:
    """Every row of `parts` as one set (no split: `--test-size 0`, or a held-out file)."""
    first = parts[0]
    if len(parts) > 1:
        import dataclasses

        first = dataclasses.replace(first, features=np.concatenate([p.features for p in parts]),
                                    labels=None if first.labels is None else np.concatenate([p.labels for p in parts]),
                                    outlier_index=first.outlier_index, meta=dict(first.meta),
                                    row_ids=None if any(p.row_ids is None for p in parts)
                                    else np.concatenate([p.row_ids for p in parts]))
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
