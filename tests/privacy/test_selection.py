"""Private selection (Papernot & Steinke 2022): the accountant against the theorems' formulas,
computed here independently (scalar loops, E[K] summed from the pmf's definition)."""
from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from dpcore.errors import InvalidParameter
from dpcore.privacy.accountant import epsilon, epsilon_from_rdp, selection_from_dict
from dpcore.privacy.accountants.selection import (
    delta_from_rdp,
    draw_trials,
    expected_trials,
    poisson_selection_rdp,
    tnb_pmf,
    tnb_selection_rdp,
)
from dpcore.privacy.ledger import MechanismRecord, PrivacyLedger, SelectionRecord

ORDERS = [1.5, 2.0, 3.0, 5.0, 8.0, 16.0, 32.0, 64.0]


def gaussian_rdp(sigma, lam):
    return lam / (2 * sigma**2)  # Mironov 2017, Prop. 7


@functools.cache
def pmf_by_definition(k, eta, gamma):
    """P[K = k] of D_{η,γ} straight from the definition (products, no recurrence)."""
    if eta == 0:
        return (1 - gamma) ** k / (k * math.log(1 / gamma))
    prod = 1.0
    for j in range(k):
        prod *= (j + eta) / (j + 1)
    return (1 - gamma) ** k * prod / (gamma ** -eta - 1)


@functools.cache
def mean_by_definition(eta, gamma):
    return sum(k * pmf_by_definition(k, eta, gamma) for k in range(1, 1500))


def theorem2(sigma, eta, gamma, lam, lam_hats):
    mean = mean_by_definition(eta, gamma)
    best = (1 + eta) * math.log(1 / gamma)  # λ̂ = 1
    for lh in lam_hats:
        best = min(best, (1 + eta) * (1 - 1 / lh) * gaussian_rdp(sigma, lh) + (1 + eta) * math.log(1 / gamma) / lh)
    return gaussian_rdp(sigma, lam) + best + math.log(mean) / (lam - 1)


@pytest.mark.parametrize("eta,gamma,sigma", [(1.0, 0.1, 2.0), (0.0, 0.05, 5.0), (-0.5, 0.2, 1.0), (2.0, 0.3, 3.0)])
def test_theorem2_matches_the_formula(eta, gamma, sigma):
    base = np.array([gaussian_rdp(sigma, a) for a in ORDERS])
    got = tnb_selection_rdp(base, ORDERS, eta, gamma)
    want = [theorem2(sigma, eta, gamma, lam, ORDERS) for lam in ORDERS]
    np.testing.assert_allclose(got, want, rtol=1e-9)
    assert sum(pmf_by_definition(k, eta, gamma) for k in range(1, 1500)) == pytest.approx(1, abs=1e-9)
    np.testing.assert_allclose(tnb_pmf(np.arange(1, 40), eta, gamma),
                               [pmf_by_definition(k, eta, gamma) for k in range(1, 40)], rtol=1e-9)


def test_theorem6_poisson_matches_the_formula_and_its_delta_is_a_valid_bound():
    from scipy.stats import norm

    sigma, mu = 3.0, 8.0
    base = np.array([gaussian_rdp(sigma, a) for a in ORDERS])
    got = poisson_selection_rdp(base, ORDERS, mu)
    for lam, g in zip(ORDERS, got):
        eps_hat = math.log(1 + 1 / (lam - 1))
        d_hat = min(1.0, min(math.exp((a - 1) * (gaussian_rdp(sigma, a) - eps_hat + math.log(1 - 1 / a)) - math.log(a))
                             for a in ORDERS))
        assert g == pytest.approx(gaussian_rdp(sigma, lam) + mu * d_hat + math.log(mu) / (lam - 1), rel=1e-9)
        exact = norm.cdf(1 / (2 * sigma) - eps_hat * sigma) - math.exp(eps_hat) * norm.cdf(-1 / (2 * sigma) - eps_hat * sigma)
        assert d_hat >= exact  # the RDP conversion never understates the Gaussian's δ(ε̂)


