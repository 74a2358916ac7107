"""Plain-words warnings about a synthetic set: a class it never generates, a column that collapsed
to one value, a utility at or below what guessing gets.

Why: a utility of 0.10 or a synthetic set with one class reads as "a bad number" unless someone
says what went wrong; these checks name it (numbers only, no Streamlit; labels are returned raw
and escaped by whoever displays them).
"""
from __future__ import annotations

import math

import numpy as np

COLLAPSE_STD = 1e-3  # a synthetic column this flat is one value
REAL_STD = 0.05  # … while the real column clearly varies (in the encoded [0, 1] scale)


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


def synthetic_warnings(synthetic, train, test=None, utility=None) -> list[str]:
    """Warnings, most serious first ([] when nothing looks wrong). `utility`: a UtilityResult or None."""
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
    xs, xr = np.asarray(synthetic.features, dtype=np.float64), np.asarray(train.features, dtype=np.float64)
    if xs.shape[1] == xr.shape[1] and xs.shape[0] > 1:
        flat = (xs.std(axis=0) < COLLAPSE_STD) & (xr.std(axis=0) > REAL_STD)
        if flat.any():
            what = "pixels" if train.is_image else "encoded columns"
            out.append(f"{int(flat.sum())} {what} collapsed to a single value in the synthetic data while "
                       "they vary in the real data.")
    if utility is not None:
        metric = utility.metrics[0]
        value = utility.mean.get(metric)
        chance = chance_level(test, metric)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            out.append("Utility could not be measured: the synthetic data has too few classes to train a classifier.")
        elif chance is not None and value <= chance + 0.01:
            out.append(f"Utility ({metric} {value:.3f}) is at or below chance ({chance:.3f}): classifiers trained "
                       "on these rows learn nothing about the real data. Try a larger ε or more epochs.")
    return out


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
