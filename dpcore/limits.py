"""Hard caps on work a user can ask for, checked before the work starts (one-line errors).

Why: `sample --n 1e10` or `account --epochs 1e12` used to try to allocate gigabytes to terabytes
and die with a MemoryError after a long wait. The caps are generous for real use; each message says
the cap and the environment variable that changes it.
"""
from __future__ import annotations

import math
import os

from dpcore.errors import InvalidParameter


def _env_int(name: str, default: int) -> int:
    try:
        return max(1, int(float(os.environ.get(name, default))))
    except ValueError:
        return default


def max_steps() -> int:
    return _env_int("DPCORE_MAX_STEPS", 10_000_000)


def max_samples() -> int:
    return _env_int("DPCORE_MAX_SAMPLES", 2_000_000)


def check_steps(epochs: float, n: int, batch: float, what: str = "training") -> int:
    """ceil(epochs · n / batch) optimisation steps, at most max_steps()."""
    try:
        steps = math.ceil(float(epochs) * float(n) / float(batch))
    except (OverflowError, ValueError, ZeroDivisionError):
        steps = math.inf
    cap = max_steps()
    if not steps <= cap:
        raise InvalidParameter(f"{what} would take {steps:.3g} steps (epochs × rows / batch); the cap is "
                               f"{cap} (set DPCORE_MAX_STEPS to change it)")
    return int(steps)


def check_samples(n: int, what: str = "n") -> int:
    cap = max_samples()
    if n > cap:
        raise InvalidParameter(f"{what} asks for {n} rows; the cap is {cap} per call "
                               f"(set DPCORE_MAX_SAMPLES to change it)")
    return n
