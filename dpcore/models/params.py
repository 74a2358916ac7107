"""A model's hyperparameters: fields declared once with their help, constraints and group.

Why one place: the CLI's flags, the Train page's widgets, validation and the saved config.json all
come from the config dataclass. Each field says what values it accepts (`hparam(..., choices=...,
low=..., high=...)`, in the spirit of scikit-learn's `_parameter_constraints`), and
`ModelConfig.__post_init__` checks every field against its declaration, so no model, page or
command repeats a check. Checks that tie two fields together live in a config's `_check`.
`None` on a field declared `auto=V` means "V, or what the data allows" (the model's `plan`).

Defaults for every caller (`defaults`): a field may declare `by_size`, its default for a number of
training rows that is public (a built-in dataset's seeded split, never a file's private count), so
the CLI, the Train page, the Story, sweeps and notebooks that build a `dpcore.runs.RunConfig`
train the same model for the same settings.

One parser (`parse_value`): the CLI's flags, a sweep's grid, the Train page's widgets, run files
(config.json, model.json) and `config_from_dict` all turn text or a JSON value into a field's value
here, so no entry point accepts a value another refuses.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import re
import typing
from dataclasses import dataclass
from typing import Any

from dpcore.errors import InvalidParameter

SEED_HELP = ("random seed of the public randomness (initialisation, shuffles, warm-up); a private "
             "model's mechanism noise is secret, so the same seed trains another model")
REPRODUCIBLE_NOISE_HELP = ("debug only: mechanism noise drawn from the seed; the run is NOT private "
                           "(its ledger says 'seeded')")
GROUPS = ("budget", "main", "advanced")  # Train page: privacy column, model column, "Advanced"


def hparam(default, help: str, *, choices: tuple | None = None, low: float | None = None,
           high: float | None = None, low_open: bool = False, high_open: bool = False,
           finite: bool = True, group: str = "advanced", auto: Any = None,
           typical: tuple[int, int] | None = None, by_size: tuple[tuple[int, Any], ...] | None = None):
    """A config field with its help text and constraints.

    choices: the allowed values; low/high: bounds (inclusive unless *_open); finite: refuse ±inf;
    group: where the Train page shows it; auto: the value `None` stands for when the data allows
    it; typical: the slider range the Train page offers; by_size: ((min_rows, value), …) from the
    largest min_rows down, the default for a public training-row count (`size_default`).
    """
    if group not in GROUPS:
        raise ValueError(f"group must be one of {GROUPS}")
    meta = {"help": help, "choices": None if choices is None else tuple(choices), "low": low,
            "high": high, "low_open": low_open, "high_open": high_open, "finite": finite,
            "group": group, "auto": auto, "typical": typical,
            "by_size": None if by_size is None else tuple(sorted(by_size, key=lambda t: -t[0]))}
    return dataclasses.field(default=default, metadata=meta)


@dataclass(frozen=True)
class Param:
    """One field of a config class, as the CLI, the Train page and the validation see it."""

    name: str
    type: Any           # the resolved annotation (e.g. int | None)
    base: type          # int, float, str or bool
    optional: bool      # None is allowed
    default: Any
    help: str
    choices: tuple | None
    low: float | None
    high: float | None
    low_open: bool
    high_open: bool
    finite: bool
    group: str
    auto: Any
    typical: tuple[int, int] | None
    by_size: tuple[tuple[int, Any], ...] | None = None


def config_fields(cls) -> list[Param]:
    """Every field of a config dataclass (the one walker the CLI, pages and validation use)."""
    return list(_fields(cls))


def config_field(cls, name: str) -> Param:
    """Field `name` of config class `cls` (InvalidParameter naming it when it is not one)."""
    for p in _fields(cls):
        if p.name == name:
            return p
    raise InvalidParameter(f"{name!r} is not a parameter of {cls.__name__}")


@functools.cache
def _fields(cls) -> tuple[Param, ...]:
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        tp = hints.get(f.name, type(f.default))
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        optional = type(None) in typing.get_args(tp)
        base = args[0] if args else tp
        m = f.metadata
        out.append(Param(f.name, tp, base, optional, f.default, m.get("help", ""), m.get("choices"),
                         m.get("low"), m.get("high"), m.get("low_open", False), m.get("high_open", False),
                         m.get("finite", True), m.get("group", "advanced"), m.get("auto"),
                         m.get("typical"), m.get("by_size")))
    return tuple(out)


def _bounds(p: Param) -> str:
    lo = "" if p.low is None else f"{'>' if p.low_open else '>='} {p.low:g}"
    hi = "" if p.high is None else f"{'<' if p.high_open else '<='} {p.high:g}"
    return " and ".join(s for s in (lo, hi) if s)


def check_value(p: Param, value):
    """`value` if it satisfies `p`'s declaration, else InvalidParameter naming the field."""
    if value is None:
        if p.optional:
            return value
        raise InvalidParameter(f"{p.name} must be given, got None")
    if p.base is bool:
        if not isinstance(value, bool):
            raise InvalidParameter(f"{p.name} must be true or false, got {value!r}")
        return value
    if p.base is int:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value:
            raise InvalidParameter(f"{p.name} must be an integer, got {value!r}")
    elif p.base is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
            raise InvalidParameter(f"{p.name} must be a number, got {value!r}")
        if p.finite and math.isinf(value):
            raise InvalidParameter(f"{p.name} must be finite, got {value!r}")
    elif p.base is str and not isinstance(value, str):
        raise InvalidParameter(f"{p.name} must be a string, got {value!r}")
    if p.choices is not None and value not in p.choices:
        raise InvalidParameter(f"{p.name} must be one of {', '.join(map(repr, p.choices))}, got {value!r}")
    if p.base in (int, float):
        too_low = p.low is not None and (value <= p.low if p.low_open else value < p.low)
        too_high = p.high is not None and (value >= p.high if p.high_open else value > p.high)
        if too_low or too_high:
            raise InvalidParameter(f"{p.name} must be {_bounds(p)}, got {value!r}")
    return value


