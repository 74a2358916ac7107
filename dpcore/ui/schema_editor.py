"""The Data page's schema editor as data: one row per column, and the edits turned into a data choice.

Why a module of its own: what the editor shows (a kind per column, bounds, categories, a note where
inference had a problem) and what the user's edits declare (kinds, public bounds and categories,
dropped columns) are pure functions of a table, testable without a browser; the page only draws.
A column of dates is kind "date" (dpcore.data.dates) with its range in the note; a column inference
cannot type (a free-text field, too many levels) is a note on its row with "drop" proposed, never
an error that hides the editor.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from dpcore.data.schema import KINDS
from dpcore.errors import DPCoreError

DROP = "drop"
DATE = "date"
EDITOR_KINDS = (*KINDS, DATE, DROP)
CONTINUOUS = ("numeric", "integer")
MAX_TARGET_CLASSES = 50


def target_problem(frame: pd.DataFrame, target: str | None) -> str | None:
    """Why `target` cannot be the label to predict (None when it can)."""
    if target is None:
        return None
    values = frame[target].astype("str").str.strip()
    levels = values[values != ""].nunique()
    if levels < 2:
        return f"target column {target!r} has {levels} class{'es' if levels != 1 else ''}; it needs at least two"
    if levels > MAX_TARGET_CLASSES:
        return (f"target column {target!r} has {levels:,} distinct values; a target is a class to predict "
                f"(at most {MAX_TARGET_CLASSES}, e.g. yes/no): choose another column or (none)")
    return None


def guess_target(frame: pd.DataFrame) -> str | None:
    """The column the page proposes as target: one named like a label, else the last column that can
    be one (2 to MAX_TARGET_CLASSES classes), else none."""
    usable = [c for c in frame.columns if target_problem(frame, c) is None]
    named = [c for c in usable if str(c).strip().lower() in ("target", "label", "class", "y", "outcome")]
    return (named or usable or [None])[-1]


def schema_rows(frame: pd.DataFrame, target: str | None) -> pd.DataFrame:
    """The editor's rows: column, kind, lower, upper, categories, public, note (typed columns, so
    an empty bound shows blank, not "None")."""
    from dpcore.data import infer_schema
    from dpcore.data.dates import date_format, from_days, to_days

    rows = []
    for name in frame.columns:
        fmt = date_format(frame[name]) if name != target else None
        if fmt is not None:
            days = to_days(frame[name], fmt)
            first, last = from_days(np.array([np.nanmin(days), np.nanmax(days)]), fmt)
            rows.append({"column": name, "kind": DATE, "lower": None, "upper": None, "categories": "",
                         "public": False, "note": f"dates ({fmt}), {first} to {last} in the rows: learnt as "
                                                  "day numbers, written back as dates"})
            continue
        try:
            spec = infer_schema(frame[[name]], target=name if name == target else None).columns[0]
        except DPCoreError as exc:
            rows.append({"column": name, "kind": DROP, "lower": None, "upper": None, "categories": "",
                         "public": False, "note": f"{exc} — dropped unless you declare it"})
            continue
        continuous = spec.kind in CONTINUOUS and name != target
        rows.append({"column": name, "kind": spec.kind,
                     "lower": spec.lower if continuous else None, "upper": spec.upper if continuous else None,
                     "categories": "" if spec.categories is None else ", ".join(map(str, spec.categories)),
                     "public": False, "note": "the target" if name == target else ""})
    out = pd.DataFrame(rows, columns=["column", "kind", "lower", "upper", "categories", "public", "note"])
    return out.astype({"column": "string", "kind": "string", "lower": "float64", "upper": "float64",
                       "categories": "string", "public": "bool", "note": "string"})


def declared_from_edits(inferred: pd.DataFrame, edited: pd.DataFrame, target: str | None,
                        dp_bounds: bool) -> dict:
    """The data-choice fields the edits declare: types, bounds, categories, drop (empty ones left out).

    A kind counts as declared (public) once the user vouches for it: changed it, ticked public, or
    asked for DP bounds on a continuous column; bounds and categories only when ticked public.
    """
    if target is not None and edited.set_index("column").loc[target, "kind"] == DROP:
        raise DPCoreError(f"the target column {target!r} cannot be dropped; choose another target or (none)")
    types, bounds, cats, drop = {}, {}, {}, []
    guessed = inferred.set_index("column")["kind"]
    for r in edited.to_dict("records"):
        name, kind = str(r["column"]), str(r["kind"])
        if kind == DROP:
            drop.append(name)
            continue
        public = bool(r.get("public")) and not pd.isna(r.get("public"))
        continuous = kind in CONTINUOUS and name != target
        if kind == DATE:  # bounds of dates: from the rows, or DP-estimated (declaring the kind)
            if kind != guessed[name] or dp_bounds:
                types[name] = DATE
            continue
        if kind != guessed[name] or public or (dp_bounds and continuous):
            types[name] = kind
        if not public:
            continue
        if continuous:
            lo, hi = r.get("lower"), r.get("upper")
            if pd.isna(lo) or pd.isna(hi):
                raise DPCoreError(f"column {name!r} is ticked public: give its lower and upper bounds")
            if not float(lo) < float(hi):
                raise DPCoreError(f"column {name!r}: lower bound {lo:g} must be below upper bound {hi:g}")
            bounds[name] = [float(lo), float(hi)]
        elif kind == "categorical" and str(r.get("categories") or "").strip():
            cats[name] = [v.strip() for v in str(r["categories"]).split(",") if v.strip()]
    if len(drop) == len(edited) - (target is not None):
        raise DPCoreError("every feature column is dropped; keep at least one")
    out = {"types": types, "bounds": bounds, "categories": cats, "drop": drop}
    return {k: v for k, v in out.items() if v}
