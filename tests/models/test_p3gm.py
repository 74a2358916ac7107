"""P3GM, PGM and P3GM-AE on the digits set: shapes, schema, privacy, encoder, persistence, stop."""
import math

import numpy as np
import pytest
import torch

from dpcore.data import load_split
from dpcore.errors import InvalidParameter
from dpcore.models import load_model, make_model
from dpcore.models.rows import model_matrix
from dpcore.privacy.accountant import epsilon as accountant_epsilon
from dpcore.privacy.mechanisms import clip_rows

TINY = dict(pca_dim=8, hidden=32, epochs=1, batch_size=100, warmup_steps=5)


@pytest.fixture(scope="module")
def fitted(digits):
    out = {}
    for name in ("p3gm", "pgm", "p3gm-ae"):
        events = []
        model = make_model(name, **TINY)
        result = model.fit(digits[0], callback=events.append)
        out[name] = (model, result, events)
    return out


@pytest.mark.parametrize("name", ["p3gm", "pgm", "p3gm-ae"])
def test_samples_have_the_original_schema(fitted, digits, name):
    model, result, _ = fitted[name]
    train = digits[0]
    s = model.sample(37, seed=1)
    assert s.features.shape == (37, train.n_features)
    assert s.features.dtype == np.float32 and s.features.min() >= 0 and s.features.max() <= 1
    assert s.labels.shape == (37,) and s.labels.min() >= 0 and s.labels.max() < train.n_classes
    assert s.label_names == train.label_names and s.image_shape == train.image_shape
    assert s.meta.get("synthetic") is True
    assert len(s.to_frame()) == 37


@pytest.mark.parametrize("name", ["p3gm", "p3gm-ae"])
def test_epsilon_is_the_accountants_and_close_to_the_budget(fitted, name):
    model, result, events = fitted[name]
    led = model.privacy_ledger()
    assert result.epsilon == accountant_epsilon(led, result.delta)
    assert 0.9 < result.epsilon <= 1.0 + 1e-6  # calibrated to the default budget ε = 1
    names = {r.name for r in led}
    assert {"dp-pca", "dp-sgd"} <= names and any(n.startswith("dp-em") for n in names)
    eps = [e.epsilon for e in events]
    assert eps == sorted(eps) and eps[-1] == result.epsilon
    assert [e.phase for e in events][:2] == ["pca", "em"]
    assert {"warmup", "sgd"} <= {e.phase for e in events}
    assert events[-1].step == events[-1].total_steps == result.steps


def test_pgm_is_labelled_non_private(fitted):
    model, result, events = fitted["pgm"]
    assert math.isinf(result.epsilon) and len(model.privacy_ledger()) == 0
    assert all(math.isinf(e.epsilon) for e in events)


def test_sgd_losses_by_term(fitted):
    _, _, events = fitted["p3gm"]
    last = [e for e in events if e.phase == "sgd"][-1].losses
    assert set(last) == {"recon", "kl", "loss"}
    assert last["loss"] == pytest.approx(last["recon"] + last["kl"], rel=1e-5)
    ae_last = [e for e in fitted["p3gm-ae"][2] if e.phase == "sgd"][-1].losses
    assert set(ae_last) == {"recon", "loss"}


def test_encoder_mean_is_the_dp_image_pool_matrix(fitted, digits):
    model, _, _ = fitted["p3gm"]
    X, _ = model_matrix(digits[1])
    codes = model.encode(digits[1])
    np.testing.assert_allclose(codes, model.pca_.transform(X), atol=1e-5)
    # clipped exactly as DP-EM clipped the codes it fitted the prior on
    np.testing.assert_allclose(codes, clip_rows(codes, model.code_radius), atol=1e-6)
    assert np.linalg.norm(codes, axis=1).max() <= model.code_radius + 1e-5
    prior = model.latent_prior()
    assert prior["means"].shape == (1, 8) and prior["weights"].sum() == pytest.approx(1, abs=1e-5)
    # P3GM-AE: deterministic encoder (variance 0)
    assert np.all(np.isneginf(fitted["p3gm-ae"][0].encode_logvar(digits[1])))