def test_selected_ledger_costs_more_and_the_accountant_applies_the_theorem():
    base = PrivacyLedger([MechanismRecord("dp-sgd", "subsampled_gaussian", 1.1, 0.01, 1000),
                          MechanismRecord("pca", "gaussian", 8.0)])
    sel = SelectionRecord("negative_binomial", eta=1.0, gamma=0.1)
    closed = base.with_selection(sel)
    from dpcore.privacy.accountant import DEFAULT_ORDERS, rdp

    want = epsilon_from_rdp(tnb_selection_rdp(rdp(base), DEFAULT_ORDERS, 1.0, 0.1), DEFAULT_ORDERS, 1e-5)[0]
    assert epsilon(closed, 1e-5) == pytest.approx(want, rel=1e-12)
    assert epsilon(closed, 1e-5) > epsilon(base, 1e-5) + 0.1
    # a grid point with less noise bounds the base algorithm from above: ε grows
    other = rdp(PrivacyLedger([MechanismRecord("pca", "gaussian", 2.0)]))
    louder = SelectionRecord("negative_binomial", eta=1.0, gamma=0.1, candidates=({"encoder_share": 0.1},),
                             base_rdp=tuple(other), orders=tuple(DEFAULT_ORDERS))
    assert epsilon(base.with_selection(louder), 1e-5) > epsilon(closed, 1e-5)
    again = SelectionRecord.from_dict(louder.to_dict())
    assert again == louder and "trials" not in louder.to_dict()
    # the old form (candidate ledgers and K) still reads, with the same ε
    old = {**sel.to_dict(), "trials": 3, "candidates": [[{"name": "pca", "mechanism": "gaussian",
                                                          "noise_multiplier": 2.0}]]}
    del old["base_rdp"], old["orders"]
    assert epsilon(base.with_selection(selection_from_dict(old)), 1e-5) == pytest.approx(
        epsilon(base.with_selection(louder), 1e-5), rel=1e-12)
    # between and beyond the stored orders the bound rounds up (RDP grows with the order)
    assert list(louder.base_curve([DEFAULT_ORDERS[0] - 0.5, 1e9])) == [other[0], math.inf]
    with pytest.raises(InvalidParameter):
        closed.add(MechanismRecord("late", "gaussian", 1.0))


def test_bad_parameters_are_one_line_errors():
    for kw in ({"eta": -1.0, "gamma": 0.5}, {"eta": 1.0, "gamma": 1.0}):
        with pytest.raises(InvalidParameter):
            SelectionRecord("negative_binomial", **kw)
    with pytest.raises(InvalidParameter):
        SelectionRecord("poisson", mu=0.0)
    with pytest.raises(InvalidParameter):
        SelectionRecord("uniform")


def test_draws_follow_the_distribution():
    rng = np.random.default_rng(1)
    ks = [draw_trials(rng, "negative_binomial", eta=1.0, gamma=0.2) for _ in range(4000)]
    assert min(ks) >= 1
    assert np.mean(ks) == pytest.approx(expected_trials("negative_binomial", 1.0, 0.2), rel=0.06)
    ks = [draw_trials(rng, "negative_binomial", eta=0.0, gamma=0.1) for _ in range(4000)]
    assert np.mean(ks) == pytest.approx(expected_trials("negative_binomial", 0.0, 0.1), rel=0.08)
    assert delta_from_rdp([0.5], [2.0], 10.0)[0] < 1e-3


def test_analyses_without_a_selection_bound_say_they_do_not_apply():
    """PLD and the sequential baseline know no private selection: on a selected run they say so
    (never a smaller ε), the PLD profile draws no curve, and the budget table shows the selection."""
    from dpcore.figures import composition_figure, pld_figure
    from dpcore.privacy.budget import budget_share, composition_table

    closed = PrivacyLedger([MechanismRecord("pca", "gaussian", 5.0)]).with_selection(SelectionRecord("poisson", mu=3.0))
    rows = {r["analysis"]: r for r in composition_table(closed, 1e-5)}
    assert rows["RDP, tight (reported)"]["epsilon"] == pytest.approx(epsilon(closed, 1e-5), rel=1e-12)
    for name in ("PLD (dp-accounting)", "Sequential (paper's baseline)"):
        assert math.isnan(rows[name]["epsilon"]) and "does not apply" in rows[name]["note"]
    assert "does not apply" in composition_figure(closed, 1e-5).data[0].text[2]
    assert len(pld_figure(closed, 1e-5).data) == 1  # the reported point only
    shares, _, _ = budget_share(closed, 1e-5)
    assert [r["name"] for r in shares] == ["pca", "private selection"] and sum(r["share"] for r in shares) == \
        pytest.approx(1.0)
