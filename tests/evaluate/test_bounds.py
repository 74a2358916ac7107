import math

import numpy as np
import pytest

from dpcore.errors import InvalidParameter
from dpcore.evaluate.bounds import (
    best_advantage,
    bound_curves,
    dpsgd_gdp_mu,
    envelope_tradeoff,
    eps_from_errors,
    gdp_delta,
    ledger_gdp_mu,
    tradeoff_eps_delta,
    tradeoff_gdp,
)
from dpcore.figures.attacks import mia_tradeoff_figure
from dpcore.privacy.ledger import MechanismRecord, PrivacyLedger


def Phi(x):  # independent of scipy: the normal CDF from math.erf
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


def test_eps_delta_tradeoff_hand_values():
    # ε = 1, δ = 0, α = 0.1: max(0, 1 − e·0.1, e⁻¹·0.9) = 1 − 0.27183 = 0.72817
    assert tradeoff_eps_delta(0.1, 1.0, 0.0) == pytest.approx(1 - math.e * 0.1, abs=1e-12)
    # ε = 1, δ = 0.01, α = 0.5: the second branch, e⁻¹·0.49 = 0.18026
    assert tradeoff_eps_delta(0.5, 1.0, 0.01) == pytest.approx(0.49 / math.e, abs=1e-12)
    # ε = 0, δ = 0: no test beats random guessing, β = 1 − α
    a = np.linspace(0, 1, 11)
    np.testing.assert_allclose(tradeoff_eps_delta(a, 0.0, 0.0), 1 - a, atol=1e-12)
    assert tradeoff_eps_delta(0.9, 1.0, 0.0) == pytest.approx(0.1 / math.e, abs=1e-12)
    assert tradeoff_eps_delta(1.0, 1.0, 0.0) == 0.0 and tradeoff_eps_delta(0.99, 1.0, 0.02) == 0.0
    with pytest.raises(InvalidParameter):
        tradeoff_eps_delta(1.5, 1.0)


def test_gdp_formulas_hand_values():
    assert tradeoff_gdp(0.05, 1.0) == pytest.approx(Phi(1.6448536269514722 - 1), abs=1e-9)
    assert gdp_delta(1.0, 1.0) == pytest.approx(Phi(-0.5) - math.e * Phi(-1.5), abs=1e-12)
    assert gdp_delta(200.0, 1.0) == pytest.approx(0.0, abs=1e-12)  # no overflow
    assert dpsgd_gdp_mu(0.01, 10_000, 1.0) == pytest.approx(0.01 * math.sqrt(10_000 * (math.e - 1)))
    assert best_advantage(1.0, 0.0) == pytest.approx(math.tanh(0.5))


def test_best_advantage_is_max_of_one_minus_alpha_minus_f():
    a = np.linspace(0, 1, 100_001)
    for eps, delta in [(0.5, 0.0), (1.0, 1e-3), (3.0, 0.05)]:
        adv = np.max(1 - a - tradeoff_eps_delta(a, eps, delta))
        assert adv == pytest.approx(best_advantage(eps, delta), abs=1e-4)


def test_envelope_of_gdp_profile_recovers_gdp_curve():
    # A μ-GDP mechanism is (ε, δ_μ(ε))-DP for every ε; the envelope over ε is G_μ itself.
    mu = 1.0
    a = np.linspace(0.001, 0.999, 50)
    env = envelope_tradeoff(a, lambda e: gdp_delta(e, mu), np.linspace(0, 8, 400))
    g = tradeoff_gdp(a, mu)
    assert np.all(env <= g + 1e-9)
    assert np.max(g - env) < 0.01
    # and a single (ε, δ) line is looser than the envelope
    assert np.all(tradeoff_eps_delta(a, 1.0, gdp_delta(1.0, mu)) <= env + 1e-12)


def test_eps_from_errors_inverts_tradeoff():
    for eps, delta, alpha in [(1.0, 0.0, 0.1), (2.0, 1e-3, 0.05), (0.5, 0.0, 0.6)]:
        beta = float(tradeoff_eps_delta(alpha, eps, delta))
        assert eps_from_errors(alpha, beta, delta) == pytest.approx(eps, rel=1e-9)
    assert eps_from_errors(0.5, 0.5) == 0.0
    assert eps_from_errors(0.0, 0.5) == math.inf


def test_ledger_gdp_and_bound_curves():
    led = PrivacyLedger()
    led.add(MechanismRecord("pca", "gaussian", noise_multiplier=2.0, steps=4))  # μ = 2/2 = 1
    assert ledger_gdp_mu(led) == pytest.approx(1.0)
    curves = bound_curves(led, 1e-5, alpha=np.linspace(0, 1, 21))
    labels = [c[0] for c in curves]
    gdp = [c for c in curves if "GDP" in c[0]][0]
    np.testing.assert_allclose(gdp[2], tradeoff_gdp(np.linspace(0, 1, 21), 1.0))
    for _, a, b in curves:
        assert a.shape == b.shape and np.all((b >= 0) & (b <= 1))
    fig = mia_tradeoff_figure([], curves)
    assert len(fig.data) == 1 + len(labels)


