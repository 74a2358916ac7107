"""The accountant against Opacus and dp-accounting, the paper's numbers, and calibration."""
import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.pld import PLDAccountant
from dp_accounting.rdp import RdpAccountant
from opacus.accountants.analysis import rdp as opacus_rdp
from opacus.accountants.utils import get_noise_multiplier

from dpcore.errors import InvalidParameter
from dpcore.privacy import accountant as A
from dpcore.privacy.ledger import MechanismRecord, PrivacyLedger

DELTA = 1e-5
ORDERS = list(A.DEFAULT_ORDERS)


def official_mnist_ledger() -> PrivacyLedger:
    """The ledger the official P3GM code accounts for (no mean record: its defect 2)."""
    return A.p3gm_ledger(63000, 300, 4, 5.0, 100.0, 20, 1, 1.4, center="none")


def ledgers() -> dict[str, PrivacyLedger]:
    g = PrivacyLedger([MechanismRecord("g", "gaussian", 3.0, steps=4)])
    s = PrivacyLedger([MechanismRecord("s", "subsampled_gaussian", 0.9, 0.01, 3000)])
    mixed = PrivacyLedger([MechanismRecord("a", "gaussian", 8.0),
                           MechanismRecord("b", "subsampled_gaussian", 2.0, 0.05, 500),
                           MechanismRecord("c", "subsampled_gaussian", 1.1, 0.002, 10000),
                           MechanismRecord("d", "gaussian", 40.0, steps=90)])
    return {"gaussian": g, "subsampled": s, "mixed": mixed, "mnist": official_mnist_ledger(),
            "mnist-noisy-mean": A.p3gm_ledger(63000, 300, 4, 5.0, 100.0, 20, 3, 1.4)}


def dp_events(led: PrivacyLedger):
    events = []
    for r in led:
        ev = dp_event.GaussianDpEvent(r.noise_multiplier)
        if r.mechanism == "subsampled_gaussian":
            ev = dp_event.PoissonSampledDpEvent(r.sampling_rate, ev)
        events.append(dp_event.SelfComposedDpEvent(ev, r.steps))
    return dp_event.ComposedDpEvent(events)


@pytest.mark.parametrize("q, sigma", [(300 / 63000, 1.4), (0.01, 0.6), (0.1, 0.5), (0.05, 3.0),
                                      (0.3, 2.0), (0.001, 10.0)])
def test_subsampled_rdp_matches_opacus(q, sigma):
    ours = A.subsampled_gaussian_rdp(q, sigma, A.DEFAULT_ORDERS)
    ref = np.asarray(opacus_rdp.compute_rdp(q=q, noise_multiplier=sigma, steps=1, orders=ORDERS))
    np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-12)


def test_gaussian_rdp_is_alpha_over_two_sigma_squared():
    led = PrivacyLedger([MechanismRecord("g", "gaussian", 2.0, steps=3)])
    np.testing.assert_allclose(A.rdp(led), 3 * A.DEFAULT_ORDERS / 8.0)


def test_epsilon_matches_opacus_get_privacy_spent():
    q, sigma, steps = 256 / 60000, 1.1, 3000
    curve = opacus_rdp.compute_rdp(q=q, noise_multiplier=sigma, steps=steps, orders=ORDERS)
    eps_ref, order_ref = opacus_rdp.get_privacy_spent(orders=ORDERS, rdp=curve, delta=DELTA)
    led = PrivacyLedger([MechanismRecord("s", "subsampled_gaussian", sigma, q, steps)])
    eps, order = A.epsilon_and_order(led, DELTA)
    assert eps == pytest.approx(eps_ref, rel=1e-6) and order == order_ref


@pytest.mark.parametrize("name", ["gaussian", "subsampled", "mixed", "mnist", "mnist-noisy-mean"])
def test_epsilon_matches_dp_accounting_rdp(name):
    led = ledgers()[name]
    ref = RdpAccountant(orders=ORDERS)
    ref.compose(dp_events(led))
    assert A.epsilon(led, DELTA) == pytest.approx(ref.get_epsilon(DELTA), rel=1e-5)


