"""Which model to start with, from public facts about the data only: its kind (image or table) and,
for a table, its number of columns. Never its row count or its values.

Why: the Train page preselected P3GM for every dataset, and on an uploaded mortgage table P3GM's
rows did not predict the target at ε = 1 (AUROC 0.38–0.40) where AIM, found only by trying,
reached 0.77 (issue 40). The rule:

- **images → P3GM**: the workbench's image model (Fashion-MNIST at ε = 1 keeps about 0.86 of the
  real rows' utility, docs/workbench.md); AIM and MST refuse images.
- **tables → AIM**: docs/tabular.md's benchmark ranks it first at ε = 1 on every table it scores
  (`BENCHMARK_FIRST`, checked against the doc by tests/models/test_recommend.py).
- **→ MST** instead when AIM's fit would outlast the caller's `time_budget` (seconds), or, without
  a budget, on a table wider than `WIDE_COLUMNS` columns, where AIM at its defaults is too slow on
  two CPU cores. MST is AIM's marginal-based sibling, level with it on the benchmark's 1- and
  2-way TVDs (behind it and P3GM on train-on-synthetic AUC), and fits in seconds to a minute or two.

Fit times at the defaults (AIM's `max_time` 300 s), ε = 1, one fit each, the built-in split
(`load_split(name, test_size=0.2)`, planned and fitted as `dpcore.api` does), on the development
machine's 2 CPU cores shared with other work (1-minute load average before → after each fit); the
31-column row is docs/tabular.md's `wide` bench table (its fits at the defaults, load 7–15):

| table | feature columns | AIM s | MST s | load (AIM; MST) |
|---|---|---|---|---|
| cps1988 (22 524 training rows) | 6 | 13 | 5 | 1.8 → 1.8; 1.9 → 1.8 |
| two-gaussians (1 600) | 10 | 31 | 10 | 1.0 → 1.9; 0.5 → 1.0 |
| credit (3 563) | 13 | 86 | 9 | 1.8 → 3.9; 1.8 → 1.8 |
| wide (1 176), docs/tabular.md | 30 | 67–187 | 104–155 | 7–15 |
| caravan (4 657) | 85 | 454 | 80 | 5.4 → 4.3; 3.9 → 5.4 |

Rows hardly matter (cps1988 has the most and fits fastest); columns do: each AIM round compiles and
fits a graphical model over the pairs measured so far. The size in rows is therefore left out, so
nothing here needs the exact n (a file's row count is private; only a run's noisy ñ is released).
WIDE_COLUMNS = 40 sits between `wide` (AIM about as fast as MST) and caravan (AIM 7.5 minutes,
MST 1.3).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

IMAGE_MODEL, TABLE_MODEL, FAST_TABLE_MODEL = "p3gm", "aim", "mst"

# docs/tabular.md "## Benchmark", ε = 1: first by the mean of the two train-on-synthetic AUCs
# (logistic regression, gradient boosting), the usefulness the issue measures (cps1988: AIM 0.620
# against P3GM 0.609; credit: AIM 0.662 against P3GM 0.640).
BENCHMARK_FIRST = {"cps1988": "aim", "credit": "aim"}

# (feature columns, AIM s, MST s) at the defaults on 2 cores: the table in the docstring.
MEASURED = ((6, 13, 5), (10, 31, 10), (13, 86, 9), (30, 187, 155), (85, 454, 80))
WIDE_COLUMNS = 40


@dataclass(frozen=True)
class DataKind:
    """The public facts a recommendation reads: image or table, and the feature columns (pixels of
    an image; a table's columns without its target)."""

    image: bool
    columns: int


@dataclass(frozen=True)
class Recommendation:
    model: str
    reason: str

    def to_dict(self) -> dict:
        return asdict(self)


def data_kind(data, schema=None) -> DataKind:
    """The facts of `data`: a DataKind, a built-in's name, a `Dataset`, a `Schema`, a
    `DatasetInfo` or a pandas DataFrame (only its header is read; `schema`, a Schema or the
    declared {"target": …} of the CLI's --schema, names the target so it is not counted)."""
    from dpcore.errors import InvalidParameter

    if isinstance(data, DataKind):
        return data
    if isinstance(data, str):
        from dpcore.data.registry import _canonical_name, list_datasets

        key = _canonical_name(data)
        data = next(i for i in list_datasets() if i.name == key)
    if hasattr(data, "kind") and hasattr(data, "columns") and isinstance(data.columns, int):  # DatasetInfo
        return DataKind(image=data.kind == "image", columns=int(data.columns))
    if hasattr(data, "image_shape") and hasattr(data, "n_features"):  # a Dataset
        if data.image_shape is None and hasattr(data.schema, "feature_columns"):
            return DataKind(image=False, columns=len(data.schema.feature_columns))
        return DataKind(image=data.image_shape is not None, columns=int(data.n_features))
    if hasattr(data, "feature_columns"):  # a Schema
        return DataKind(image=False, columns=len(data.feature_columns))
    names = getattr(data, "columns", None)
    if names is None or not hasattr(data, "iloc"):
        raise InvalidParameter(f"cannot recommend a model for {type(data).__name__}: give a table, a "
                               "dataset or a built-in's name")
    target = schema.get("target") if isinstance(schema, dict) else getattr(schema, "target", None)
    if target is not None and target not in names:
        raise InvalidParameter(f"target column {target!r} not found; columns are: {', '.join(map(str, names))}")
    return DataKind(image=False, columns=len(names) - (target is not None))


def aim_seconds(columns: int) -> int:
    """AIM's fit time at its defaults on 2 cores for a table of `columns` feature columns: the
    measured time of the narrowest measured table at least as wide (so never an underestimate
    within the measured range; beyond it, the widest one's)."""
    return next((aim for width, aim, _ in MEASURED if width >= columns), MEASURED[-1][1])


def mst_seconds(columns: int) -> int:
    """MST's, read the same way."""
    return next((mst for width, _, mst in MEASURED if width >= columns), MEASURED[-1][2])


def recommend(data, schema=None, time_budget: float | None = None) -> Recommendation:
    """The model to start with for `data` (see `data_kind`), and why, in one sentence or two.

    time_budget: seconds the caller can wait for a fit on two cores (None: no limit); AIM gives
    way to MST when its measured fit time for this width exceeds it."""
    from dpcore.errors import check_positive

    if time_budget is not None:
        time_budget = check_positive("time_budget", time_budget)
    facts = data_kind(data, schema)
    if facts.image:
        return Recommendation(IMAGE_MODEL, "P3GM for images: the workbench's image model (on Fashion-MNIST at "
                                           "ε = 1 its rows keep most of the real rows' usefulness); AIM and "
                                           "MST take tables only.")
    aim, mst, cols = aim_seconds(facts.columns), mst_seconds(facts.columns), facts.columns
    first = "docs/tabular.md's benchmark ranks AIM first at ε = 1"
    mst_is = f"MST, level with AIM on the benchmark's marginals, about {mst} s"
    if time_budget is not None and aim > time_budget:
        return Recommendation(FAST_TABLE_MODEL, f"MST for this table: {first}, but on {cols} columns it takes "
                                                f"about {aim} s on two cores, more than the {time_budget:g} s "
                                                f"allowed; {mst_is}.")
    if time_budget is None and cols > WIDE_COLUMNS:
        return Recommendation(FAST_TABLE_MODEL, f"MST for this wide table: {first}, but on {cols} columns "
                                                f"(over {WIDE_COLUMNS}) it takes about {aim} s on two cores; "
                                                f"{mst_is}.")
    return Recommendation(TABLE_MODEL, f"AIM for tables: {first} (its synthetic rows predict the target best "
                                       f"on average); on {cols} columns a fit takes about {aim} s on two cores.")


EPSILON_TOP = 50.0  # the Train page's largest ε (dpcore.ui.forms.EPSILON_CHOICES)


def weak_run_advice(model: str, params: dict, data) -> str:
    """What to try after a run whose synthetic rows do not predict the target: the changes that can
    help and are not already at their limit — the recommended model when the run used another one,
    a larger ε (not past the Train page's EPSILON_TOP, never for a non-private run), more epochs
    (only below `epochs_top`, the top of the Train page's epochs slider), and declaring the schema
    when some columns' kinds or domains were read off the rows.

    Why: "Try a larger ε or more epochs" was shown under a P3GM run on a table whose epochs were
    already at their maximum, while the change that helped (AIM) went unsaid (issue 40)."""
    import math

    from dpcore.errors import DPCoreError

    tries = []
    try:
        rec = recommend(data)
    except DPCoreError:  # advice must never fail a finished run
        rec = None
    if rec is not None and rec.model != model:
        tries.append(f"{rec.model.upper()} (the model recommended for this data)")
    eps = params.get("epsilon")
    if isinstance(eps, (int, float)) and math.isfinite(eps) and eps < EPSILON_TOP:
        tries.append(f"a larger ε than {eps:g}")
    epochs = params.get("epochs")
    # 10 % slack: a run resolves its auto epochs from ñ, epochs_top from the exact rows here
    if isinstance(epochs, int) and epochs * 1.1 < (epochs_top(model, params, data) or 0):
        tries.append(f"more epochs than {epochs}")
    derived = list(getattr(getattr(data, "schema", None), "data_derived", None) or [])
    if derived:
        tries.append(f"declaring the schema on the Data page ({len(derived)} column(s) were read off the rows)")
    if not tries:
        return "Every setting that usually helps is at its limit here; more rows would."
    return "Try " + (tries[0] if len(tries) == 1 else ", ".join(tries[:-1]) + " or " + tries[-1]) + "."


def epochs_top(model: str, params: dict, data) -> int | None:
    """The most epochs the Train page offers this model on `data`: the larger of the field's typical
    top and what its `auto` schedule resolves to (on a table, as many passes as give the schedule's
    steps: more passes at the same ε only add noise per step). None when the model has no epochs."""
    from dpcore.errors import DPCoreError
    from dpcore.models import get_model
    from dpcore.models.params import config_fields, config_from_dict

    cls = get_model(model)
    field = next((p for p in config_fields(cls.config_class) if p.name == "epochs"), None)
    if field is None:
        return None
    try:
        auto = cls.plan(config_from_dict(cls.config_class, {**params, "epochs": None}), data).params["epochs"]
    except DPCoreError:
        auto = None
    return max(field.typical[1] if field.typical else 0, auto or 0)