def test_pld_envelope_of_exact_gdp_ledger_matches_gdp_curve():
    """Four Gaussian releases with σ/Δ = 2 are exactly 1-GDP: the accountant's PLD envelope must
    reproduce G_1, and the single RDP (ε, δ) line must lie below it."""
    pytest.importorskip("dpcore.privacy.accountant")
    led = PrivacyLedger()
    led.add(MechanismRecord("pca", "gaussian", noise_multiplier=2.0, steps=4))
    a = np.linspace(0, 1, 21)
    curves = {c[0].split("(")[0].strip() or c[0]: c[2] for c in bound_curves(led, 1e-5, alpha=a)}
    env = curves["PLD envelope"]
    line = [b for k, b in curves.items() if "-DP" in k][0]
    assert np.max(np.abs(env - tradeoff_gdp(a, 1.0))) < 0.01
    assert np.all(line <= env + 1e-9)


def test_empirical_gaussian_mechanism_lies_above_its_bounds():
    """Attack a Gaussian mechanism (sensitivity 1, σ = 1 → exactly 1-GDP); every empirical trade-off
    point's Clopper–Pearson corner must lie above G_1 and above f_{ε, δ(ε)} of its exact profile;
    the same points must violate a bound that is too tight (so the test can fail)."""
    from dpcore.evaluate.attacks.result import clopper_pearson

    rng = np.random.default_rng(1)
    n = 20_000
    non, mem = rng.normal(0, 1, n), rng.normal(1, 1, n)
    thr = np.linspace(-1, 3, 17)
    fp = (non[None] >= thr[:, None]).sum(1)
    fn = (mem[None] < thr[:, None]).sum(1)
    conf = 1 - 0.05 / len(thr)
    _, a_hi = clopper_pearson(fp, n, conf)
    _, b_hi = clopper_pearson(fn, n, conf)
    a_lo, _ = clopper_pearson(fp, n, conf)
    assert np.all(b_hi >= tradeoff_gdp(a_hi, 1.0))
    for eps in (0.5, 1.0, 2.0):
        assert np.all(b_hi >= tradeoff_eps_delta(a_hi, eps, gdp_delta(eps, 1.0)))
    # a bound for a much more private mechanism is violated by the same data
    assert np.any(b_hi < tradeoff_gdp(np.minimum(a_lo, 1), 0.5))
    assert np.any(b_hi < tradeoff_eps_delta(a_hi, 0.3, 0.0))


def _p3gm_ledger(eps):
    from dpcore.privacy import accountant as acc

    return acc.calibrate_p3gm(eps, 1e-5, 0.3, 1437, 200, 5).ledger


def test_gdp_clt_curve_is_labelled_an_approximation_and_drawn_apart_from_the_bounds():
    """The CLT curve can sit above the PLD envelope (it is not a bound): its label and its line say so."""
    pytest.importorskip("dpcore.privacy.accountant")
    from dpcore.evaluate.bounds import APPROXIMATION

    a = np.linspace(0, 1, 201)
    curves = bound_curves(_p3gm_ledger(2.0), 1e-5, alpha=a)
    gdp = [c for c in curves if "GDP" in c[0]]
    assert len(gdp) == 1 and APPROXIMATION in gdp[0][0] and APPROXIMATION == "approximation, not a bound"
    assert all(APPROXIMATION not in c[0] for c in curves if "GDP" not in c[0])
    fig = mia_tradeoff_figure([], curves)
    styles = {tr.name: tr.line.dash for tr in fig.data}
    assert styles[gdp[0][0]] == "dot" and all(styles[c[0]] == "dash" for c in curves if c is not gdp[0])


@pytest.mark.parametrize("eps", [1.0, 10.0, 30.0])
def test_pld_envelope_is_within_1e3_of_a_fine_grid_envelope(eps):
    """The drawn envelope must not be visibly looser than the accountant allows (80 points: 0.007)."""
    pytest.importorskip("dpcore.privacy.accountant")
    from dpcore.privacy import accountant as acc

    led = _p3gm_ledger(eps)
    a = np.linspace(0, 1, 201)
    drawn = dict((c[0], c[2]) for c in bound_curves(led, 1e-5, alpha=a))["PLD envelope"]
    hi = 4 * acc.epsilon(led, 1e-5)
    grid = np.linspace(0, hi, 20_000)
    fine = envelope_tradeoff(a, None, grid, deltas=acc.pld_delta_curve(led, grid))
    assert np.all(drawn <= fine + 1e-6)  # a coarser envelope is (up to grid offsets) lower
    assert np.max(fine - drawn) < 1e-3
    # the vectorised δ(ε) is the accountant's scalar δ(ε)
    for e in (0.0, eps / 2, eps, 3 * eps):
        assert acc.pld_delta_curve(led, [e])[0] == pytest.approx(acc.pld_delta(led, e), abs=1e-12)
