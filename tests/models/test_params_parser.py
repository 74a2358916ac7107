"""One parser per parameter: the CLI's flags, a sweep's grid, the Train page's widgets and a run
file's params accept and refuse the same values, and read them as the same value.

Why: each of the four once had its own copy (argparse types, sweep.coerce, forms.coerce_param,
safety.check_fields), so `--epochs 1e3` failed on the CLI and trained in a sweep, and a run file
could hold a value no page would accept.
"""
from __future__ import annotations

import json

import pytest

from dpcore.errors import InvalidParameter
from dpcore.models import config_class
from dpcore.models.params import config_field

MODEL = "p3gm"
MISSING = object()

# (field, value, accepted as): text as a person types it (a flag, a grid value, a text widget, a
# string in config.json); MISSING = refused.
TEXT = [
    ("epsilon", "1", 1.0), ("epsilon", " 0.5 ", 0.5), ("epsilon", "1e-1", 0.1), ("epsilon", "0", MISSING),
    ("epsilon", "-1", MISSING), ("epsilon", "inf", MISSING), ("epsilon", "nan", MISSING),
    ("epsilon", "abc", MISSING), ("epsilon", "", MISSING), ("epsilon", "None", MISSING),
    ("epsilon", "٣", MISSING), ("epsilon", "1e999", MISSING),
    ("epochs", "3", 3), ("epochs", "none", None), ("epochs", "", None), ("epochs", "0", MISSING),
    ("epochs", "2.5", MISSING), ("epochs", "1e3", MISSING), ("epochs", "1_000", MISSING),
    ("epochs", "٣٠٠", MISSING), ("epochs", "99999999999999999999", MISSING),
    ("pca_center", "noisy", "noisy"), ("pca_center", "none", "none"), ("pca_center", "bogus", MISSING),
    ("encoder_share", "0.3", 0.3), ("encoder_share", "1", MISSING), ("encoder_share", "0", MISSING),
    ("delta", "1e-5", 1e-5), ("delta", "1", MISSING),
    ("lr", "1e-3", 1e-3), ("lr", "-1e-3", MISSING),
    ("components", "2", 2), ("components", "0", MISSING),
    ("reproducible_noise", "true", True), ("reproducible_noise", "False", False),
    ("reproducible_noise", "maybe", MISSING),
]
# JSON values (a TOML grid, a number widget, a config.json number): no CLI flag takes these.
JSON = [
    ("epsilon", 2, 2.0), ("epsilon", 2.5, 2.5), ("epsilon", True, MISSING), ("epsilon", None, MISSING),
    ("epsilon", -2.0, MISSING), ("epsilon", [1], MISSING), ("epsilon", {"a": 1}, MISSING),
    ("epochs", 4, 4), ("epochs", 4.0, 4), ("epochs", 4.5, MISSING), ("epochs", None, None),
    ("epochs", False, MISSING), ("pca_center", 3, MISSING), ("pca_center", None, MISSING),
    ("reproducible_noise", True, True), ("reproducible_noise", 1, MISSING),
    ("reproducible_noise", None, MISSING),
]


def _cli(name, value, capsys):
    from dpcore.cli import build_parser
    from dpcore.cli.train import PARAM_PREFIX

    flag = "--" + name.replace("_", "-")
    if isinstance(value, bool) or name == "reproducible_noise":  # a switch: --flag / --no-flag
        return None  # no text to parse
    try:
        args = build_parser().parse_args(["train", "--model", MODEL, "--dataset", "digits", f"{flag}={value}"])
    except SystemExit as exc:
        assert exc.code == 2
        return InvalidParameter(capsys.readouterr().err.strip())
    return getattr(args, PARAM_PREFIX + name)


def _sweep(name, value):
    from dpcore.jobs.sweep import SweepSpec

    try:
        return SweepSpec(model=MODEL, grid={name: [value]}, data={"dataset": "digits"}).grid[name][0]
    except InvalidParameter as exc:
        return exc


def _widget(name, value):
    from dpcore.ui.forms import coerce_param

    try:
        return coerce_param(config_field(config_class(MODEL), name), value)
    except InvalidParameter as exc:
        return exc


def _run_file(name, value):
    from dpcore.runs.safety import check_config
    from dpcore.runs.store import RunConfig

    doc = json.loads(json.dumps({"model": MODEL, "params": {name: value}, "data": {"dataset": "digits"}}))
    try:
        check_config(doc, "config.json")
        return RunConfig.from_dict(doc).params[name]  # what a run opened from the file holds
    except InvalidParameter as exc:  # RunFileError is a RunError, not an InvalidParameter
        return exc
    except Exception as exc:  # noqa: BLE001 - RunFileError: the file's one-line error
        if type(exc).__name__ != "RunFileError":
            raise
        return exc


def _check(name, value, want, got: dict):
    for where, result in got.items():
        if result is None and where == "cli":
            continue
        if want is MISSING:
            assert isinstance(result, Exception), f"{where} accepted {name}={value!r} as {result!r}"
            assert name in str(result) and "\n" not in str(result), f"{where}: {result}"
        else:
            assert not isinstance(result, Exception), f"{where} refused {name}={value!r}: {result}"
            assert result == want and type(result) is type(want), f"{where}: {name}={value!r} → {result!r}"


@pytest.mark.parametrize("name, value, want", TEXT, ids=[f"{n}={v!r}" for n, v, _ in TEXT])
def test_text_values_read_alike_at_every_entry_point(name, value, want, capsys):
    _check(name, value, want, {"cli": _cli(name, value, capsys), "sweep": _sweep(name, value),
                               "widget": _widget(name, value), "run file": _run_file(name, value)})


@pytest.mark.parametrize("name, value, want", JSON, ids=[f"{n}={v!r}" for n, v, _ in JSON])
def test_json_values_read_alike_at_every_entry_point(name, value, want):
    _check(name, value, want, {"sweep": _sweep(name, value), "widget": _widget(name, value),
                               "run file": _run_file(name, value)})


def test_every_field_of_every_model_reads_its_own_default_back():
    """A default written to config.json as text or JSON parses back to itself (inf included)."""
    from dpcore.io import dumps
    from dpcore.models import MODELS
    from dpcore.models.params import config_fields, parse_value

    for model, cls in MODELS.items():
        for p in config_fields(cls.config_class):
            stored = json.loads(dumps({"v": p.default}))["v"]
            assert parse_value(p, stored) == p.default, (model, p.name, stored)
            if p.default is not None and not isinstance(p.default, bool):
                assert parse_value(p, str(stored)) == p.default, (model, p.name)


def test_budget_group_fields_are_epsilon_delta_or_a_share_of_epsilon():
    """The Train page shows a "budget" field beside ε as "<name> of ε", a slider over 0.05–0.95: only a
    share of ε may be one (a noise ratio of 2 or DP-EM's share of the encoder's part read as shares
    of ε, the ratio pinned at the slider's end)."""
    from dpcore.models import MODELS
    from dpcore.models.params import config_fields

    for model, cls in MODELS.items():
        for p in config_fields(cls.config_class):
            if p.group != "budget" or p.name in ("epsilon", "delta"):
                continue
            assert p.name.endswith("_share") and p.help.startswith("share of the budget"), (model, p.name)
            assert (p.low, p.high) == (0, 1) and 0.05 <= p.default <= 0.95, (model, p.name)
