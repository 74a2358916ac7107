"""The workbench's defaults: which dataset opens, how many of its rows a live demo uses, and the ε
and epochs for that size.

Why: the app is opened live in front of a class or a board, and nobody changes a setting first. On
digits (1 438 training rows) P3GM at ε = 1 scores 0.07–0.41 (chance: 0.10) and even at ε = 10 the
Story pair's verdict depends on the seed; on Fashion-MNIST with 20 000 training rows P3GM at ε = 1
keeps ~0.86 of the real data's utility in under a minute on two cores (bench/story_defaults.py). So
the app opens on Fashion-MNIST when its files are installed, else on digits with a visible note and
the larger ε that small data needs. No Streamlit here (the bench script and the tests import it).
"""
from __future__ import annotations

import functools

PREFERRED_DATASET = "fashion-mnist"
FALLBACK_DATASET = "digits"
# Rows of a large dataset a live demo uses: 23 333 keep the official 6:1 split of Fashion-MNIST /
# MNIST, i.e. 20 000 training rows (P3GM at ε = 1: ~0.7 accuracy, under a minute on 2 cores).
DEMO_ROWS = 23_333
DEMO_TRAIN_ROWS = 20_000


@functools.lru_cache(maxsize=1)
def _builtins() -> dict:
    """{built-in name: DatasetInfo} (reads only the IDX headers; cached for the process)."""
    from dpcore.data import list_datasets

    return {d.name: d for d in list_datasets()}


def _available() -> dict[str, bool]:
    """{built-in name: installed?}"""
    return {name: info.available for name, info in _builtins().items()}


def default_dataset() -> str:
    """Fashion-MNIST when its files exist on this machine, else digits."""
    return PREFERRED_DATASET if _available().get(PREFERRED_DATASET) else FALLBACK_DATASET


def fallback_note() -> str | None:
    """The one line the Data page shows when the app had to open on digits (None otherwise)."""
    if default_dataset() == PREFERRED_DATASET:
        return None
    from dpcore.data.registry import FASHION_HINT

    return (f"Fashion-MNIST is not installed on this machine ({FASHION_HINT}), so the workbench opened "
            "on digits: 1,438 training rows, which need ε = 10 for a useful private model.")


def demo_rows(total_rows: int | None) -> int | None:
    """The row limit (`n`, train + test) a live demo uses on a dataset of `total_rows`: DEMO_ROWS
    for large sets, None (all rows) for the others."""
    return DEMO_ROWS if total_rows is not None and total_rows > DEMO_ROWS else None


FILE_EPSILON = 1.0  # an uploaded file's default ε: a constant, the model's own default (the CLI's)


def public_size(data: dict, n: int) -> int | None:
    """`dpcore.runs.config.public_row_count` of a page's data choice (`n` for a built-in, None for a
    file): pass the result to the defaults below."""
    from dpcore.runs.config import public_row_count

    return public_row_count(data.get("dataset") if isinstance(data, dict) else None, n)


def model_defaults(config_class, public_rows: int | None) -> dict:
    """{field: default} of a model's config on `public_rows` public training rows (`public_size`):
    the declarations' own (dpcore.models.params.defaults), the ones a RunConfig fills in for the CLI,
    the Story, sweeps and notebooks, so the Train page trains the model they train."""
    from dpcore.models.params import defaults

    return defaults(config_class, public_rows)


def _p3gm_default(name: str, n: int | None):
    from dpcore.models import config_class
    from dpcore.models.params import config_field, size_default

    return size_default(config_field(config_class("p3gm"), name), n)


def default_epsilon(n: int | None) -> float:
    """P3GM's default ε for `n` public training rows (None: a file → FILE_EPSILON), declared with
    its field (dpcore.models.params.EPSILON_BY_SIZE): small data needs a larger ε."""
    return float(_p3gm_default("epsilon", n))


def default_epochs(n: int | None) -> int | None:
    """P3GM's default epochs for `n` public training rows (None: the model's own `auto`, which a run
    resolves from ñ; always for a file), declared with its field (EPOCHS_BY_SIZE)."""
    return _p3gm_default("epochs", n)


def size_defaults(n: int | None) -> dict:
    """{"epsilon", "epochs"} of a private run on `n` public training rows (`public_size`; None for
    a file: constants); epochs None = the model's auto, resolved from ñ in the run."""
    return {"epsilon": default_epsilon(n), "epochs": default_epochs(n)}


def default_delta(n: int | None = None) -> float:
    """δ default: the models' declared default (1e-5, the CLI's), a constant for every dataset.

    Why not min(1e-5, 1/n^1.1): above 35 000 rows that δ gives the exact n back from config.json.
    1e-5 stays below 1/n for every dataset the workbench trains on (MNIST's 60 000 rows: 1.7e-5).
    `n` is accepted for the callers that pass it and not used.
    """
    from dpcore.models.params import DEFAULT_DELTA

    return DEFAULT_DELTA


def default_data_choice(dataset: str | None = None) -> dict:
    """The data choice a session starts with (or a built-in just picked): its demo rows, split 0."""
    name = dataset or default_dataset()
    choice = {"dataset": name, "test_size": 0.2, "split_seed": 0, "outlier": False}
    info = _builtins().get(name)
    n = demo_rows(info.rows if info is not None else None)  # the Data page's rule for its row limit
    if n is not None:
        choice["n"] = n
    return choice


def budget_note(n: int, data: dict | None = None) -> str:
    """The Data page's line on the budget this dataset's size calls for (`data`: the data choice;
    a file's size is private, so its default is a constant)."""
    if data is not None and public_size(data, n) is None:
        return (f"Default budget for an uploaded file: ε = {FILE_EPSILON:g}, whatever its size (a default "
                "computed from the row count would publish it); epochs and batch are resolved in the run "
                "from the released noisy row count.")
    eps = default_epsilon(n)
    why = ("small data needs a larger ε: the noise that hides one row is the same whatever the size, "
           "so fewer rows carry less signal through it")
    return (f"Default budget for {n:,} training rows: ε = {eps:g} (the Story page's private run). "
            + ("Large enough for ε = 1 to give a clearly useful private model." if eps <= 1 else f"Why not 1: {why}."))


def dataset_why(name: str, train_n: int) -> str | None:
    """The Data page's one sentence on why the app opens on this dataset (None for the others)."""
    if name != PREFERRED_DATASET:
        return None
    return (f"Why Fashion-MNIST: with {train_n:,} training rows a private model at ε = 1 already keeps most of "
            "the real data's usefulness and trains in about a minute, while small data (digits: 1,438 rows) "
            "needs a larger ε (10) for the same.")


def valid_dataset(value) -> str | None:
    """A built-in dataset name from a URL's ?dataset= (None when not on the allow-list or not
    installed): the URL is typed by anyone, so only the registry's own names pass."""
    from dpcore.data.registry import BUILTINS

    if not isinstance(value, str) or value not in BUILTINS or not _available().get(value):
        return None
    return value
