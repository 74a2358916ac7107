"""Errors a user can cause. Each carries a one-line message that the UI and the CLI show as is.

Why a hierarchy of our own: pages and the CLI catch `DPCoreError` and print its message, while
anything else is a bug and keeps its traceback (in logs, never in a user's face).
"""
from __future__ import annotations

import math


class DPCoreError(Exception):
    """Base class: a problem with the user's input or environment, with a one-line message."""

    def __init__(self, message: str):
        # One line, always: the UI and CLI print it verbatim.
        super().__init__(" ".join(str(message).split()))


class InvalidParameter(DPCoreError, ValueError):
    """A hyperparameter or argument is out of range (names the argument)."""


class DataError(DPCoreError, ValueError):
    """Input data cannot be used (malformed file, constant column, NaNs, ...)."""


class DatasetUnavailable(DataError):
    """A built-in dataset is not installed on this machine; the message says how to install it."""


class RunError(DPCoreError):
    """A saved run is missing, incomplete or cannot be loaded."""


def check_positive(name: str, value: float, *, allow_inf: bool = False) -> float:
    """Return `value` as float or raise InvalidParameter naming `name`."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InvalidParameter(f"{name} must be a number, got {value!r}") from None
    if math.isnan(v) or v <= 0 or (math.isinf(v) and not allow_inf):
        raise InvalidParameter(f"{name} must be a positive finite number, got {value!r}"
                               if not allow_inf else f"{name} must be > 0, got {value!r}")
    return v


def check_probability(name: str, value: float, *, open_interval: bool = True) -> float:
    """Return `value` as float in (0, 1) (or [0, 1]) or raise InvalidParameter naming `name`."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InvalidParameter(f"{name} must be a number, got {value!r}") from None
    ok = (0 < v < 1) if open_interval else (0 <= v <= 1)
    if not ok:
        bounds = "(0, 1)" if open_interval else "[0, 1]"
        raise InvalidParameter(f"{name} must lie in {bounds}, got {value!r}")
    return v


def check_int(name: str, value: int, *, minimum: int = 1) -> int:
    """Return `value` as int >= minimum or raise InvalidParameter naming `name`."""
    try:
        v = int(value)
    except (TypeError, ValueError):
        raise InvalidParameter(f"{name} must be an integer, got {value!r}") from None
    if v != value and not isinstance(value, str):
        raise InvalidParameter(f"{name} must be an integer, got {value!r}")
    if v < minimum:
        raise InvalidParameter(f"{name} must be >= {minimum}, got {value!r}")
    return v
