"""Calibration after budget already spent on the same rows (the dataset's DP preprocessing):
the run's TOTAL ε (accountant's ε of spent + model ledger) must equal the target."""
import pytest

from dpcore.errors import InvalidParameter
from dpcore.privacy import accountant as A
from dpcore.privacy.gradient_sanitizer import ledger_record, noise_for_epsilon
from dpcore.privacy.ledger import MechanismRecord, PrivacyLedger

DELTA = 1e-5
N, BATCH = 20000, 200


def spent_ledger(sigma: float = 10.0) -> PrivacyLedger:
    """What `read_csv(..., undeclared="dp")` leaves: one Gaussian histogram release."""
    return PrivacyLedger([MechanismRecord("preprocessing: noisy bounds", "gaussian", sigma,
                                          sensitivity=2 ** 0.5)])


def model_part(ledger: PrivacyLedger, spent: PrivacyLedger) -> PrivacyLedger:
    assert ledger.records[:len(spent)] == spent.records  # spent records come first
    return PrivacyLedger(ledger.records[len(spent):])


@pytest.mark.parametrize("eps", [1.0, 3.0])
def test_sgd_and_dp_vae_total_epsilon_is_the_target(eps):
    spent = spent_ledger()
    before = list(spent.records)
    q, steps = A.sgd_schedule(N, BATCH, 2)
    sigma = A.calibrate_sgd(eps, DELTA, q, steps, spent=spent)
    led = PrivacyLedger(list(spent.records))
    led.add(MechanismRecord("dp-sgd", "subsampled_gaussian", sigma, q, steps))
    assert A.epsilon(led, DELTA) == pytest.approx(eps, abs=1e-6)
    assert sigma > A.calibrate_sgd(eps, DELTA, q, steps)  # the model gets less budget

    cal = A.calibrate_dp_vae(eps, DELTA, N, BATCH, 2, spent=spent)
    assert cal.sgd_sigma == sigma
    assert model_part(cal.ledger, spent).records == A.dp_vae_ledger(N, BATCH, 2, sigma).records
    assert cal.epsilon == pytest.approx(eps, abs=1e-6)
    assert A.epsilon(cal.ledger, DELTA) == pytest.approx(eps, abs=1e-6)
    assert spent.records == before  # the caller's ledger is not modified


def test_gs_wgan_noise_total_epsilon_is_the_target():
    spent, ndis, queries = spent_ledger(), 20, 3000
    sigma = noise_for_epsilon(2.0, DELTA, ndis, queries, spent=spent)
    led = PrivacyLedger(list(spent.records))
    led.add(ledger_record(sigma, ndis, queries))
    assert A.epsilon(led, DELTA) == pytest.approx(2.0, abs=1e-6)
    assert sigma > noise_for_epsilon(2.0, DELTA, ndis, queries)


@pytest.mark.parametrize("eps, share, spent_sigma", [(1.0, 0.3, 6.0), (4.0, 0.5, 3.0)])
def test_p3gm_total_epsilon_is_the_target_and_share_is_of_the_remainder(eps, share, spent_sigma):
    spent = spent_ledger(spent_sigma)
    cal = A.calibrate_p3gm(eps, DELTA, share, N, BATCH, 2, spent=spent)
    assert cal.epsilon == pytest.approx(eps, abs=1e-6)
    assert A.epsilon(cal.ledger, DELTA) == pytest.approx(eps, abs=1e-6)
    own = model_part(cal.ledger, spent)
    assert own.records == A.p3gm_ledger(N, BATCH, 2, cal.pca_sigma, cal.em_sigma, 20, 1,
                                        cal.sgd_sigma, cal.mean_sigma).records
    # at the order attaining ε, the encoder holds `share` of the RDP left after the spent records
    i = list(A.DEFAULT_ORDERS).index(cal.order)
    enc = A.rdp(PrivacyLedger([r for r in own if r.name != "dp-sgd"]))[i]
    remainder = A.rdp(cal.ledger)[i] - A.rdp(spent)[i]
    assert enc / remainder == pytest.approx(share, abs=0.02)
    assert cal.achieved_share == pytest.approx(enc / remainder)
    assert enc / A.rdp(cal.ledger)[i] < share - 0.05  # ... not of the total


@pytest.mark.parametrize("call", [
    lambda s: A.calibrate_sgd(0.5, DELTA, 0.01, 1000, spent=s),
    lambda s: A.calibrate_dp_vae(0.5, DELTA, N, BATCH, 2, spent=s),
    lambda s: A.calibrate_p3gm(0.5, DELTA, 0.3, N, BATCH, 2, spent=s),
    lambda s: noise_for_epsilon(0.5, DELTA, 20, 3000, spent=s)], ids=["sgd", "dp-vae", "p3gm", "gs"])
def test_budget_used_up_by_the_spent_records_is_refused(call):
    spent = spent_ledger(sigma=3.0)
    assert A.epsilon(spent, DELTA) > 0.5
    with pytest.raises(InvalidParameter, match=r"already spends .* of epsilon=0\.5"):
        call(spent)


def test_no_spent_records_change_nothing():
    q, steps = A.sgd_schedule(N, BATCH, 2)
    empty = [None, PrivacyLedger(), PrivacyLedger([MechanismRecord("z", "gaussian", 1.0, steps=0)])]
    ref_sgd = A.calibrate_sgd(1.0, DELTA, q, steps)
    ref_p3gm = A.calibrate_p3gm(1.0, DELTA, 0.3, N, BATCH, 2)
    ref_vae = A.calibrate_dp_vae(1.0, DELTA, N, BATCH, 2)
    for spent in empty[:2]:
        assert A.calibrate_sgd(1.0, DELTA, q, steps, spent=spent) == ref_sgd
        cal = A.calibrate_p3gm(1.0, DELTA, 0.3, N, BATCH, 2, spent=spent)
        assert cal.to_dict() == ref_p3gm.to_dict()
        assert A.calibrate_dp_vae(1.0, DELTA, N, BATCH, 2, spent=spent).to_dict() == ref_vae.to_dict()
    assert A.calibrate_sgd(1.0, DELTA, q, steps, spent=empty[2]) == ref_sgd  # a 0-step record


def test_calibrated_sgd_never_publishes_more_than_the_target():
    """GS-WGAN's Fashion-MNIST setting (q = 1/100, 128 000 queries) used to give the accountant's
    ε = 10.000000000033 for a target of 10: round-off, but a published ε above the one asked for."""
    from dpcore.privacy.accountant import epsilon
    from dpcore.privacy.accountants.calibrate import calibrate_sgd
    from dpcore.privacy.ledger import MechanismRecord, PrivacyLedger

    for eps, q, steps in ((10.0, 0.01, 128_000), (1.0, 0.016, 480), (4.0, 0.02, 25_000)):
        sigma = calibrate_sgd(eps, 1e-5, q, steps)
        ledger = PrivacyLedger()
        ledger.add(MechanismRecord("dp-sgd", "subsampled_gaussian", sigma, sampling_rate=q, steps=steps))
        got = epsilon(ledger, 1e-5)
        assert got <= eps and eps - got < 1e-8, (eps, got)