@pytest.mark.parametrize("name", ["gaussian", "mnist"])
def test_pld_matches_dp_accounting_and_is_below_rdp(name):
    led = ledgers()[name]
    # reference: finer grid, built record by record (no merging of the Gaussian records)
    pld = PLDAccountant(dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE,
                        value_discretization_interval=2e-4)
    pld.compose(dp_events(led))
    exact = pld.get_epsilon(DELTA)
    ours = A.pld_epsilon(led, DELTA)
    assert exact * (1 - 2e-3) <= ours <= exact * 1.01  # coarser grid: pessimistic, within 1 %
    assert ours < A.epsilon(led, DELTA)  # PLD is tighter than RDP
    assert A.pld_delta(led, ours) == pytest.approx(DELTA, rel=0.05)


def test_official_mnist_config_reproduces_the_paper():
    """docs/references.md#tight-conversion: tight ≈ 1.0, classic ≈ 1.2, paper's baseline ≈ 2.2 on the official config."""
    led = official_mnist_ledger()
    tight, classic = A.epsilon(led, DELTA), A.classic_epsilon(led, DELTA)
    assert 0.95 < tight < 1.02
    assert 1.15 < classic < 1.25 and tight < classic
    assert 2.1 < A.baseline_epsilon(led, DELTA) < 2.3


def test_tight_conversion_never_worse_than_classic():
    for led in ledgers().values():
        for delta in (1e-3, 1e-5, 1e-9):
            assert A.epsilon(led, delta) <= A.classic_epsilon(led, delta) + 1e-12


def test_baseline_composes_the_three_parts():
    led = official_mnist_ledger()
    d3 = DELTA / 3
    pca = A.gaussian_mechanism_epsilon(5.0, d3)
    em = A.zcdp_epsilon(60 / (2 * 100.0 ** 2), d3)
    sgd_only = PrivacyLedger([r for r in led if r.name == "dp-sgd"])
    sgd = A.baseline_epsilon(sgd_only, d3)
    assert A.baseline_epsilon(led, DELTA) == pytest.approx(pca + em + sgd)
    assert pca == pytest.approx(math.sqrt(2 * math.log(1.25 / d3)) / 5.0)
    # the analytic Gaussian ε is exact: δ(ε) of N(0, σ²) at that ε is the target δ
    from scipy.stats import norm
    e, s = A.analytic_gaussian_epsilon(2.0, 1e-6), 2.0
    assert norm.cdf(0.5 / s - e * s) - math.exp(e) * norm.cdf(-0.5 / s - e * s) == pytest.approx(
        1e-6, rel=1e-6)


def test_pld_delta_curve_is_monotone():
    led = ledgers()["mixed"]
    deltas = [A.pld_delta(led, e) for e in np.linspace(0, 8, 50)]
    assert all(a >= b for a, b in zip(deltas, deltas[1:]))
    assert 0 <= deltas[-1] < deltas[0] <= 1


def test_empty_ledger_costs_nothing():
    led = PrivacyLedger()
    assert A.epsilon(led, DELTA) == 0 and A.pld_epsilon(led, DELTA) == 0
    assert A.baseline_epsilon(led, DELTA) == 0 and A.pld_delta(led, 0.5) == 0


def test_p3gm_ledger_schedule_and_names():
    led = A.p3gm_ledger(1000, 300, 1.0, 5.0, 100.0, 4, 2, 1.2)
    names = [r.name for r in led]
    assert names == ["dp-pca-mean", "dp-pca", "dp-em-weights", "dp-em-means", "dp-em-variances",
                     "dp-sgd"]
    sgd = led.records[-1]
    assert sgd.mechanism == "subsampled_gaussian" and sgd.sampling_rate == 0.3
    assert sgd.steps == 4  # ceil(1 · 1000 / 300)
    assert [r.steps for r in led][2:5] == [4, 8, 8]
    assert led.records[0].noise_multiplier == 10.0  # dp_pca's default mean multiplier 2σ_p
    assert sum(r.steps for r in led if r.name.startswith("dp-em")) == A.em_mechanism_count(4, 2)


