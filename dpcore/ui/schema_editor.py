"""The Data page's schema editor as data: one row per column, and the edits turned into a data choice.

Why a module of its own: what the editor shows (a kind per column, bounds, categories, a note where
inference had a problem) and what the user's edits declare (kinds, public bounds and categories,
dropped columns) are pure functions of a table, testable without a browser; the page only draws.
A column of dates is kind "date" (dpcore.data.dates) with its range in the note and the format
inference proposes in its "format" cell, for the user to confirm or change: the format the edits
declare is that cell's, so one row of the file never chooses it. A column inference cannot type (a
free-text field, too many levels) is a note on its row with "drop" proposed, never an error that
hides the editor.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from dpcore.data.schema import KINDS
from dpcore.errors import DPCoreError

DROP = "drop"
DATE = "date"
EDITOR_KINDS = (*KINDS, DATE, DROP)
CONTINUOUS = ("numeric", "integer")
MAX_TARGET_CLASSES = 50
# Where the bounds of a numeric/date column without typed bounds come from, in the order the editor
# offers them: declared (public knowledge), DP-estimated (ledgered), read off the rows (not covered).
DECLARE, ESTIMATE, READ = "declare", "dp", "rows"
BOUNDS_MODES = {DECLARE: "declare them (public knowledge)", ESTIMATE: "estimate with DP (covered by ε)",
                READ: "read from the rows (not covered by ε)"}


def target_problem(frame: pd.DataFrame, target: str | None) -> str | None:
    """Why `target` cannot be the label to predict (None when it can)."""
    if target is None:
        return None
    levels = _classes(frame[target])
    if levels < 2:
        return f"target column {target!r} has {levels} class{'es' if levels != 1 else ''}; it needs at least two"
    if levels > MAX_TARGET_CLASSES:
        return (f"target column {target!r} has {levels:,} distinct values; a target is a class to predict "
                f"(at most {MAX_TARGET_CLASSES}, e.g. yes/no): choose another column or (none)")
    return None


# Names that say "the label to predict": the generic ones of ML exports, and the yes/no outcomes
# of the tables people bring (a loan's deny/approved/default, churn, HR attrition, fraud, a
# hospital's readmitted, survived). A name matches whole or as its last word (loan_default, is_fraud).
TARGET_NAMES = frozenset({"target", "label", "class", "outcome", "y", "response", "deny", "denied",
                          "approved", "default", "churn", "attrition", "fraud", "readmitted", "survived"})


def _named_like_target(name) -> bool:
    words = [w for w in re.split(r"[^a-z0-9]+", str(name).strip().lower()) if w]
    return bool(words) and ("".join(words) in TARGET_NAMES or (len(words) > 1 and words[-1] in TARGET_NAMES))


def guess_target(frame: pd.DataFrame) -> str | None:
    """The column the page proposes as target, among those that can be one (2 to MAX_TARGET_CLASSES
    classes): the last one named like a target (TARGET_NAMES), else the last with two classes (an
    outcome is most often yes/no), else the last usable one, else none.

    Why not simply the last column: exports put the outcome anywhere; a mortgage table ending in
    `property_type` had its target `deny` in the middle (issue 40)."""
    usable = [c for c in frame.columns if target_problem(frame, c) is None]
    named = [c for c in usable if _named_like_target(c)]
    binary = [c for c in usable if _classes(frame[c]) == 2]
    return (named or binary or usable or [None])[-1]


def _classes(values: pd.Series) -> int:
    text = values.astype("str").str.strip()
    return int(text[text != ""].nunique())


def schema_rows(frame: pd.DataFrame, target: str | None) -> pd.DataFrame:
    """The editor's rows: column, kind, lower, upper, categories, public, format (a date column's,
    proposed), note.

    Bounds start empty (the page shows "—"): a range is declared by typing it, as public knowledge
    (age 0 to 120), never prefilled from the rows; the rows' own range is in the note for the data
    owner to see. Every column is text or typed, so no cell mixes types (no Arrow conversion error).
    """
    from dpcore.data import infer_schema
    from dpcore.data.dates import date_format, from_days, to_days

    rows = []
    for name in frame.columns:
        fmt = date_format(frame[name]) if name != target else None
        if fmt is not None:
            days = to_days(frame[name], fmt)
            first, last = from_days(np.array([np.nanmin(days), np.nanmax(days)]), fmt)
            rows.append({"column": name, "kind": DATE, "format": fmt, "categories": "",
                         "note": f"{first} to {last} in the rows (format {fmt} proposed from the rows: check it)"})
            continue
        try:
            spec = infer_schema(frame[[name]], target=name if name == target else None).columns[0]
        except DPCoreError as exc:
            rows.append({"column": name, "kind": DROP, "categories": "",
                         "note": f"{exc} — dropped unless you declare it"})
            continue
        continuous = spec.kind in CONTINUOUS and name != target
        note = "the target (a class to predict)" if name == target else ""
        if continuous and spec.lower is not None:
            note = f"{spec.lower:g} to {spec.upper:g} in the rows"
        rows.append({"column": name, "kind": spec.kind,
                     "categories": "" if spec.categories is None else ", ".join(map(str, spec.categories)),
                     "note": note})
    # format after public: the columns before it keep their places (the browser journey clicks them)
    out = pd.DataFrame(rows, columns=["column", "kind", "lower", "upper", "categories", "public", "format", "note"])
    out["public"] = out["public"].fillna(False)
    return out.astype({"column": "string", "kind": "string", "format": "string", "lower": "string",
                       "upper": "string", "categories": "string", "public": "bool", "note": "string"})


def continuous_columns(rows: pd.DataFrame, target: str | None) -> list[str]:
    """The feature columns whose bounds matter: numeric, integer and date columns not dropped."""
    return [str(r["column"]) for r in rows.to_dict("records")
            if str(r["kind"]) in (*CONTINUOUS, DATE) and r["column"] != target]


def dp_bounds_rows_needed(columns: int, noise_multiplier: float, dates: bool = False) -> int:
    """Rows from which DP bounds (dpcore.data.dp_bounds) are usable for `columns` columns: below it
    the Data page warns and asks for declared bounds (it never changes its default on the private
    row count, which the run's settings would publish).

    A power-of-two bin is kept when its noisy count clears τ = z·σ·√k (z = THRESHOLD_SDS, 3.72; a
    date column's year grid has more bins, DATE_THRESHOLD_SDS 3.89, so `dates`: one of the columns
    is a date). A column spread over four such bins (ages 16–128, incomes' magnitudes) has 2τ rows
    in its average bin at 8τ rows: each bin then clears τ by z noise sds. Below that,
    studies/dp_bounds.py finds the ends clipped or the estimate refused (120 rows, 5 columns, σ = 10:
    refused in 20 of 20 draws).
    """
    import math

    from dpcore.data.dp_bounds import DATE_THRESHOLD_SDS, THRESHOLD_SDS

    z = max(THRESHOLD_SDS, DATE_THRESHOLD_SDS) if dates else THRESHOLD_SDS
    return math.ceil(8 * z * noise_multiplier * math.sqrt(max(1, columns)))


def dp_bounds_epsilon(columns: int, noise_multiplier: float, delta: float) -> float:
    """The ε of the DP bounds' one ledger record on its own (the accountant's), to say its share."""
    import math

    from dpcore.privacy.accountant import epsilon
    from dpcore.privacy.ledger import PrivacyLedger

    record = {"name": "preprocessing: noisy bounds", "mechanism": "gaussian", "noise_multiplier": noise_multiplier,
              "sampling_rate": 1.0, "steps": 1, "sensitivity": math.sqrt(max(1, columns))}
    return float(epsilon(PrivacyLedger.from_list([record]), delta))


def _bound(text, name: str, kind: str) -> float | None:
    """One typed bound: a number, or for a date column a YYYY-MM-DD date (as its day number)."""
    if text is None or pd.isna(text) or not str(text).strip():
        return None
    text = str(text).strip()
    if kind == DATE:
        from dpcore.data.dates import to_days

        day = to_days(pd.Series([text]), "%Y-%m-%d")[0]
        if not np.isfinite(day):
            raise DPCoreError(f"column {name!r}: bound {text!r} is not a date written YYYY-MM-DD")
        return float(day)
    try:
        value = float(text.replace(",", ""))
    except ValueError:
        raise DPCoreError(f"column {name!r}: bound {text!r} is not a number") from None
    if not np.isfinite(value):
        raise DPCoreError(f"column {name!r}: bound {text!r} is not a finite number")
    return value


def _date_format(text, name: str) -> str:
    """A date column's format cell: one of dpcore.data.dates.FORMATS (the schema's allow-list)."""
    from dpcore.data.dates import FORMATS

    fmt = None if text is None or pd.isna(text) else str(text).strip()
    if fmt not in FORMATS:
        raise DPCoreError(f"column {name!r}: choose its date format, one of {', '.join(FORMATS)}"
                          + (f" (got {fmt!r})" if fmt else ""))
    return fmt


def declared_from_edits(inferred: pd.DataFrame, edited: pd.DataFrame, target: str | None,
                        mode: str = DECLARE) -> dict:
    """The data-choice fields the edits declare: types, bounds, categories, drop, date_formats (empty
    ones left out). A date column's format is always declared: the one in its format cell.

    Bounds typed on a row are declared (public). The columns left without them follow `mode`:
    DECLARE refuses (name them), ESTIMATE declares their kinds so `DataConfig.dp_bounds_noise`
    estimates their bounds under DP, READ leaves them to the rows (not covered by ε). Categories
    count as declared once ticked public; a kind once the user changed it.
    """
    if mode not in BOUNDS_MODES:
        raise DPCoreError(f"bounds mode must be one of {', '.join(BOUNDS_MODES)}, got {mode!r}")
    if target is not None and edited.set_index("column").loc[target, "kind"] == DROP:
        raise DPCoreError(f"the target column {target!r} cannot be dropped; choose another target or (none)")
    types, bounds, cats, drop, undeclared, formats = {}, {}, {}, [], [], {}
    guessed = inferred.set_index("column")["kind"]
    for r in edited.to_dict("records"):
        name, kind = str(r["column"]), str(r["kind"])
        if kind == DROP:
            drop.append(name)
            continue
        public = bool(r.get("public")) and not pd.isna(r.get("public"))
        if kind == DATE and name != target:
            formats[name] = _date_format(r.get("format"), name)
        if kind in (*CONTINUOUS, DATE) and name != target:
            lo, hi = _bound(r.get("lower"), name, kind), _bound(r.get("upper"), name, kind)
            if lo is None and hi is None and not public:
                if mode == DECLARE:
                    undeclared.append(name)
                elif mode == ESTIMATE or kind != guessed[name]:
                    types[name] = kind
                continue
            if lo is None or hi is None:
                raise DPCoreError(f"column {name!r}: give both its lower and upper bounds (or neither)")
            if not lo < hi:
                raise DPCoreError(f"column {name!r}: lower bound {r['lower']} must be below upper bound {r['upper']}")
            types[name], bounds[name] = kind, [lo, hi]
            continue
        if kind != guessed[name] or public:
            types[name] = kind
        if public and kind == "categorical" and str(r.get("categories") or "").strip():
            cats[name] = [v.strip() for v in str(r["categories"]).split(",") if v.strip()]
    if len(drop) == len(edited) - (target is not None):
        raise DPCoreError("every feature column is dropped; keep at least one")
    if undeclared:
        raise DPCoreError(f"declare the bounds of {', '.join(map(repr, undeclared))} (public knowledge, e.g. "
                          f"age 0 to 120), or choose \"{BOUNDS_MODES[ESTIMATE]}\" or \"{BOUNDS_MODES[READ]}\"")
    out = {"types": types, "bounds": bounds, "categories": cats, "drop": drop, "date_formats": formats}
    return {k: v for k, v in out.items() if v}