NONE_WORDS = ("", "none", "null")  # text for "not set" (an optional field's auto)
TRUE_WORDS, FALSE_WORDS = ("true", "1", "yes"), ("false", "0", "no")
INT_RE = re.compile(r"[+-]?[0-9]{1,19}")  # ASCII only: int("٣٠٠") is 300, int("1_000") is 1000
FLOAT_RE = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]{1,4})?|[+-]?inf(inity)?", re.IGNORECASE)
INT_MAX = 2**63 - 1  # what torch and numpy seeds hold


def _from_text(p: Param, text: str):
    """Text typed by a person (a flag, a grid value, a text widget, a string in a run file)."""
    t = text.strip()
    if p.optional and t.lower() in NONE_WORDS:
        return None
    if p.base is bool:
        if t.lower() in TRUE_WORDS + FALSE_WORDS:
            return t.lower() in TRUE_WORDS
        raise InvalidParameter(f"{p.name} must be true or false, got {text!r}")
    if p.base is int:
        if not INT_RE.fullmatch(t) or abs(int(t)) > INT_MAX:
            raise InvalidParameter(f"{p.name} must be a whole number in ASCII digits (|n| < 2**63), got {text!r}")
        return int(t)
    if p.base is float:
        value = float(t) if FLOAT_RE.fullmatch(t) else None
        if value is None or (math.isinf(value) and "inf" not in t.lower()):
            raise InvalidParameter(f"{p.name} must be a number like 0.5, 1e-3 or inf, got {text!r}")
        return value
    return t


