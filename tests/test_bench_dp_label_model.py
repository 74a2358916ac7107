"""bench/dp_label_model.py: the DP logistic regression learns the target when its noise is small, not
when it drowns, and its noise is the σ its ρ says."""
import math

import numpy as np
import pytest


@pytest.fixture(scope="module")
def dlm(bench_script):
    return bench_script("dp_label_model")


def _rows(n=1200, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.random((n, 3))
    y = (rng.random(n) < 1 / (1 + np.exp(-8 * (x[:, 0] - 0.5)))).astype(float)
    return x, y


def test_learns_the_target_with_a_large_budget_and_not_with_a_tiny_one(dlm):
    x, y = _rows()
    xt, yt = _rows(seed=1)
    xb, xtb = dlm.with_bias(x), dlm.with_bias(xt)
    big = [dlm.auc(yt, xtb @ dlm.dp_logistic(xb, y, 1e4, np.random.default_rng(r))) for r in range(3)]
    tiny = [dlm.auc(yt, xtb @ dlm.dp_logistic(xb, y, 1e-8, np.random.default_rng(r))) for r in range(16)]
    assert min(big) > 0.85
    assert min(tiny) < 0.5 and np.mean(tiny) < 0.7  # drowned: a random direction, as often wrong as right


def test_noise_per_step_is_the_sigma_its_rho_gives(dlm):
    """With all gradients zero (one constant column of zeros) the update is the noise alone: its
    spread after T steps is rate·σC·√T/n with ρ = T / (2σ²)."""
    n, rho = 1000, 0.02
    x, y = np.zeros((n, 400)), np.full(n, 0.5)  # p = 0.5 and x = 0: every clipped gradient is 0
    w = dlm.dp_logistic(x, y, rho, np.random.default_rng(0))
    sigma = math.sqrt(dlm.STEPS / (2 * rho))
    expected = dlm.RATE * sigma * dlm.CLIP * math.sqrt(dlm.STEPS) / n
    assert np.std(w) == pytest.approx(expected, rel=0.1)
