"""A quality floor for every registered model on its defaults: it generates every class, no column
collapses, and a classifier trained on its rows beats guessing on real held-out rows.

Why: a model that collapses on its defaults (L-VAE lost 9 of 10 digit classes at ε = 10) reads as
"a bad number" on every page; the cases come from the registry, so a model added later is held to
the same floor without a line of test code.

Each model runs through the runner, as the CLI and the app run it, on its defaults except where a
default only sets how long it trains (`DURATION`: AIM's 300 s of selection rounds do not fit in the
suite). GS-WGAN keeps its 1 000 steps (72 s on two quiet cores, accuracy 0.43): at 300 steps it
was at chance in one run of three. Here each model runs on one data set it takes (digits,
or 1 500 rows of `credit` for the table-only models); `bench/quality_floor.py` runs every model on
both, on full defaults (about 1 000 DP-SGD steps per neural model on a table: minutes, not a test).
"""
from __future__ import annotations

import pytest

from dpcore import report
from dpcore.evaluate.checks import quality_floor
from dpcore.models import MODELS, get_model

DURATION = {"aim": {"max_time": 5.0}}  # AIM spends what is left when its time is up
TABLE = {"dataset": "credit", "n": 1500}
IMAGES = {"dataset": "digits"}


# Below the floor today (not strict: the noise is secret, so a lucky run may pass; the mark goes when fixed).
KNOWN = {
    "aim": "AIM on credit never generates Debt's missing flag: ~6 of 1 500 rows, under the noise of its "
           "count, so `missing_sigmas` (1 σ) generates the column complete; `level_floor` does not lift "
           "missing flags (a declared schema makes every column nullable, and noise alone gave complete "
           "columns up to ~5 % missing values: docs/tabular.md)",
    "mst": "MST on credit never generates Assets' missing flag (~15 rows; as AIM)",
}


def _cases():
    for name in sorted(MODELS):
        data = IMAGES if get_model(name).takes_images else TABLE
        marks = [pytest.mark.xfail(strict=False, reason=KNOWN[name])] if name in KNOWN else []
        yield pytest.param(name, data, {}, id=f"{name}-{data['dataset']}", marks=marks)
    # the command: a certificate target makes L-VAE's sampler broader, not its decoder flat
    yield pytest.param("lvae", IMAGES, {"epsilon": 10.0}, id="lvae-digits-certificate-10")


def floor_problems(name: str, data: dict, params: dict, root) -> list[str]:
    from dpcore.jobs import train_run
    from dpcore.runs import RunConfig

    run = train_run(RunConfig(model=name, params={**DURATION.get(name, {}), **params}, data=dict(data)), root)
    bundle = report.load_bundle(run.path)
    res, _ = report.utility(bundle)
    return quality_floor(bundle.synthetic, bundle.train, bundle.test, res)


@pytest.mark.parametrize("name, data, params", list(_cases()))
def test_every_model_meets_the_quality_floor_on_its_defaults(name, data, params, tmp_path):
    assert floor_problems(name, data, params, tmp_path) == []


def test_the_floor_catches_a_collapsed_model(tmp_path):
    """The floor is not vacuous: one epoch of a decoder forced flat (L-VAE with L tiny) fails it."""
    problems = floor_problems("lvae", IMAGES, {"lipschitz": 1e-3, "epochs": 1}, tmp_path)
    assert any("never appear" in p or "collapsed" in p or "chance" in p for p in problems)
