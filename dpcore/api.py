"""The Python API in one call: a pandas DataFrame (or a Dataset) in, a fitted model out.

    from dpcore import fit, recommend
    rec = recommend(df, schema={"target": "y"})              # rec.model ("aim" for a table), rec.reason
    model = fit(df, model=rec.model, epsilon=1.0, target="y")  # model.epsilon, model.ledger
    rows = model.sample(1000).to_frame()                     # synthetic rows in df's columns

Why one function: it takes the path a run takes (`dpcore.jobs.runner.prepare`) — the table is
checked and encoded by `dataset_from_frame`, the model's `plan` checks every setting against the
rows and resolves its `auto` fields before any work, a size-dependent one is left to the released
noisy count ñ — so a script, a notebook, the CLI and the app train the same model for the same
settings. The model is the same object a run saves (`model.save(dir)`, `dpcore.models.load_model`).
"""
from __future__ import annotations

from typing import Any

# The table options `fit` passes to `dataset_from_frame` (everything else is a model setting).
FRAME_OPTIONS = ("types", "bounds", "categories", "date_formats", "nullable", "missing", "undeclared", "max_levels")


def fit(data, model: str = "p3gm", *, target: str | None = None, schema=None, epsilon: float | None = None,
        delta: float | None = None, callback=None, **settings: Any):
    """Train registered model `model` on `data` and return it fitted.

    data: a pandas DataFrame (encoded with `schema`, or a schema inferred from the rows: declare
    `bounds`/`categories`/`types`/`date_formats` to keep the preprocessing covered by ε, see
    `dpcore.data.dataset_from_frame`) or a `dpcore.data.Dataset`. target: the label column.
    epsilon, delta and `settings` are the model's config fields (`dpcore.models.config_class(model)`);
    a field left out takes the model's default, resolved by its plan. callback(event) streams one
    TrainingEvent per step (return False to stop early, the model stays usable).

    The returned model has `epsilon` and `delta` (the accountant's, from its `ledger`), `sample(n,
    seed)` → Dataset (`.to_frame()` for a DataFrame) and `save(dir)`. Bad input raises a one-line
    `dpcore.errors.DPCoreError` before any training starts.
    """
    from dpcore.data.dataset import Dataset
    from dpcore.errors import InvalidParameter
    from dpcore.models import get_model

    cls = get_model(model)
    frame_options = {k: settings.pop(k) for k in FRAME_OPTIONS if k in settings}
    if isinstance(data, Dataset):
        if target is not None or schema is not None or frame_options:
            raise InvalidParameter("target, schema and table options apply to a DataFrame, not to a Dataset")
        train = data
    else:
        from dpcore.data.csv import dataset_from_frame

        train = dataset_from_frame(data, target=target, schema=schema, **frame_options)
    values = dict(settings)
    if epsilon is not None:
        values["epsilon"] = epsilon
    if delta is not None:
        values["delta"] = delta
    fitted = unfitted_model(cls, values, train)
    fitted.fit(train, callback=callback)
    return fitted


def recommend(data, schema=None, time_budget: float | None = None):
    """The model to start with for `data` and why: a Recommendation(model, reason), the one the
    Train page preselects and `python -m dpcore recommend` prints (dpcore.models.recommend: P3GM
    for images, AIM for tables, MST when AIM would outlast `time_budget` seconds or the table is
    very wide). data: a DataFrame (only its column names are read; `schema`, a Schema or
    {"target": column}, names the target), a Dataset, a Schema or a built-in's name."""
    from dpcore.models.recommend import recommend as _recommend

    return _recommend(data, schema=schema, time_budget=time_budget)


def unfitted_model(cls, values: dict, train):
    """`cls` with the config a run of these settings on `train` gets (`jobs.runner.prepare`): the
    plan's checks and resolved `auto` fields, a size-dependent one left `auto` for `fit` to resolve
    from the released noisy count ñ, never from the exact n."""
    from dpcore.models.params import config_from_dict

    plan = cls.plan(config_from_dict(cls.config_class, values), train)
    left_auto = {f: None for f in cls.size_auto_fields if values.get(f) is None}
    return cls(config_from_dict(cls.config_class, {**plan.params, **left_auto}))
