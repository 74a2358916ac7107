"""The attack ladder's statistics and its Monte Carlo attack (the workbench's one membership-attack
implementation, `dpcore.evaluate.attacks`): a memorising generator is caught, fresh samples reveal
nothing, the streaming distance kernel matches brute force, the outlier's rank, the exact
Clopper–Pearson interval and the conservative empirical ε."""
import math

import numpy as np
import pytest
from scipy import stats

from dpcore.data.dataset import Dataset
from dpcore.evaluate.attacks import run_attacks
from dpcore.evaluate.attacks.distance import nearest_and_counts
from dpcore.evaluate.attacks.result import clopper_pearson, empirical_eps
from dpcore.evaluate.bounds import tradeoff_eps_delta


def _gauss(n, d=8, seed=0):
    rng = np.random.default_rng(seed)
    return Dataset("g", np.clip(0.5 + 0.12 * rng.standard_normal((n, d)), 0, 1).astype(np.float32))


def monte_carlo(synthetic, members, non_members, n_targets):
    (result,), _, _, _ = run_attacks(synthetic, members, non_members, attacks=["monte-carlo"],
                                     n_targets=n_targets, seed=0, device="cpu")
    return result


def test_memorising_model_is_caught(digits):
    res = monte_carlo(digits["train"], digits["train"], digits["test"], n_targets=200)
    assert res.auc > 0.95
    assert res.eps_lower_bound > 1.0
    assert res.alpha[0] == 0 and res.alpha[-1] == 1 and np.all(np.diff(res.alpha) >= 0)
    np.testing.assert_allclose(res.beta[0], 1.0)
    d = res.to_dict()
    assert d["auc"] == res.auc and len(d["curve"]["alpha"]) == 101


def test_fresh_samples_reveal_nothing():
    members, non_members, fresh = _gauss(1000, seed=1), _gauss(2000, seed=2), _gauss(5000, seed=3)
    res = monte_carlo(fresh, members, non_members, n_targets=1000)
    assert abs(res.auc - 0.5) < 0.05
    assert res.eps_lower_bound < 0.5
    memo = monte_carlo(members, members, non_members, n_targets=1000)
    assert memo.auc > 0.95


def test_streaming_kernel_matches_brute_force(digits):
    t, s = digits["test"].features[:50], digits["train"].features
    for chunk in (33, 100_000):
        near, cnt = nearest_and_counts(t, s, 1.5, chunk_size=chunk, device="cpu")
        full = np.sqrt(((t[:, None, :].astype(np.float64) - s[None]) ** 2).sum(-1))
        np.testing.assert_allclose(near, full.min(1), atol=1e-3)
        np.testing.assert_array_equal(cnt, (full <= 1.5).sum(1))


def test_the_outlier_memorised_is_among_the_most_exposed(digits):
    train = digits["train"]
    feats = train.features.copy()
    feats[7] = 1.0  # an all-white outlier
    members = Dataset("digits", feats, train.labels, outlier_index=7)
    memo = monte_carlo(members, members, digits["test"], n_targets=200)
    assert memo.outlier_score is not None and 1 <= memo.outlier_rank <= 400
    assert memo.outlier_score == memo.member_scores[memo.outlier_position]
    # samples of other rows: nothing like the outlier, so it ranks below the memorised case
    clean = monte_carlo(digits["test"], members, digits["train"].subset(np.arange(600, 1200)), n_targets=200)
    assert clean.outlier_rank > memo.outlier_rank
    assert clean.outlier_score < 1 / digits["test"].n  # no sample within the radius: only the tie-break
    assert monte_carlo(digits["test"], digits["train"], digits["test"], 50).outlier_rank is None


@pytest.mark.parametrize("k,n", [(0, 20), (1, 20), (7, 20), (20, 20), (3, 1000), (999, 1000)])
def test_clopper_pearson_matches_scipy(k, n):
    lo, hi = clopper_pearson(k, n, 0.95)
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    assert lo == pytest.approx(ci.low, abs=1e-10) and hi == pytest.approx(ci.high, abs=1e-10)
    if 0 < k < n:
        assert lo == pytest.approx(stats.beta.ppf(0.025, k, n - k + 1), abs=1e-12)
        assert hi == pytest.approx(stats.beta.ppf(0.975, k + 1, n - k), abs=1e-12)


def test_randomized_response_eps_bound_brackets_truth():
    """Randomized response with ε = 2 is exactly on the (2, 0) curve at α = β = 1/(1 + e²):
    the conservative bound must stay below 2 and the point estimate come close to it."""
    eps = 2.0
    p_keep = math.exp(eps) / (1 + math.exp(eps))
    rng = np.random.default_rng(0)
    n = 20_000
    mem = (rng.random(n) < p_keep).astype(float)        # members report 1 w.p. p_keep
    non = (rng.random(n) >= p_keep).astype(float)       # non-members report 1 w.p. 1 − p_keep
    pts, lb, point = empirical_eps(mem, non, 0.0, 0.95)
    assert 1.6 < lb <= eps
    assert point == pytest.approx(eps, abs=0.1)
    for p in pts:  # every CP corner lies above the true curve
        assert p["beta_upper"] >= tradeoff_eps_delta(min(p["alpha_upper"], 1.0), eps, 0.0) - 1e-12
