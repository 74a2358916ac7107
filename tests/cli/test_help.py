"""`--help` of every command (and of `train` for every model) exits 0 and prints no traceback.

Why: argparse formats help text with %, so one declared "~5 %" in a model field's help ended
`python -m dpcore train --help` in a ValueError; the README promises no tracebacks.
"""
from __future__ import annotations

import argparse

import pytest

from dpcore.models import model_names


def _commands(parser: argparse.ArgumentParser, prefix: tuple = ()) -> list[tuple]:
    """Every command path of the CLI, nested ones (`class create`) included."""
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out.append((*prefix, name))
                out += _commands(sub, (*prefix, name))
    return out


def _all_commands() -> list[tuple]:
    from dpcore.cli import build_parser

    return _commands(build_parser())


def _check(run_cli, argv):
    rc, out, err = run_cli(argv)
    assert rc == 0, (argv, rc, err[-500:])
    assert "Traceback" not in out + err and out.startswith("usage:"), (argv, err[-500:])
    return out


def test_the_walk_finds_every_command():
    commands = _all_commands()
    assert {("train",), ("sweep",), ("evaluate",), ("class", "create")} <= set(commands), commands


@pytest.mark.parametrize("command", _all_commands(), ids=" ".join)
def test_help_of_every_command(run_cli, command):
    _check(run_cli, [*command, "--help"])


@pytest.mark.parametrize("model", model_names())
def test_train_help_of_every_model(run_cli, model):
    out = _check(run_cli, ["train", "--model", model, "--help"])
    assert "--seed" in out or "--epsilon" in out  # the model's own flags are listed


def test_a_percent_in_a_fields_help_is_printed_as_written(run_cli):
    out = _check(run_cli, ["train", "--help"])  # every model's flags at once
    assert "~5 %" in " ".join(out.split())
