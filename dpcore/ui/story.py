"""The Story page's logic: a private and a non-private run side by side, and the sentence that says
what they show. Also the utility badge Compare and Story share (never a "nan" with a green arrow).

Why: a lecturer needs one screen where "privacy costs a little utility and stops the attack" is
visible without reading a table; the numbers come from the runs' cached evaluations.
"""
from __future__ import annotations

import math

MISSING = "—"


def _finite(v) -> float | None:
    if v is None or isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def utility_badge(res) -> dict:
    """What the utility metrics show: label/value, reference label/value and the delta text (None
    when either side is missing, so no "+nan" badge)."""
    metric = res.metrics[0]
    value = _finite(res.mean.get(metric))
    ref = _finite((res.reference or {}).get("mean", {}).get(metric)) if res.reference else None
    return {"label": f"mean {metric}, synthetic → real", "value": MISSING if value is None else f"{value:.3f}",
            "reference_label": f"mean {metric}, real → real",
            "reference": None if not res.reference else (MISSING if ref is None else f"{ref:.3f}"),
            "delta": None if value is None or ref is None else f"{value - ref:+.3f}"}
