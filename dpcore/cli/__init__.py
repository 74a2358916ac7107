"""`python -m dpcore COMMAND ...`: the workbench's operations, headless, JSON out with --json.

Each command lives in its own module under dpcore/cli/ and exposes `register(subparsers)`, which
adds a sub-parser whose `func(args) -> int` does the work. A `DPCoreError` becomes a one-line
message on stderr and exit code 2; an error of the machine (a full or read-only disk, no
permission, no memory) or a number no step can hold becomes a one-line message and exit code 1.
No traceback is shown to a user.
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys

from dpcore.errors import DPCoreError

# One module per group of commands; each is imported only to register its parser (cheap imports).
COMMAND_MODULES = ("privacy", "data", "recommend", "train", "sample", "evaluate", "attack", "sweep", "runs", "classroom")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2, like every other bad argument
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m dpcore", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name in COMMAND_MODULES:
        importlib.import_module(f"dpcore.cli.{name}").register(sub)
    return parser


def print_json(obj) -> None:
    """Print one JSON object (non-finite floats as strings "inf"/"nan" so it stays valid JSON)."""
    print(json.dumps(_jsonable(obj), indent=2))


def _jsonable(obj):
    import math

    import numpy as np

    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (np.floating, float)):
        f = float(obj)
        return f if math.isfinite(f) else ("inf" if f > 0 else "-inf" if f < 0 else "nan")
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    return obj


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    for a in argv:  # argparse reads "--flag=--" as an empty list, which no command expects
        if a.startswith("-") and a.endswith("=--"):
            parser.error(f"argument {a.split('=', 1)[0]}: '--' is not a value")
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except DPCoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (OSError, OverflowError, ValueError, ArithmeticError, MemoryError, RecursionError) as exc:
        print(f"error: {environment_message(exc)}", file=sys.stderr)
        return 1


def environment_message(exc: BaseException) -> str:
    """One line for an error the user did not type: what failed and, for a file, which one."""
    import errno

    if isinstance(exc, OSError):
        what = {errno.ENOSPC: "no space left on the disk", errno.EDQUOT: "disk quota exceeded",
                errno.EROFS: "the disk is read-only", errno.EACCES: "permission denied",
                errno.EPERM: "operation not permitted"}.get(exc.errno, exc.strerror or type(exc).__name__)
        where = f" ({exc.filename})" if exc.filename else ""
        return " ".join(f"{what}{where}; nothing was half-written".split())
    if isinstance(exc, MemoryError):
        return "out of memory; ask for less (see dpcore/limits.py for the caps)"
    if isinstance(exc, RecursionError):
        return "input nested too deeply"
    msg = " ".join(str(exc).split())[:200] or type(exc).__name__
    return f"{type(exc).__name__}: {msg}"
