"""The dataset size is private under add/remove-one adjacency: it is released once as a ledgered
noisy count ñ, and every published statistic that needs n uses ñ (docs/neighbouring-relation.md)."""
import json
import math

import numpy as np
import pytest
import torch

from dpcore.data import load_split
from dpcore.models import make_model
from dpcore.privacy import accountant as A
from dpcore.privacy import dataset_size as S
from dpcore.privacy.dp_pca import DPPCA
from dpcore.privacy.dpsgd import DPSGD
from dpcore.privacy.ledger import MechanismRecord, PrivacyLedger

EPS, DELTA, B, E = 1.0, 1e-5, 50, 1
TINY = {"p3gm": dict(pca_dim=4, hidden=16, warmup_steps=0, em_iters=3),
        "p3gm-ae": dict(pca_dim=4, hidden=16, warmup_steps=0, em_iters=3),
        "dp-vae": dict(latent_dim=2, hidden=16)}


@pytest.fixture(scope="module")
def rows():
    return load_split("digits", seed=0)[0]


def fit_and_save(name, data, tmp_path, tag=""):
    model = make_model(name, epochs=E, batch_size=B, epsilon=EPS, delta=DELTA, **TINY[name])
    result = model.fit(data)
    model.save(tmp_path / f"{name}{tag}")
    meta = json.loads((tmp_path / f"{name}{tag}" / "model.json").read_text())
    return model, result, meta


# ------------------------------------------------------------------ the mechanism itself
def test_noisy_count_has_the_std_and_record_the_ledger_claims():
    led = PrivacyLedger()
    draws = np.array([S.noisy_count(10_000, np.random.default_rng(i), ledger=led)
                      for i in range(3000)])
    assert led.records == [MechanismRecord("dataset-size", "gaussian", S.COUNT_SIGMA,
                                           steps=3000, sensitivity=1.0, noise="seeded")]  # int-seeded rngs
    assert draws.dtype.kind == "i"
    assert np.std(draws - 10_000) == pytest.approx(S.COUNT_SIGMA, rel=0.06)
    assert abs(np.mean(draws - 10_000)) < 4 * S.COUNT_SIGMA / math.sqrt(3000)


def test_post_processing_rounds_and_floors():
    assert S.post_process_count(1436.6) == 1437
    assert S.post_process_count(-80.0) == S.MIN_COUNT == 1
    assert S.sampling_rate(300, 200) == 1.0  # clamped: ñ may fall below B
    assert A.sgd_schedule(200, 300, 2) == (1.0, 2)


def test_count_costs_a_small_share_of_an_epsilon_1_budget():
    """The docstring's numbers: at ε = 1 (P3GM, n = 60 000, α* = 12) the count is < 1 % of the
    run's RDP, and its relative error at n = 1 437 is σ_n/n < 4 %."""
    cal = A.calibrate_p3gm(1.0, DELTA, 0.3, 60_000, 300, 4, spent=S.with_count())
    order = np.array([cal.order])
    share = A.rdp([S.count_record()], order)[0] / A.rdp(cal.ledger, order)[0]
    assert 0 < share < 0.01
    assert S.COUNT_SIGMA / 1437 < 0.04


def test_spending_the_count_first_raises_sigma_by_exactly_its_rdp():
    """Derivation: the model gets R_avail(α) = ε − offset(α) − α/(2σ_n²), so σ_s grows, and at
    the attained order the DP-SGD record's RDP is exactly what the count leaves."""
    q, steps = A.sgd_schedule(1437, B, 4)
    without = A.calibrate_dp_vae(EPS, DELTA, 1437, B, 4)
    with_c = A.calibrate_dp_vae(EPS, DELTA, 1437, B, 4, spent=S.with_count())
    assert with_c.sgd_sigma > without.sgd_sigma
    assert with_c.ledger.records[0] == S.count_record()
    o = np.array([with_c.order])
    left = EPS - A.conversion_offset(o, DELTA)[0] - o[0] / (2 * S.COUNT_SIGMA ** 2)
    sgd = steps * A.subsampled_gaussian_rdp(q, with_c.sgd_sigma, o)[0]
    assert sgd == pytest.approx(left, rel=1e-6)
    assert A.epsilon(with_c.ledger, DELTA) == pytest.approx(EPS, rel=1e-6)