def test_raw_codes_and_several_components(digits):
    model = make_model("p3gm", pca_codes="raw", code_radius=3.0, components=3, **TINY)
    model.fit(digits[0])
    X, _ = model_matrix(digits[1])
    expect = clip_rows((X - model.pca["mean"]) @ model.pca["components"], 3.0)
    np.testing.assert_allclose(model.encode(X), expect, atol=1e-5)
    assert model.latent_prior()["means"].shape == (3, 8)
    assert model.sample(10, seed=0).n == 10


def test_same_seed_same_model_only_without_privacy(fitted, digits):
    """P3GM's noise is secret: the same seed trains another model (the same ε; the step count follows
    the noisy row count, so it may differ by one); PGM (ε = ∞) repeats exactly. (reproducible_noise: tests/privacy/test_secret_noise_attacks.py.)"""
    first, result, events = fitted["p3gm"]
    again = make_model("p3gm", **TINY)
    res2 = again.fit(digits[0])
    assert not np.array_equal(first.sample(15, seed=0).features, again.sample(15, seed=0).features)
    assert res2.epsilon == pytest.approx(result.epsilon, rel=1e-6) and abs(res2.steps - result.steps) <= 2
    pgm = make_model("pgm", **TINY)
    pgm.fit(digits[0])
    np.testing.assert_array_equal(fitted["pgm"][0].sample(15, seed=0).features, pgm.sample(15, seed=0).features)
    assert not np.array_equal(pgm.sample(15, seed=1).features, pgm.sample(15, seed=0).features)


def test_stop_keeps_a_usable_model(digits):
    model = make_model("p3gm", **TINY)
    seen = []

    def cb(ev):
        seen.append(ev)
        return not (ev.phase == "sgd" and ev.step >= 10)

    res = model.fit(digits[0], callback=cb)
    assert res.stopped and seen[-1].phase == "sgd" and res.steps == seen[-1].step
    assert res.epsilon == accountant_epsilon(model.privacy_ledger(), res.delta) < 1.0
    assert model.sample(5, seed=0).n == 5


@pytest.mark.parametrize("kw, word", [({"epsilon": 0}, "epsilon"), ({"epsilon": -1}, "epsilon"),
                                      ({"encoder_share": 1.5}, "encoder_share"),
                                      ({"pca_dim": 0}, "pca_dim"), ({"likelihood": "poisson"}, "likelihood")])
def test_bad_parameters_name_themselves(kw, word):
    with pytest.raises(InvalidParameter, match=word):
        make_model("p3gm", **kw)


def test_pca_dim_larger_than_columns(digits):
    with pytest.raises(InvalidParameter, match="pca_dim"):
        make_model("p3gm", **{**TINY, "pca_dim": 500}).fit(digits[0])


def test_infinite_budget_is_refused_for_p3gm():
    with pytest.raises(InvalidParameter, match="epsilon"):
        make_model("p3gm", epsilon=math.inf)


def test_tabular_rows_decode_to_the_original_columns(tmp_path):
    train, _ = load_split("two-gaussians", dim=5, n=600)
    model = make_model("p3gm", pca_dim=3, hidden=16, epochs=1, batch_size=50)
    events = []
    model.fit(train, callback=events.append)
    assert "warmup" in {e.phase for e in events}  # per-column heads start on the DP-PCA reconstruction
    flat = make_model("p3gm", pca_dim=3, hidden=16, epochs=1, batch_size=50, tabular_heads="flat")
    flat_events = []
    flat.fit(train, callback=flat_events.append)
    assert "warmup" not in {e.phase for e in flat_events}  # flat rows: normalized codes, no warm-up
    frame = model.sample(6, seed=0).to_frame()
    assert list(frame.columns) == list(train.to_frame().columns)
    model.save(tmp_path)
    again = load_model(tmp_path).sample(6, seed=0).to_frame()
    assert frame.equals(again)


