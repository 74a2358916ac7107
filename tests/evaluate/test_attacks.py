"""The attack ladder: it finds leakage where there is leakage, and proves nothing where there is none."""
import math

import numpy as np
import pytest

from dpcore.data.dataset import Dataset
from dpcore.errors import InvalidParameter
from dpcore.evaluate.attacks import choose_targets, parse_attacks, run_attacks
from dpcore.evaluate.attacks.canary import audit_epsilon, audit_p_value, best_bound
from dpcore.evaluate.attacks.domias import kde_logpdf


def _gauss(n, d=6, seed=0, shift=0.0):
    rng = np.random.default_rng(seed)
    return Dataset("g", np.clip(0.5 + shift + 0.12 * rng.standard_normal((n, d)), 0, 1).astype(np.float32))


def test_copied_training_rows_are_caught_by_every_black_box_attack(digits):
    train, test = digits["train"], digits["test"]
    res, skipped, targets, _ = run_attacks(train, train, test, None, "black-box", n_targets=200)
    assert {r.name for r in res} == {"dcr", "monte-carlo", "gan-leaks", "domias"} and not skipped
    assert targets.n == min(200, test.n // 2)
    assert not set(targets.non_member_index) & set(np.flatnonzero(np.isin(np.arange(test.n), targets.reference_index)))
    for r in res:
        # DOMIAS' KDE (Scott bandwidth in 10 dimensions) is smooth, so exact copies stand out less.
        assert r.auc > (0.75 if r.name == "domias" else 0.9), r.name
        assert r.eps_lower_bound > (0.0 if r.name == "domias" else 1.0), r.name
        assert r.tpr_at_fpr["0.01"] >= r.tpr_at_fpr["0.001"]
        assert 0 <= r.eps_lower_bound <= r.eps_point_estimate <= r.eps_upper


def test_fresh_samples_prove_nothing():
    members, held_out, fresh = _gauss(600, seed=1), _gauss(1200, seed=2), _gauss(3000, seed=3)
    res, _, _, _ = run_attacks(fresh, members, held_out, None, "black-box", n_targets=600)
    for r in res:
        assert abs(r.auc - 0.5) < 0.07, r.name
        assert r.eps_lower_bound < 0.5, r.name


def test_domias_detects_a_generator_that_puts_extra_mass_on_members():
    """Synthetic = fresh rows + noisy copies of the members: p_syn / p_ref peaks at members."""
    rng = np.random.default_rng(0)
    members, held_out = _gauss(400, seed=1), _gauss(800, seed=2)
    copies = members.features + 0.03 * rng.standard_normal(members.features.shape).astype(np.float32)
    syn = Dataset("s", np.concatenate([_gauss(2000, seed=3).features, copies]))
    res, _, _, _ = run_attacks(syn, members, held_out, None, "domias", n_targets=400)
    assert res[0].auc > 0.6
    fresh, _, _, _ = run_attacks(_gauss(2400, seed=4), members, held_out, None, "domias", n_targets=400)
    assert abs(fresh[0].auc - 0.5) < 0.07


def test_kde_matches_brute_force():
    rng = np.random.default_rng(0)
    x, rows = rng.standard_normal((5, 3)), rng.standard_normal((50, 3))
    h = 0.7
    d2 = ((x[:, None] - rows[None]) ** 2).sum(-1)
    want = np.log(np.exp(-d2 / (2 * h * h)).mean(1) / (2 * np.pi * h * h) ** 1.5)
    np.testing.assert_allclose(kde_logpdf(x, rows, h, chunk=7), want, rtol=1e-9)


def test_loss_attack_catches_a_memorising_vae_and_not_a_fresh_one(digits):
    from dpcore.models.vae import VAE, VAEConfig

    train = digits["train"].subset(np.arange(120))
    model = VAE(VAEConfig(hidden=64, latent_dim=8, epochs=150, batch_size=16, likelihood="gaussian",
                          recon_scale=0.1))
    model.fit(train)
    res, skipped, _, _ = run_attacks(model.sample(120, seed=0), train, digits["test"], model, "loss,critic",
                                     n_targets=120)
    assert "critic" in skipped and res[0].name == "loss"
    assert res[0].auc > 0.8
    # the same model scored on two halves of the held-out rows: nothing to find
    res2, _, _, _ = run_attacks(model.sample(120, seed=0), digits["test"].subset(np.arange(150)),
                                digits["test"].subset(np.arange(150, digits["test"].n)), model, "loss")
    assert abs(res2[0].auc - 0.5) < 0.15


@pytest.mark.parametrize("name", ["dp-vae", "p3gm"])
def test_no_attack_proves_more_than_the_accountant_on_a_dp_run(name):
    """ε = 1 runs: no empirical lower bound exceeds the accountant's ε, every curve is consistent."""
    from dpcore.data import load_split
    from dpcore.models import make_model
    from dpcore.privacy.accountant import epsilon

    train, test = load_split("digits", seed=0, test_size=0.5)
    extra = {"pca_dim": 10, "warmup_steps": 10} if name == "p3gm" else {}
    model = make_model(name, epsilon=1.0, hidden=64, epochs=2, batch_size=100, **extra)
    model.fit(train)
    delta = model.config.delta
    eps = float(epsilon(model.privacy_ledger(), delta))
    res, skipped, _, _ = run_attacks(model.sample(train.n, seed=0), train, test, model, "default",
                                     n_targets=400, delta=delta)
    assert len(res) == 5 and not skipped
    for r in res:
        assert r.eps_lower_bound <= eps, (r.name, r.eps_lower_bound, eps)
        assert r.consistent_with(eps, delta), r.name


def test_targets_keep_the_outlier_and_parse_errors(digits):
    train = digits["train"]
    members = Dataset("d", train.features, train.labels, label_names=train.label_names, outlier_index=5)
    t = choose_targets(members, digits["test"], 50)
    assert t.member_index[t.outlier_position] == 5
    with pytest.raises(InvalidParameter):
        parse_attacks("dcr,nope")
    assert parse_attacks("all")[-1] == "loss-reference"


def test_canary_bound_closed_form_and_monotone():
    # all r guesses right, δ = 0: q^r = 1 − confidence  ⇒  ε = log(q / (1 − q))
    for r in (20, 100):
        q = 0.05 ** (1 / r)
        assert audit_epsilon(r, r, r, 0.0, 0.95) == pytest.approx(math.log(q / (1 - q)), rel=1e-6)
    assert audit_epsilon(200, 100, 50, 1e-5) == 0.0
    p = [audit_p_value(200, 100, 80, e, 1e-5) for e in (0.5, 1.0, 2.0)]
    assert p[0] < p[1] < p[2]
    assert audit_epsilon(200, 100, 80, 1e-3) < audit_epsilon(200, 100, 80, 0.0)


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_canary_bound_is_valid_on_randomised_response(eps):
    """An exactly ε-DP 'training run': each canary's score is its coin through ε-randomised response.
    At 95 % confidence the bound may exceed ε in at most ~5 % of runs; over 10 runs allow 2."""
    bounds = []
    for seed in range(10):
        rng = np.random.default_rng(seed)
        m = 1000
        coins = rng.random(m) < 0.5
        keep = rng.random(m) < math.exp(eps) / (1 + math.exp(eps))
        scores = np.where(keep, coins, ~coins) + 1e-3 * rng.random(m)  # ties broken at random
        bounds.append(best_bound(scores, coins, m, 0.0)[0]["epsilon_lower_bound"])
    bounds = np.array(bounds)
    assert (bounds > eps).sum() <= 2 and bounds.mean() < eps
    assert bounds.mean() > 0.3 * eps  # and it is not vacuous with 1000 canaries
