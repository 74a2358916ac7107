"""What every page needs: error display, paths and limits, ε for people.

Why here: each page runs inside `guard()` (app.py) and formats
ε the same way; the runs root (defined in dpcore.ui.workspace, beside the other workspace folders)
and the upload limit are read from one place so the pages, the run store and the data layer agree
on them.
"""
from __future__ import annotations

import contextlib
import logging
import math
import os
from pathlib import Path

import streamlit as st

from dpcore.ui.workspace import runs_root  # noqa: F401 (the pages' one import of it; defined with the workspaces)

log = logging.getLogger("dpcore.ui")


# ----------------------------------------------------------------------------- paths and limits
def shown_path(path: Path) -> str:
    """A path as a person reads it: relative to where the app was started, else under ~, else whole."""
    path = path.resolve()
    for base, prefix in ((Path.cwd().resolve(), ""), (Path.home().resolve(), "~/")):
        if path.is_relative_to(base):
            return prefix + str(path.relative_to(base)) if path != base else (prefix.rstrip("/") or ".")
    return str(path)


def upload_limit_bytes() -> int:
    """The upload limit the server enforces (server.maxUploadSize, MB); the data layer gets the same."""
    return int(st.get_option("server.maxUploadSize")) * 1024 * 1024


# ----------------------------------------------------------------------------- errors and text
@contextlib.contextmanager
def guard():
    """Show a user's mistake (DPCoreError) as one line; keep bugs out of a user's face but logged.

    Set DPCORE_UI_RAISE=1 (the tests do) to let unexpected exceptions through.
    """
    from dpcore.errors import DPCoreError

    try:
        yield
    except DPCoreError as exc:
        from dpcore.text import md

        st.error(md(exc), icon=":material/error:")
    except Exception as exc:  # noqa: BLE001 - the page must keep working
        if os.environ.get("DPCORE_UI_RAISE"):
            raise
        log.exception("unexpected error in a workbench page")
        st.error(f"Something went wrong: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}",
                 icon=":material/bug_report:")


def fmt_eps(eps: float | None, digits: int = 2) -> str:
    """ε for people: "ε = ∞" for non-private runs, "—" when unknown."""
    if eps is None or (isinstance(eps, float) and math.isnan(eps)):
        return "—"
    if math.isinf(eps):
        return "∞"
    return f"{eps:.{digits}f}" if eps < 100 else f"{eps:.0f}"


def fmt_seconds(s: float | None) -> str:
    if s is None or not math.isfinite(s):
        return "—"
    s = max(0.0, float(s))
    if s < 60:
        return f"{s:.0f} s"
    if s < 3600:
        return f"{int(s // 60)} min {int(s % 60):02d} s"
    return f"{int(s // 3600)} h {int(s % 3600 // 60):02d} min"


TRAINING_NOTES = (
    "**Decoder warm-up** trains the decoder on draws from the private prior only: post-processing, "
    "no privacy cost.",
    "**ε is not additive**: the meter composes every noisy step with Rényi DP (RDP), which is much "
    "tighter than adding each step's ε, so the encoder's share of the budget and the ε spent by a "
    "phase do not sum like money.",
    "**The reported ε is RDP's** (tight conversion), an upper bound the accountant can always "
    "compute; the PLD accountant, shown on the Privacy page, is often smaller but is a numerical "
    "estimate, so the workbench reports the bound.",
)
EPSILON_EXPLAINER = (
    "**ε (epsilon)** is the privacy budget: it bounds how much any single person's record can change "
    "what the model learns. Smaller is more private — at ε = 1 an attacker's odds of telling whether "
    "someone was in the data grow by at most a factor e ≈ 2.7; non-private models have ε = ∞. "
    "**δ** is the small probability that the guarantee fails; keep it below 1/n."
)
