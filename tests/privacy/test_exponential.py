"""The exponential-mechanism record ("exponential", ε₀): RDP α·ε₀²/8 (zCDP of an ε₀-bounded-range
mechanism), checked against dp-accounting's ZCDpEvent; PLD as pure ε₀-DP; zCDP calibration."""
import math

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.rdp import RdpAccountant

from dpcore.errors import InvalidParameter
from dpcore.privacy import accountant as A
from dpcore.privacy.accountants.zcdp import calibrate_rho
from dpcore.privacy.dataset_size import with_count
from dpcore.privacy.ledger import MechanismRecord, PrivacyLedger, exponential_record

DELTA = 1e-5
ORDERS = list(A.DEFAULT_ORDERS)


def test_exponential_rdp_is_alpha_eps0_squared_over_8():
    led = PrivacyLedger([exponential_record("sel", 0.3, steps=5)])
    np.testing.assert_allclose(A.rdp(led), 5 * A.DEFAULT_ORDERS * 0.09 / 8.0)


def test_mixed_ledger_matches_dp_accounting_zcdp_events():
    led = PrivacyLedger([MechanismRecord("m", "gaussian", 20.0, steps=7), exponential_record("sel", 0.2, steps=6),
                         MechanismRecord("s", "subsampled_gaussian", 1.1, 0.01, 500)])
    ref = RdpAccountant(orders=ORDERS)
    ref.compose(dp_event.ComposedDpEvent([
        dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(20.0), 7),
        dp_event.SelfComposedDpEvent(dp_event.ZCDpEvent(0.2 ** 2 / 8), 6),
        dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.1)), 500)]))
    assert A.epsilon(led, DELTA) == pytest.approx(ref.get_epsilon(DELTA), rel=1e-5)


def test_pld_treats_a_selection_as_pure_dp():
    one = PrivacyLedger([exponential_record("sel", 0.5)])
    assert 0.45 < A.pld_epsilon(one, DELTA) <= 0.5 + 2e-3
    # composing adds privacy loss; and the baseline's sequential composition sums ε₀
    assert A.pld_epsilon(PrivacyLedger([exponential_record("sel", 0.5, steps=4)]), DELTA) > 0.6
    assert A.baseline_epsilon(PrivacyLedger([exponential_record("sel", 0.5, steps=4)]), DELTA) == pytest.approx(2.0)


def test_record_checks_and_round_trip():
    rec = exponential_record("sel", 0.25, steps=3)
    assert rec.noise_multiplier == pytest.approx(8.0) and MechanismRecord.from_dict(rec.to_dict()) == rec
    assert "epsilon0" not in MechanismRecord("g", "gaussian", 2.0).to_dict()  # old form kept
    for bad in (dict(epsilon0=None), dict(epsilon0=0.25, noise_multiplier=3.0)):
        with pytest.raises(InvalidParameter):
            MechanismRecord("sel", "exponential", **{"noise_multiplier": 8.0, **bad})
    with pytest.raises(InvalidParameter):
        MechanismRecord("g", "gaussian", 2.0, epsilon0=0.5)
    with pytest.raises(InvalidParameter):
        exponential_record("sel", math.inf)


@pytest.mark.parametrize("eps", [0.3, 1.0, 4.0])
def test_calibrated_rho_hits_the_target_after_what_was_spent(eps):
    spent = with_count()
    rho = calibrate_rho(eps, DELTA, spent)
    led = PrivacyLedger.from_list(spent.to_list())
    # ρ-zCDP spent as one Gaussian (1/(2σ²) = ρ/2) and selections (ε₀²/8 each = ρ/4)
    led.add(MechanismRecord("m", "gaussian", 1.0 / math.sqrt(rho)))
    led.add(exponential_record("sel", math.sqrt(2 * rho), steps=2))
    got = A.epsilon(led, DELTA)
    assert got <= eps and got == pytest.approx(eps, rel=1e-6)
    with pytest.raises(InvalidParameter, match="already spent"):
        calibrate_rho(1e-4, DELTA, spent)
