"""Short run names for legends: model, ε and only the settings that differ between the runs shown.

Why: a legend entry made of the full run id ("p3gm-digits-eps1-20261130-161610-…") is truncated and
unreadable next to a plot; a student compares runs by model, ε and the one or two settings that
differ. The full id goes into the hover text instead. No Streamlit here (the reports use it too).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

IGNORED = frozenset({"device", "epsilon", "delta"})  # ε is shown on its own; δ and the device never differ usefully


def _eps(v) -> str:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return "?"
    return "∞" if math.isinf(f) else ("?" if math.isnan(f) else f"{f:.3g}")


def _value(v) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def short_labels(runs: Sequence[dict]) -> list[str]:
    """One short label per run: "model, ε = 1" plus "name=value" for each setting whose value is
    not the same in every run (runs: dicts with "model", "epsilon" and "params"); a clash that
    remains gets "#2", "#3"… so every label is unique."""
    params = [dict(r.get("params") or {}) for r in runs]
    keys = sorted({k for p in params for k in p if k not in IGNORED})
    differ = [k for k in keys if len({repr(p.get(k)) for p in params}) > 1] if len(runs) > 1 else []
    out: list[str] = []
    for r, p in zip(runs, params):
        label = f"{r.get('model', '?')}, ε = {_eps(r.get('epsilon'))}"
        extra = ", ".join(f"{k}={_value(p[k])}" for k in differ if k in p)
        out.append(f"{label}, {extra}" if extra else label)
    seen: dict[str, int] = {}
    for i, label in enumerate(out):
        seen[label] = seen.get(label, 0) + 1
        if seen[label] > 1:
            out[i] = f"{label} #{seen[label]}"
    return out
