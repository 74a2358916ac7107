"""The HTML pieces both reports are made of: the page's style, tables (rows, numbers, settings,
utility scores) and folded details (no figures, no run).

Why apart from dpcore.release: the reports' wording and structure live there; these only lay out
values safely (every label and value escaped; a missing cell is blank, never "<NA>" or "nan"), and
every table scrolls inside the page's width instead of pushing the page sideways.
"""
from __future__ import annotations

import html
import math
from typing import Any

TABLE_ROWS = 20


CSS = ("body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222;"
        "background:#fff}table{border-collapse:collapse;margin:.5em 0;display:block;max-width:100%;overflow-x:auto}"
        "th,td{padding:4px 12px;border-bottom:1px solid #ddd;text-align:left;color:#222;background:#fff}"
        "th{font-weight:600;background:#f2f4f7}td.num{text-align:right;font-variant-numeric:tabular-nums}"
        "h2{margin-top:2em}.note{color:#555}.lead{font-size:1.12em;line-height:1.55;max-width:60em}"
       "details>summary{cursor:pointer;color:#333}"
        ".summary{border:1px solid #ccd;border-radius:6px;padding:.6em 1.2em;background:#f8f9fb}"
        ".summary h2{margin-top:.3em}.summary li{margin:.3em 0}.summary td,.summary th{background:transparent}"
        ".private{background:#b3261e;color:#fff;padding:4px 10px;font-weight:600}"
        ".shareable{background:#2e7d32;color:#fff;padding:4px 10px;font-weight:600}"
        ".partial{background:#8a4b00;color:#fff;padding:4px 10px;font-weight:600}"
        "@media print{.private.page{position:fixed;top:0;left:0;right:0}}")


def fmt(v) -> str:
    """A number or label for HTML (escaped; ∞ and NaN spelled out)."""
    if isinstance(v, float):
        if math.isinf(v):
            return "∞"
        if math.isnan(v):
            return "—"
        return f"{v:.4g}"
    return html.escape(str(v))


def settings_in_words(params: dict[str, Any], config_class=None) -> str:
    """The run's settings for people: what each one is (the model's own declaration) and its value."""
    helps = {}
    if config_class is not None:
        import dataclasses

        helps = {f.name: f.metadata.get("help", "") for f in dataclasses.fields(config_class)}
    rows = "".join(f"<tr><td>{html.escape(helps.get(k) or k)}</td><td><code>{html.escape(str(k))}</code></td>"
                   f"<td class='num'>{cell(v) if isinstance(v, float) else fmt(v)}</td></tr>"
                   for k, v in sorted(params.items(), key=lambda kv: (not helps.get(kv[0]), kv[0])))
    return f"<table><tr><th>setting</th><th>name</th><th>value</th></tr>{rows}</table>" if params else ""


def utility_table(result) -> str:
    """The train-on-synthetic/test-on-real scores as a plain HTML table (one row per classifier and
    the mean; per metric, synthetic → real next to the real → real reference)."""
    def cell(v) -> str:
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))
        return f"<td class='num'>{float(v):.3f}</td>" if ok else "<td class='num'>—</td>"

    ref = result.reference or None
    head = "<th>classifier</th>" + "".join(
        f"<th>{html.escape(m)} (synthetic → real)</th>" + (f"<th>{html.escape(m)} (real → real)</th>" if ref else "")
        for m in result.metrics)
    rows = []
    for name in list(result.rows) + ["mean"]:
        scores = result.mean if name == "mean" else result.rows[name]
        refs = (ref["mean"] if name == "mean" else ref.get("classifiers", {}).get(name, {})) if ref else {}
        cells = "".join(cell(scores.get(m)) + (cell(refs.get(m)) if ref else "") for m in result.metrics)
        label = f"<b>{html.escape(str(name))}</b>" if name == "mean" else html.escape(str(name))
        rows.append(f"<tr><td>{label}</td>{cells}</tr>")
    notes = "".join(f"<p class='note'>{html.escape(n)}</p>" for n in (result.notes or []))
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>{notes}"


def numbers_table(numbers: dict[str, Any]) -> str:
    return "<table>" + "".join(f"<tr><th>{html.escape(str(k))}</th><td>{fmt(v)}</td></tr>"
                               for k, v in numbers.items()) + "</table>"


def cell(v, decimals: int | None = None) -> str:
    """A table value for people: a column's own precision, whole numbers whole, never 1.728e+04."""
    import numpy as np

    if isinstance(v, (float, np.floating)) and math.isfinite(float(v)):
        v = float(v)
        if decimals is not None:
            return f"{v:.{decimals}f}"
        if v.is_integer() and abs(v) < 1e15:
            return str(int(v))
        return np.format_float_positional(v, precision=6, unique=True, fractional=False, trim="-")
    if v is None or _missing(v):
        return ""
    return fmt(v)


def _missing(v) -> bool:
    """NaN, pandas' <NA> and NaT: a missing cell, shown blank like an empty one."""
    import pandas as pd

    try:
        return bool(pd.api.types.is_scalar(v) and pd.isna(v))
    except (TypeError, ValueError):
        return False


def shown_decimals(spec) -> int | None:
    """The decimals a column's numbers are shown with: its own (declared, or as the file writes them),
    else about three significant digits of its public range (declared or DP bounds: a function of
    the bounds, never of the rows), so age 0–120 reads 32, not 32.1933; None: not a number column."""
    if getattr(spec, "decimals", None) is not None:
        return spec.decimals
    lo, hi = getattr(spec, "lower", None), getattr(spec, "upper", None)
    if getattr(spec, "kind", None) != "numeric" or lo is None or hi is None or not float(hi) > float(lo):
        return None
    return max(0, 3 - math.ceil(math.log10(float(hi) - float(lo))))


def rows_table(frame, max_rows: int = TABLE_ROWS, schema=None) -> str:
    """The first rows of a DataFrame as an escaped HTML table (column names and values are data);
    numbers in their column's precision when `schema` gives one (`shown_decimals`)."""
    decimals = {}
    if schema is not None:
        decimals = {c.name: d for c in schema.columns if (d := shown_decimals(c)) is not None}
    places = [decimals.get(c) for c in frame.columns]
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    body = "".join("<tr>" + "".join(f"<td>{cell(v, d)}</td>" for v, d in zip(row, places)) + "</tr>"
                   for row in frame.head(max_rows).itertuples(index=False))
    return f"<table><tr>{head}</tr>{body}</table>"


def folded(summary: str, content: str) -> str:
    """Detail a reader opens when they want it (a 19-row ledger does not push the point off-screen)."""
    return f"<details><summary>{html.escape(summary)}</summary>{content}</details>"
