"""Argument types of the CLI: ASCII numbers only, in a range every later step can hold.

Why: Python's int() and float() read "٣٠٠" (Arabic-Indic digits) as 300, "1_000" as 1000 and
"nan" as a number, and a 23-digit seed overflowed torch.manual_seed deep inside training. Each
type here refuses such text at parse time with argparse's one-line error (exit code 2).
"""
from __future__ import annotations

import argparse
import math

from dpcore.models.params import FLOAT_RE, INT_MAX, INT_RE  # the text rules of every model parameter


def integer(text: str) -> int:
    """A whole number written in ASCII digits, |n| < 2**63."""
    if not isinstance(text, str) or not INT_RE.fullmatch(text.strip()):
        raise argparse.ArgumentTypeError(f"expected a whole number in ASCII digits (at most 19), got {text!r}")
    value = int(text.strip())
    if abs(value) > INT_MAX:
        raise argparse.ArgumentTypeError(f"{text!r} is too large (at most {INT_MAX})")
    return value


integer.__name__ = "integer"


def number(text: str) -> float:
    """A decimal number in ASCII (e.g. 0.5, 1e-3, inf); never nan, never one that overflows."""
    if not isinstance(text, str) or not FLOAT_RE.fullmatch(text.strip()):
        raise argparse.ArgumentTypeError(f"expected a number like 0.5, 1e-3 or inf, got {text!r}")
    value = float(text.strip())
    if math.isinf(value) and "inf" not in text.lower():
        raise argparse.ArgumentTypeError(f"{text!r} is too large for a number")
    return value


number.__name__ = "number"


def text(value: str) -> str:
    """A non-empty string (names, lists): '' or only spaces is refused."""
    if not value.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return value


text.__name__ = "text"
