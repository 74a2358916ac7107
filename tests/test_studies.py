"""studies/: one fast check each where a study's finding rests on maths of its own (studies/README.md).

Why so little: a study answered its question once and its numbers are in the docs; what could still
mislead a reader rerunning it is its own mechanism drifting from what the doc says it is.
"""
import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def study():
    """`study(name)`: studies/<name>.py imported by path, with studies/ and bench/ (tabular.py,
    wide_table.py, which the issue-29 studies score with) on sys.path for this module."""
    paths = [str(ROOT / "studies"), str(ROOT / "bench")]
    sys.path[:0] = paths

    def load(name: str):
        spec = importlib.util.spec_from_file_location(f"study_{name}", ROOT / "studies" / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    yield load
    for p in paths:
        sys.path.remove(p)


def test_q99_floor_private_quantile_is_sharp_at_large_epsilon_and_spread_at_small(study):
    q99 = study("q99_floor")
    x = np.arange(1000.0)
    rng = np.random.default_rng(0)
    sharp = [q99.em_quantile(x, 0, 1000, 0.99, 50.0, rng) for _ in range(50)]
    loose = [q99.em_quantile(x, 0, 1000, 0.99, 0.01, rng) for _ in range(50)]
    assert max(abs(v - 990) for v in sharp) < 3
    assert np.std(loose) > 50 * np.std(sharp)


def test_dp_label_model_noise_per_step_is_the_sigma_its_rho_gives(study):
    """With every gradient zero the update is the noise alone: after T steps its spread is
    rate·σC·√T/n with ρ = T / (2σ²)."""
    dlm = study("dp_label_model")
    n, rho = 1000, 0.02
    x, y = np.zeros((n, 400)), np.full(n, 0.5)  # p = 0.5 and x = 0: every clipped gradient is 0
    w = dlm.dp_logistic(x, y, rho, np.random.default_rng(0))
    sigma = math.sqrt(dlm.STEPS / (2 * rho))
    assert np.std(w) == pytest.approx(dlm.RATE * sigma * dlm.CLIP * math.sqrt(dlm.STEPS) / n, rel=0.1)


def test_target_link_noise_sigmas_follow_aims_plan(study):
    from dpcore.models.aim import ALPHA, AIMConfig, planned_rounds

    tln = study("target_link_noise")
    one, four = tln.default_sigmas(1.0, 1e-5, 31), tln.default_sigmas(4.0, 1e-5, 31)
    T = planned_rounds(AIMConfig(), 31)
    assert one["defaults"] == pytest.approx(math.sqrt(T / (2 * ALPHA * one["rho"])) / math.sqrt(2.0))
    assert one["all of rho"] == pytest.approx(math.sqrt(30 / (2 * one["rho"])))
    assert one["all of rho"] < one["defaults"] and four["defaults"] < one["defaults"] / 3
