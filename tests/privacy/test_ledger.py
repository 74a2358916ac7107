import pytest

from dpcore.errors import InvalidParameter
from dpcore.privacy.ledger import MechanismRecord, PrivacyLedger


def test_consecutive_identical_records_merge_steps():
    led = PrivacyLedger()
    for _ in range(5):
        led.add(MechanismRecord("dp-sgd", "subsampled_gaussian", 1.2, sampling_rate=0.01))
    led.add(MechanismRecord("dp-pca", "gaussian", 5.0))
    led.add(MechanismRecord("dp-sgd", "subsampled_gaussian", 1.2, sampling_rate=0.01))
    assert [(r.name, r.steps) for r in led] == [("dp-sgd", 5), ("dp-pca", 1), ("dp-sgd", 1)]


def test_different_parameters_do_not_merge():
    led = PrivacyLedger()
    led.add(MechanismRecord("dp-sgd", "subsampled_gaussian", 1.2, sampling_rate=0.01))
    led.add(MechanismRecord("dp-sgd", "subsampled_gaussian", 1.3, sampling_rate=0.01))
    assert len(led) == 2


def test_round_trip_through_dicts():
    led = PrivacyLedger()
    led.add(MechanismRecord("dp-em", "gaussian", 100.0, steps=60, sensitivity=0.5))
    again = PrivacyLedger.from_list(led.to_list())
    assert again.records == led.records


@pytest.mark.parametrize("kwargs", [
    dict(mechanism="laplace", noise_multiplier=1.0),
    dict(mechanism="gaussian", noise_multiplier=0.0),
    dict(mechanism="gaussian", noise_multiplier=1.0, sampling_rate=0.5),
    dict(mechanism="subsampled_gaussian", noise_multiplier=1.0, sampling_rate=1.5),
    dict(mechanism="gaussian", noise_multiplier=1.0, steps=-1),
])
def test_invalid_records_are_refused(kwargs):
    with pytest.raises(InvalidParameter):
        MechanismRecord("x", **kwargs)