@pytest.mark.parametrize("name", ["p3gm", "dp-vae"])
def test_dp_estimated_bounds_are_in_the_models_ledger(tmp_path, name):
    """Bounds estimated with DP on the rows are spent budget: the model's ε must include them."""
    from dpcore.data import read_csv, train_test_split

    rng = np.random.default_rng(0)
    path = tmp_path / "t.csv"
    rows = ["a,b,y"] + [f"{rng.normal(50, 10):.3f},{rng.normal(0, 1):.3f},{i % 2}" for i in range(400)]
    path.write_text("\n".join(rows) + "\n")
    train, _ = train_test_split(read_csv(path, target="y", undeclared="dp", seed=0,
                                              types={"a": "numeric", "b": "numeric"}), 0.2, seed=0)
    assert train.meta["privacy_records"]
    params = {k: v for k, v in TINY.items() if k in ("epochs",)}
    model = make_model(name, batch_size=32, hidden=16, **params, **({"pca_dim": 2} if name == "p3gm" else {}))
    result = model.fit(train)
    ledger = model.privacy_ledger()
    assert ledger.records[0].name == train.meta["privacy_records"][0]["name"]
    assert result.epsilon == pytest.approx(accountant_epsilon(ledger, result.delta))


def test_pooled_pca_codes_and_persistence(digits, tmp_path):
    """pca_pool=2 on 8×8 digits: DP-PCA sees 2×2 block means (+ the label block); the encoder mean is
    the DP-PCA projection of exactly those pooled rows, and a reload keeps the pooling."""
    from dpcore.models.p3gm import P3GM
    from dpcore.models.rows import image_pool_matrix

    train, test = digits
    P = image_pool_matrix(train, 2, train.n_classes)
    X, _ = model_matrix(test)
    img = test.features[0].reshape(8, 8)
    assert (X @ P)[0, 0] == pytest.approx(img[:2, :2].mean())
    assert (X @ P)[0, 16:] == pytest.approx(X[0, 64:])  # label block untouched
    assert image_pool_matrix(train, None, 10) is None  # auto: images this small are not pooled
    model = make_model("p3gm", pca_pool=2, **TINY)
    model.fit(train)
    np.testing.assert_allclose(model.encode(test), model.pca_.transform(X @ P), atol=1e-5)
    model.save(tmp_path)
    back = P3GM.load(tmp_path)
    np.testing.assert_allclose(back.encode(test), model.encode(test), atol=1e-6)
    np.testing.assert_array_equal(back.sample(20, seed=3).features, model.sample(20, seed=3).features)
    with pytest.raises(InvalidParameter, match="pca_pool"):
        make_model("p3gm", **{**TINY, "pca_pool": 4, "pca_dim": 20}).fit(train)


def test_runs_saved_before_new_fields_load_with_their_old_behaviour(digits, tmp_path):
    """A model.json without pca_pool/mean_clip_norm/label_shares (saved by the first release) must
    load with the values that model was trained with, and sample the same rows."""
    import json

    from dpcore.models.p3gm import P3GM

    train, _ = digits
    old = dict(pca_pool=1, mean_clip_norm=1.0, label_shares="decoder")
    model = make_model("p3gm", **TINY, **old)
    model.fit(train)
    model.save(tmp_path)
    meta = json.loads((tmp_path / "model.json").read_text())
    for key in old:
        del meta["config"][key]
    (tmp_path / "model.json").write_text(json.dumps(meta))
    back = P3GM.load(tmp_path)
    assert {k: getattr(back.config, k) for k in old} == old
    np.testing.assert_array_equal(back.sample(30, seed=2).features, model.sample(30, seed=2).features)


