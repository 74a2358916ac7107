"""Plain-words warnings about a synthetic set: a class it never generates, a column that collapsed
to one value (named), a utility at or below what guessing gets; and, for a fresh run, the columns
whose preprocessing is not covered by ε and whether the synthetic rows predict the target.

Why: a utility of 0.10 or a synthetic set with one class reads as "a bad number" unless someone
says what went wrong; these checks name it (numbers only, no Streamlit; labels are returned raw
and escaped by whoever displays them).
"""
from __future__ import annotations

import math

import numpy as np

COLLAPSE_STD = 1e-3  # a synthetic column this flat is one value
REAL_STD = 0.05  # … while the real column clearly varies (in the encoded [0, 1] scale)
SPREAD_ROWS = 10_000  # rows a column's spread is read from


def chance_level(test, metric: str) -> float | None:
    """What guessing scores on `test`: the majority class's share (accuracy), 0.5 (AUROC)."""
    if metric == "auroc":
        return 0.5
    if metric == "accuracy" and test is not None and test.labels is not None and test.n:
        return float(np.bincount(test.labels).max() / test.n)
    return None


def _label_name(ds, k: int) -> str:
    names = getattr(ds, "label_names", None)
    return str(names[k]) if names is not None and k < len(names) else str(k)


def _rows_for_spread(features, most: int = SPREAD_ROWS) -> np.ndarray:
    """At most `most` rows, evenly strided over the whole set (a file may be sorted by class), in
    float64: whether a column varies needs no more, and 60 000 Fashion-MNIST rows in float64 took
    ~10 s of every fit's report."""
    x = np.asarray(features)
    step = max(1, -(-x.shape[0] // most))
    return np.asarray(x[::step], dtype=np.float64)


# Said after a weak run when the caller does not know the run's settings (then no limit is known).
GENERIC_ADVICE = "Try a larger ε or the model the Train page recommends for this data."


def synthetic_warnings(synthetic, train, test=None, utility=None, advice: str | None = None) -> list[str]:
    """Warnings, most serious first ([] when nothing looks wrong). `utility`: a UtilityResult or None.
    advice: what to try when utility is at chance (dpcore.report.weak_run_advice, which knows the
    run's settings and their limits); GENERIC_ADVICE without it."""
    out: list[str] = []
    if synthetic is None or synthetic.n == 0:
        return ["The model generated no rows."]
    if synthetic.labels is not None and train.labels is not None:
        real = set(np.unique(train.labels).tolist())
        made = set(np.unique(synthetic.labels).tolist())
        missing = sorted(real - made)
        if missing:
            shown = ", ".join(_label_name(train, k) for k in missing[:5]) + (" …" if len(missing) > 5 else "")
            out.append(f"{len(missing)} of {len(real)} classes never appear in the synthetic data ({shown}): "
                       "a classifier trained on it cannot predict them.")
    xs, xr = _rows_for_spread(synthetic.features), _rows_for_spread(train.features)
    if xs.shape[1] == xr.shape[1] and xs.shape[0] > 1:
        flat = (xs.std(axis=0) < COLLAPSE_STD) & (xr.std(axis=0) > REAL_STD)
        if flat.any():
            k = int(flat.sum())
            what = ("pixel" if train.is_image else "encoded column") + ("s" if k != 1 else "")
            names = collapsed_names(train, np.flatnonzero(flat), xs.mean(axis=0))
            shown = (": " + ", ".join(names[:8]) + (" …" if len(names) > 8 else "")) if names else ""
            out.append(f"{k} {what} collapsed to a single value in the synthetic data while "
                       f"{'it varies' if k == 1 else 'they vary'} in the real data{shown}.")
    if utility is not None:
        out += _usefulness_warning(utility, test, advice)
    return out


def _usefulness_warning(utility, test, advice: str | None) -> list[str]:
    """The one usefulness measure (dpcore.evaluate.usefulness) at chance, in its own words; a
    result without it (scored before it) falls back to the first utility metric."""
    from dpcore.evaluate.usefulness import NAME, from_saved, sentence

    use = from_saved({"usefulness": getattr(utility, "usefulness", None)})
    if use is not None:
        metric, value, chance = NAME, use.value, use.chance
    else:
        metric = utility.metrics[0]
        value, chance = utility.mean.get(metric), chance_level(test, metric)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ["Utility could not be measured: the synthetic data has too few classes to train a classifier."]
    if chance is not None and value <= chance + 0.01:
        said = sentence(use) if use is not None else (f"Utility ({metric} {value:.3f}) is at or below chance "
                                                      f"({chance:.3f}).")
        return [f"{said} Classifiers trained on these rows learn nothing about the real data. "
                + (advice or GENERIC_ADVICE)]
    return []


def collapsed_names(data, columns, synthetic_means=None) -> list[str]:
    """The user's names of encoded columns: `column` (a value), `column=level` (a one-hot level the
    synthetic rows never take; the level every row takes is not listed), `column (missing flag)`;
    [] without a tabular encoder."""
    blocks = getattr(getattr(data, "encoder", None), "blocks", None)
    if not blocks:
        return []
    specs = {c.name: c for c in data.encoder.schema.columns}
    out = []
    for i in columns:
        b = next((b for b in blocks if b.start <= i < b.stop), None)
        if b is None:
            continue
        if b.role == "onehot":
            if synthetic_means is not None and synthetic_means[i] > 0.5:
                continue  # the one level every synthetic row takes: its siblings are the news
            levels = specs[b.column].categories or []
            level = levels[i - b.start] if i - b.start < len(levels) else i - b.start
            out.append(f"{b.column}={level}")
        else:
            out.append(f"{b.column} (missing flag)" if b.role == "missing" else str(b.column))
    return out


def coverage_warnings(train) -> list[str]:
    """The columns whose bounds or levels were read off the rows (preprocessing not covered by ε)."""
    schema = getattr(train, "schema", None)
    cols = list(getattr(schema, "data_derived", None) or [])
    if not cols:
        return []
    shown = ", ".join(map(str, cols[:8])) + (" …" if len(cols) > 8 else "")
    return [f"Preprocessing is NOT covered by ε: the bounds or levels of {len(cols)} column(s) were read off "
            f"the rows ({shown}). Declare them public or estimate them with DP (the Data page's schema; "
            "the CLI's --schema or --bounds dp)."]


def target_check(synthetic, test, seed: int = 0) -> dict | None:
    """Does a classifier trained on the synthetic rows predict the target on the real test rows?
    {"metric", "value", "chance", "predicts", "covered_by_epsilon": False, "text"}: logistic
    regression, scored on real rows, so NOT covered by ε (said in the text). None without a target
    or a test split."""
    if synthetic is None or test is None or synthetic.labels is None or test.labels is None or not test.n:
        return None
    from dpcore.errors import DPCoreError
    from dpcore.evaluate import utility_scores

    try:
        res = utility_scores(synthetic, test, classifiers=["logistic_regression"], seed=seed)
    except (DPCoreError, ValueError):  # a check must never fail a finished run
        return None
    metric = res.metrics[0]
    value = res.mean.get(metric)
    chance = chance_level(test, metric)
    head = "Target check (not covered by ε: scored on the real test rows): "
    if value is None or (isinstance(value, float) and math.isnan(value)) or chance is None:
        return {"metric": metric, "value": None, "chance": chance, "predicts": False, "covered_by_epsilon": False,
                "text": head + "the synthetic rows have too few classes to train a classifier."}
    predicts = value > chance + 0.05
    verdict = "they predict it" if predicts else "they do NOT predict it (at chance)"
    return {"metric": metric, "value": float(value), "chance": float(chance), "predicts": bool(predicts),
            "covered_by_epsilon": False,
            "text": head + f"a logistic regression trained on the synthetic rows scores {metric} {value:.3f} "
                           f"(chance {chance:.2f}): {verdict}."}


def fit_warnings(synthetic, train, test=None, advice: str | None = None) -> tuple[list[str], dict | None]:
    """What `train` and the Train page say after a run: (warnings, target check). Warnings: the
    columns whose preprocessing is not covered, a missing class, the columns that collapsed (named),
    and the target check's text when the rows do not predict the target, followed by `advice`
    (what to try, see synthetic_warnings)."""
    check = target_check(synthetic, test)
    out = coverage_warnings(train) + synthetic_warnings(synthetic, train)
    if check and not check["predicts"] and advice:
        check = {**check, "text": check["text"] + " " + advice}
    return out + ([check["text"]] if check and not check["predicts"] else []), check


def quality_floor(synthetic, train, test, utility, margin: float = 0.02) -> list[str]:
    """What keeps a synthetic set below the floor every model must meet on its defaults ([] when
    none): `synthetic_warnings`, plus a utility that does not beat guessing by `margin`."""
    out = synthetic_warnings(synthetic, train, test, utility)
    if utility is not None and not out:
        metric = utility.metrics[0]
        value, chance = utility.mean.get(metric), chance_level(test, metric)
        if chance is not None and isinstance(value, float) and value <= chance + margin:
            out.append(f"Utility ({metric} {value:.3f}) is within {margin} of chance ({chance:.3f}).")
    elif utility is None and train.labels is not None:
        out.append("Utility could not be measured.")
    return out