def parse_value(p: Param, value):
    """`value` as field `p` holds it, checked against its declaration: text (CLI, grid, widget,
    a run file's "inf") is parsed, a JSON value (number, bool, null) is taken as it is; a whole
    float is an int field's int. Anything else: InvalidParameter naming the field."""
    if isinstance(value, str):
        value = _from_text(p, value)
    elif (p.base is int and isinstance(value, float) and not isinstance(value, bool)
          and math.isfinite(value) and value == int(value)):
        value = int(value)
    elif p.base is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if p.base not in (bool, int, float, str) and value is not None:
        return value  # a field type the declarations do not use: left to the config's own checks
    if isinstance(value, (list, dict, tuple, set)):
        raise InvalidParameter(f"{p.name} must be a single value, got a {type(value).__name__}")
    return check_value(p, value)


def parse_param(cls, name: str, value):
    """`parse_value` for field `name` of config class `cls`."""
    return parse_value(config_field(cls, name), value)


def size_default(p: Param, public_rows: int | None):
    """`p`'s default for `public_rows` public training rows (None: the size is private → the
    declared default, a constant; a run resolves its `auto` fields from the noisy ñ instead)."""
    if p.by_size is None or public_rows is None:
        return p.default
    return next((v for least, v in p.by_size if public_rows >= least), p.default)


def sized_fields(cls) -> tuple[str, ...]:
    """Fields of `cls` whose default depends on a public training-row count."""
    return tuple(p.name for p in _fields(cls) if p.by_size is not None)


def defaults(cls, public_rows: int | None = None) -> dict:
    """{field: default} of config class `cls` on `public_rows` public training rows (None: a file,
    whose row count is private, or unknown). The one place every caller's defaults come from."""
    return {p.name: size_default(p, public_rows) for p in _fields(cls)}


class ModelConfig:
    """Base of every model's frozen config dataclass: validates each field from its declaration,
    then the config's own cross-field `_check`."""

    def __post_init__(self) -> None:
        for p in config_fields(type(self)):
            check_value(p, getattr(self, p.name))
        self._check()

    def _check(self) -> None:
        """Rules that tie fields together (one-line InvalidParameter naming a field)."""


def config_to_dict(config) -> dict:
    return {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}


def config_from_dict(cls, values: dict):
    """Build `cls(**values)`; an unknown key raises InvalidParameter naming it."""
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - names)
    if unknown:
        raise InvalidParameter(f"unknown parameter(s) for {cls.__name__}: {', '.join(unknown)}")
    # text and JSON (dumps() writes L-VAE's epsilon = inf as "inf") through the one parser
    return cls(**{k: parse_param(cls, k, v) for k, v in values.items()})


# ----------------------------------------------------------------------------- shared declarations
def seed_field(help: str = SEED_HELP):
    return hparam(0, help, low=0, group="main")


def device_field():
    return hparam("cpu", "'cpu', 'cuda' or 'auto' (CUDA when available)", choices=("cpu", "cuda", "auto"))


# The private neural models' default ε for a public training-row count (a built-in's split; a file's
# count is private, so a file gets the declared constant). Small data needs a larger ε: the noise
# that hides one row is the same whatever the size, so fewer rows carry less signal through it
# (P3GM on digits' 1 438 rows: ε = 1 scores 0.07–0.41, chance 0.10; Fashion-MNIST's 20 000: ε = 1
# keeps ~0.86 of the real data's utility, bench/story_defaults.py).
EPSILON_BY_SIZE = ((10_000, 1.0), (3_000, 3.0), (0, 10.0))


def epsilon_field(default: float, help: str, *, finite: bool = True, **kw):
    return hparam(default, help, low=0, low_open=True, finite=finite, group="budget", **kw)


DEFAULT_DELTA = 1e-5  # every model's δ default, a constant (the app's too: dpcore.ui.defaults)


def delta_field(help: str = "δ of the (ε, δ) guarantee", group: str = "budget"):
    return hparam(DEFAULT_DELTA, help, low=0, high=1, low_open=True, high_open=True, group=group)


def positive(default, help: str, **kw):
    return hparam(default, help, low=0, low_open=True, **kw)


def count(default, help: str, *, low: int = 1, **kw):
    return hparam(default, help, low=low, **kw)