def test_ema_weights_are_sampled_from_and_cost_no_privacy(digits):
    """Same seed and seeded (debug) noise: the raw DP-SGD trajectory is the same with and without
    the moving average, so the ledgers match record for record and the models differ only by the
    averaged weights they keep and sample from."""
    train = digits[0]
    fits = {}
    for decay in (0.0, 0.9):
        model = make_model("p3gm", **TINY, ema_decay=decay, reproducible_noise=True, seed=4)
        fits[decay] = (model, model.fit(train))
    (raw, raw_res), (ema, ema_res) = fits[0.0], fits[0.9]
    assert ema_res.epsilon == raw_res.epsilon == accountant_epsilon(ema.privacy_ledger(), ema_res.delta)
    assert ema.privacy_ledger().to_list() == raw.privacy_ledger().to_list()
    np.testing.assert_array_equal(ema.pca["components"], raw.pca["components"])
    for a, b in zip(ema.decoder.parameters(), raw.decoder.parameters()):
        assert not torch.allclose(a, b)
    z = np.asarray(ema.mog["means"][:1].repeat(3, 0), np.float32)
    with torch.no_grad():  # decode() runs the decoder the model keeps: the averaged one
        assert not np.allclose(ema.decode(z), raw.decode(z))
    assert not np.array_equal(ema.sample(20, seed=1).features, raw.sample(20, seed=1).features)


def test_warmup_draws_its_own_batch_and_costs_no_privacy(digits, monkeypatch):
    """The warm-up draws `warmup_batch` prior codes a step whatever DP-SGD's batch (the image
    schedule's 1 000 made the warm-up half of a Fashion-MNIST fit); it reads no rows, so the ledger
    is the same for any size."""
    import dpcore.models.p3gm as p3gm_module

    drawn = []
    real = p3gm_module.mog_sample

    def spy(n, *args, **kwargs):
        drawn.append(n)
        return real(n, *args, **kwargs)

    monkeypatch.setattr(p3gm_module, "mog_sample", spy)
    ledgers = {}
    for size in (7, 300):
        drawn.clear()
        model = make_model("p3gm", **TINY, warmup_batch=size, reproducible_noise=True, seed=4)
        model.fit(digits[0])
        assert drawn.count(size) == TINY["warmup_steps"] and TINY["batch_size"] not in drawn
        ledgers[size] = model.privacy_ledger().to_list()
    assert ledgers[7] == ledgers[300]
    with pytest.raises(InvalidParameter, match="warmup_batch"):
        make_model("p3gm", warmup_batch=0)


def test_budget_split_settings_reach_the_ledger(digits):
    """em_share and mean_noise_ratio move noise between the encoder's releases; ε stays the
    accountant's and on budget."""
    train = digits[0]
    noise = {}
    for em_share, ratio in ((0.13, 2.0), (0.01, 3.0)):
        model = make_model("p3gm", **TINY, em_iters=1, em_share=em_share, mean_noise_ratio=ratio)
        res = model.fit(train)
        assert 0.99 < res.epsilon <= 1.0 + 1e-6
        sig = {r.name: r.noise_multiplier for r in model.privacy_ledger()}
        assert sig["dp-pca-mean"] == pytest.approx(ratio * sig["dp-pca"])
        noise[em_share] = sig
    assert noise[0.01]["dp-em-means"] > noise[0.13]["dp-em-means"]
    assert noise[0.01]["dp-pca"] < noise[0.13]["dp-pca"]  # the EM's budget went to the PCA
    for kw in ({"ema_decay": 1.0}, {"em_share": 0.0}, {"mean_noise_ratio": 0.0}):
        with pytest.raises(InvalidParameter, match=next(iter(kw))):
            make_model("p3gm", **kw)