def test_dpsgd_and_dppca_use_the_released_count():
    X = np.random.default_rng(0).random((120, 5))
    pca = DPPCA(2, noise_multiplier=None, mean_clip_norm=10.0).fit(X, None, 0, count=150)
    np.testing.assert_allclose(pca.mean_, X.sum(0) / 150)
    ev = [DPPCA(2, noise_multiplier=None, center="none").fit(X, None, 0, count=c).explained_variance_
          for c in (150, None)]
    np.testing.assert_allclose(ev[0] * 150, ev[1] * 120, rtol=1e-9)  # eigenvalue / ñ, not / n
    net = torch.nn.Linear(3, 1)
    dp = DPSGD(net, torch.optim.SGD(net.parameters(), lr=0.1), noise_multiplier=1.0,
               max_grad_norm=1.0, n=120, expected_batch_size=30, ledger=None, released_n=150)
    assert dp.record().sampling_rate == pytest.approx(30 / 150)


# ------------------------------------------------------------------ private runs
@pytest.mark.parametrize("name", ["p3gm", "p3gm-ae", "dp-vae"])
def test_private_runs_release_only_the_noisy_count(rows, tmp_path, name):
    data = rows.subset(np.arange(400))
    model, result, meta = fit_and_save(name, data, tmp_path)
    led = PrivacyLedger.from_list(meta["ledger"])
    assert led.records[0] == S.count_record()  # first: before calibration and every mechanism
    n_pub = meta["released_rows"]
    assert isinstance(n_pub, int) and n_pub >= 1
    sgd = next(r for r in led if r.name.startswith("dp-sgd"))
    q, steps = A.sgd_schedule(n_pub, B, E)
    assert sgd.sampling_rate == pytest.approx(min(1.0, B / n_pub), rel=1e-12) == q
    assert sgd.steps == steps == meta["calibration"]["sgd_steps"]
    if name != "dp-vae":  # DP-PCA's mean and explained variance were divided by ñ
        assert model.pca_.n_samples_ == n_pub
    # the calibration is the one with the count spent first, made from ñ
    if name == "dp-vae":
        cal = A.calibrate_dp_vae(EPS, DELTA, n_pub, B, E, spent=S.with_count())
    else:
        cal = A.calibrate_p3gm(EPS, DELTA, 0.3, n_pub, B, E, components=1, em_iters=3,
                               spent=S.with_count())
    assert model.calibration["sgd_sigma"] == pytest.approx(cal.sgd_sigma, rel=1e-9)
    assert [r.steps for r in led] == [r.steps for r in cal.ledger]
    for key in ("noise_multiplier", "sampling_rate"):
        assert [getattr(r, key) for r in led] == pytest.approx([getattr(r, key) for r in cal.ledger])
    # and the run's total ε is still the requested one
    assert A.epsilon(led, DELTA) == pytest.approx(EPS, rel=1e-6)
    assert result.epsilon == pytest.approx(EPS, rel=1e-6)


def test_non_private_twins_need_no_count(rows, tmp_path):
    model = make_model("pgm", epochs=E, batch_size=B, **TINY["p3gm"])
    model.fit(rows.subset(np.arange(400)))
    assert model.released_rows is None and len(model.privacy_ledger()) == 0


def test_neighbours_differ_in_the_published_count_by_exactly_one(rows, tmp_path, monkeypatch):
    """With the count's noise switched off, D and D′ = D plus one row publish ñ = n and n + 1, and
    q and the steps follow ñ: n reaches the outputs only through the count."""
    real = S.gaussian_mechanism

    def exact(value, *args, **kw):  # records the release as usual, returns it without noise
        real(value, *args, **kw)
        return np.asarray(value, dtype=np.float64)

    monkeypatch.setattr(S, "gaussian_mechanism", exact)
    n = 450  # ⌈E·n/B⌉ steps from 9 to 10 between n and n + 1
    metas = [fit_and_save("dp-vae", rows.subset(np.arange(m)), tmp_path, f"-{m}")[2]
             for m in (n, n + 1)]
    assert [m["released_rows"] for m in metas] == [n, n + 1]
    sgd = [PrivacyLedger.from_list(m["ledger"]).records[-1] for m in metas]
    assert [r.sampling_rate for r in sgd] == [B / n, B / (n + 1)]
    assert [r.steps for r in sgd] == [math.ceil(E * n / B), math.ceil(E * (n + 1) / B)] == [9, 10]
