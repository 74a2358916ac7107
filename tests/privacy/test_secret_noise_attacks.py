"""The auditor's attacks on seeded noise (issue "Privacy truth", finding 1), against P3GM on digits.

An attacker knows every training row but one, the config (seed, σ's, clip norm: all in model.json)
and the code. With noise drawn from the seed they re-draw DP-PCA's mean noise and read the missing
row off the released mean; two runs of an ε sweep with one seed give the exact row sum. Secret
noise defeats both; `reproducible_noise=True` (debug) must still fall to them, which is what shows
the attacks work.
"""
import numpy as np
import pytest

from dpcore.data import load_split
from dpcore.models import load_model, make_model
from dpcore.models.rows import model_matrix
from dpcore.privacy.dp_pca import MEAN_RECORD
from dpcore.privacy.mechanisms import clip_rows
from dpcore.privacy.randomness import NoiseSource

TINY = dict(pca_dim=8, hidden=16, epochs=1, batch_size=100, warmup_steps=0, em_iters=3, seed=0)


@pytest.fixture(scope="module")
def digits():
    return load_split("digits", seed=0)


@pytest.fixture(scope="module")
def fits(digits):
    """Published models: secret twice and seeded twice at ε = 1, one of each at ε = 3."""
    train = digits[0]
    out = {}
    for key, eps, debug in [("secret", 1.0, False), ("secret2", 1.0, False), ("secret3", 3.0, False),
                            ("seeded", 1.0, True), ("seeded2", 1.0, True), ("seeded3", 3.0, True)]:
        model = make_model("p3gm", **TINY, epsilon=eps, reproducible_noise=debug)
        model.fit(train)
        out[key] = model
    return out


def _released_sum(model):
    """ñ · released mean = Σ clip(x, R) + noise, with ñ the row count the model publishes
    (model.json's released_rows; float32 mean: ~1e-4 rounding in the sum)."""
    return model.pca["mean"].astype(np.float64) * model.released_rows


def _redrawn_mean_noise(model, shape):
    """The attacker's guess of the mean noise: the debug mode's stream for the run's seed."""
    cfg = model.config
    std = model.calibration["mean_sigma"] * model.mean_clip
    return NoiseSource.seeded(cfg.seed).numpy(MEAN_RECORD).normal(0.0, std, size=shape)


def test_missing_row_is_recovered_only_from_seeded_noise(fits, digits):
    X, _ = model_matrix(digits[0])
    target, others = X[7], np.delete(X, 7, axis=0)
    errors = {}
    for key in ("secret", "seeded"):
        model = fits[key]
        rows = clip_rows(others, model.mean_clip).sum(0)
        guess = _released_sum(model) - rows - _redrawn_mean_noise(model, X.shape[1])
        errors[key] = np.abs(guess - target).max()
    assert errors["seeded"] < 1e-2  # the attack works: the debug run leaks the row
    assert errors["secret"] > 5.0  # pixels lie in [0, 1]; the noise std is σ_m·R ≈ 160


def test_same_seed_twice_publishes_different_models(fits):
    a, b = fits["secret"], fits["secret2"]
    assert np.abs(a.pca["mean"] - b.pca["mean"]).max() > 1e-3
    assert np.abs(a.mog["means"] - b.mog["means"]).max() > 0
    wa, wb = a.decoder.state_dict(), b.decoder.state_dict()
    assert any(not np.array_equal(wa[k].numpy(), wb[k].numpy()) for k in wa)
    assert not a.ledger.reproducible_noise and {r.noise for r in a.ledger} == {"secret"}


def test_reproducible_noise_repeats_the_model_and_is_labelled_seeded(fits):
    a, b = fits["seeded"], fits["seeded2"]
    np.testing.assert_array_equal(a.pca["mean"], b.pca["mean"])
    np.testing.assert_array_equal(a.mog["means"], b.mog["means"])
    wa, wb = a.decoder.state_dict(), b.decoder.state_dict()
    assert all(np.array_equal(wa[k].numpy(), wb[k].numpy()) for k in wa)
    assert a.ledger.reproducible_noise and {r.noise for r in a.ledger} == {"seeded"}


def test_epsilon_sweep_pair_gives_the_row_sum_only_when_seeded(fits, digits):
    """S_k = s + σ_k·R·z_k: with z_1 = z_3 (one seed), (σ_3·S_1 − σ_1·S_3)/(σ_3 − σ_1) = s exactly."""
    X, _ = model_matrix(digits[0])
    errors = {}
    for key in ("secret", "seeded"):
        lo, hi = fits[key], fits[key + "3"]
        s1, s3 = _released_sum(lo), _released_sum(hi)
        g1, g3 = lo.calibration["mean_sigma"], hi.calibration["mean_sigma"]
        guess = (g1 * s3 - g3 * s1) / (g1 - g3)
        errors[key] = np.abs(guess - clip_rows(X, lo.mean_clip).sum(0)).max()
    assert errors["seeded"] < 1.0  # the exact row sum (up to float32 rounding of the means)
    assert errors["secret"] > 20.0


def test_saved_model_and_sample_seed_give_identical_rows(fits, tmp_path):
    model = fits["secret"]
    model.save(tmp_path / "m")
    back = load_model(tmp_path / "m")
    a, b = model.sample(50, seed=3), back.sample(50, seed=3)
    np.testing.assert_array_equal(a.features, b.features)
    np.testing.assert_array_equal(a.labels, b.labels)
    assert not np.array_equal(back.sample(50, seed=4).features, a.features)
    assert not back.privacy_ledger().reproducible_noise