@pytest.mark.parametrize("eps, share", [(1.0, 0.3), (0.3, 0.1), (4.0, 0.5), (10.0, 0.9)])
def test_calibrate_p3gm_hits_target_and_share(eps, share):
    cal = A.calibrate_p3gm(eps, DELTA, share, 63000, 300, 4, components=2)
    assert 0.98 * eps <= cal.epsilon <= eps * (1 + 1e-9)
    assert cal.epsilon == pytest.approx(A.epsilon(cal.ledger, DELTA))
    assert cal.achieved_share == pytest.approx(share, abs=0.02)
    expected = A.p3gm_ledger(63000, 300, 4, cal.pca_sigma, cal.em_sigma, 20, 2, cal.sgd_sigma,
                             cal.mean_sigma)
    assert cal.ledger.records == expected.records
    # the encoder's RDP is the requested share at the order that attains ε
    enc = PrivacyLedger([r for r in cal.ledger if r.name != "dp-sgd"])
    i = list(A.DEFAULT_ORDERS).index(cal.order)
    assert A.rdp(enc)[i] / A.rdp(cal.ledger)[i] == pytest.approx(share, abs=0.02)


def test_more_encoder_share_means_less_pca_noise_more_sgd_noise():
    lo = A.calibrate_p3gm(1.0, DELTA, 0.1, 63000, 300, 4)
    hi = A.calibrate_p3gm(1.0, DELTA, 0.5, 63000, 300, 4)
    assert hi.pca_sigma < lo.pca_sigma and hi.em_sigma < lo.em_sigma
    assert hi.sgd_sigma > lo.sgd_sigma


@pytest.mark.filterwarnings("ignore:Optimal order")
@pytest.mark.parametrize("eps, q, steps", [(1.0, 0.01, 1000), (3.0, 256 / 60000, 5000),
                                           (0.5, 0.1, 100)])
def test_calibrate_sgd_hits_target_and_agrees_with_opacus(eps, q, steps):
    sigma = A.calibrate_sgd(eps, DELTA, q, steps)
    led = PrivacyLedger([MechanismRecord("s", "subsampled_gaussian", sigma, q, steps)])
    assert 0.98 * eps <= A.epsilon(led, DELTA) <= eps * (1 + 1e-9)
    ref = get_noise_multiplier(target_epsilon=eps, target_delta=DELTA, sample_rate=q, steps=steps,
                               accountant="rdp")
    assert sigma == pytest.approx(ref, rel=0.03)


def test_calibrate_dp_vae_matches_paper_config():
    """docs/references.md#dp-sgd: σ = 1.2, batch 300, 10 epochs → ε ≈ 1; calibrating ε = 1 gives σ ≈ 1.2."""
    cal = A.calibrate_dp_vae(1.0, DELTA, 63000, 300, 10)
    assert cal.sgd_sigma == pytest.approx(1.2, rel=0.03)
    assert [r.name for r in cal.ledger] == ["dp-sgd"]


@pytest.mark.parametrize("kw, match", [
    (dict(epsilon=0), "epsilon"), (dict(epsilon=-1), "epsilon"), (dict(delta=1.0), "delta"),
    (dict(delta=0), "delta"), (dict(encoder_share=0), "encoder_share"),
    (dict(encoder_share=1.0), "encoder_share"), (dict(batch=0), "batch"),
    (dict(epsilon=1e-4), "epsilon"), (dict(epsilon=1e4), "epsilon"), (dict(epochs=0), "epochs"),
    (dict(components=0), "components")])
def test_calibrate_p3gm_rejects_bad_arguments(kw, match):
    args = dict(epsilon=1.0, delta=DELTA, encoder_share=0.3, n=63000, batch=300, epochs=4)
    args.update(kw)
    with pytest.raises(InvalidParameter, match=match):
        A.calibrate_p3gm(**args)


def test_calibrate_sgd_rejects_bad_arguments():
    with pytest.raises(InvalidParameter, match="sample_rate"):
        A.calibrate_sgd(1.0, DELTA, 1.5, 100)
    with pytest.raises(InvalidParameter, match="epsilon"):
        A.calibrate_sgd(0.0, DELTA, 0.01, 100)
    with pytest.raises(InvalidParameter, match="delta"):
        A.epsilon(official_mnist_ledger(), 2.0)