def test_image_schedule_fills_only_the_auto_fields_on_large_image_sets():
    from dpcore.models import get_model
    from dpcore.models.p3gm import IMAGE_SCHEDULE
    from dpcore.models.synthesizer import DataFacts

    big = DataFacts(n=20_000, n_features=196, n_classes=10, image_shape=(14, 14))
    small = DataFacts(n=1_438, n_features=64, n_classes=10, image_shape=(8, 8))
    table = DataFacts(n=20_000, n_features=12, n_classes=2)
    plan = get_model("p3gm").plan(None, big)
    assert {k: getattr(plan.config, k) for k in IMAGE_SCHEDULE} == IMAGE_SCHEDULE
    assert "300 → 1000: P3GM's image schedule" in plan.adapted["batch_size"] and "lr" in plan.adapted
    cfg = get_model("p3gm").plan(make_model("p3gm", lr=5e-4, ema_decay=0.0).config, big).config
    assert (cfg.lr, cfg.ema_decay, cfg.batch_size) == (5e-4, 0.0, IMAGE_SCHEDULE["batch_size"])
    for name, facts in (("p3gm", small), ("p3gm", table), ("pgm", small)):  # the declared autos
        cfg = get_model(name).plan(None, facts).config
        assert (cfg.lr, cfg.ema_decay, cfg.batch_size) == (1e-3, 0.0, min(300, facts.n // 4)), name
        assert (cfg.label_weight, cfg.prior_temperature, cfg.label_margin_keep) == (1.0, 1.0, 1.0), name
    pgm = get_model("pgm").plan(None, big).config  # the Story's ceiling: the same schedule without noise
    assert {k: getattr(pgm, k) for k in IMAGE_SCHEDULE} == IMAGE_SCHEDULE


def test_sampling_settings_are_post_processing_of_the_same_fit(digits):
    """prior_temperature and label_margin_keep act at sampling time only: with seeded (debug)
    noise the fit, its ledger and ε are the same as the defaults'; the rows are the decoded draws
    z ~ N(μ, T²σ²) of which the label_margin_keep share most confident in their label is kept."""
    from dpcore.models.label_shares import most_confident
    from dpcore.models.mixture import mog_sample
    from dpcore.models.rows import split_output

    train = digits[0]
    fits = {}
    for T, keep in ((1.0, 1.0), (0.5, 0.25)):
        model = make_model("p3gm", **TINY, prior_temperature=T, label_margin_keep=keep,
                           reproducible_noise=True, seed=4)
        fits[T] = (model, model.fit(train))
    (plain, plain_res), (sharp, sharp_res) = fits[1.0], fits[0.5]
    assert sharp_res.epsilon == plain_res.epsilon
    assert sharp.privacy_ledger().to_list() == plain.privacy_ledger().to_list()
    for a, b in zip(sharp.decoder.parameters(), plain.decoder.parameters()):
        assert torch.equal(a, b)
    mog = sharp.latent_prior()  # the fitted prior itself is unchanged
    np.testing.assert_array_equal(mog["variances"], plain.latent_prior()["variances"])
    z, _ = mog_sample(400, mog["weights"], mog["means"], mog["variances"] * 0.25, np.random.default_rng(0))
    out = sharp.decode(z)
    keep = most_confident(out, sharp.n_features, 100)
    block = np.sort(out[:, sharp.n_features:], axis=1)
    margin = block[:, -1] - block[:, -2]
    assert margin[keep].min() >= np.delete(margin, keep).max()
    feats, labels = sharp._draw_rows(100, np.random.default_rng(0))
    want = split_output(out[keep], sharp.n_features, sharp.n_classes)
    np.testing.assert_array_equal(feats, want[0])
    np.testing.assert_array_equal(labels, want[1])
    assert sharp.sample(200, seed=1).features.std(0).mean() < plain.sample(200, seed=1).features.std(0).mean()
    for kw in ({"prior_temperature": 0.0}, {"label_margin_keep": 0.0}, {"label_margin_keep": 1.5}):
        with pytest.raises(InvalidParameter, match=next(iter(kw))):
            make_model("p3gm", **kw)


def test_label_weight_reaches_the_decoders_loss(digits):
    """The label block's weight changes what DP-SGD trains on (same seeded noise, same ledger)."""
    fits = [make_model("p3gm", **TINY, label_weight=w, reproducible_noise=True, seed=4) for w in (1.0, 10.0)]
    for model in fits:
        model.fit(digits[0])
    assert fits[0].privacy_ledger().to_list() == fits[1].privacy_ledger().to_list()
    assert not torch.allclose(fits[0].decoder[-1].weight, fits[1].decoder[-1].weight)
