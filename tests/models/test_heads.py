"""Per-column output heads on tables, the auto epochs, and images left on their old path."""
import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch

from dpcore.data import ColumnSpec, Schema, TabularEncoder
from dpcore.data.csv import read_csv
from dpcore.data.split import train_test_split
from dpcore.models import get_model
from dpcore.models.heads import BINARY, BINS, SOFTMAX, TabularHeads
from dpcore.models.neural import MAX_AUTO_EPOCHS, TABLE_STEPS

SMALL = dict(hidden=32, batch_size=50)


@pytest.fixture(scope="module")
def imbalanced():
    """400 rows: a 10 % class, a categorical, a spiky integer (multiples of 12) and a skewed numeric."""
    rng = np.random.default_rng(0)
    n = 400
    y = np.where(rng.random(n) < 0.1, "yes", "no")
    frame = pd.DataFrame({"term": rng.choice([12, 24, 36, 48, 60], n), "amount": rng.exponential(200, n).round(2),
                          "home": rng.choice(["own", "rent", "other"], n, p=[0.6, 0.3, 0.1]), "y": y})
    ds = read_csv(frame.to_csv(index=False).encode(), target="y",
                  types={"term": "integer", "amount": "numeric", "home": "categorical"},
                  bounds={"term": [0, 72], "amount": [0, 2000]},
                  categories={"home": ["own", "rent", "other"], "y": ["no", "yes"]})
    return train_test_split(ds, 0.1, seed=0)


def test_heads_follow_the_encoder_blocks(imbalanced):
    train, _ = imbalanced
    heads = TabularHeads.for_data(train.encoder, train.n_features, train.n_classes, bins=50)
    kinds = [h.kind for h in heads.heads]
    # term, its missing flag, amount, its flag, home (3 levels), its flag, the label
    assert kinds == [BINS, BINARY, BINS, BINARY, SOFTMAX, BINARY, SOFTMAX]
    term, amount = heads.heads[0], heads.heads[2]
    assert term.bins == 50 and amount.bins == 50  # 73 integer values > 50 bins: equal-width bins
    assert heads.width == train.n_features + 2 and heads.out_width == 50 + 1 + 50 + 1 + 3 + 1 + 2
    out = torch.zeros(5, heads.out_width)
    x = torch.as_tensor(train.features[:5].tolist()).float()
    x = torch.cat([x, torch.nn.functional.one_hot(torch.as_tensor(train.labels[:5]), 2).float()], 1)
    loss = heads.nll(out, x)  # uniform outputs: log 50 + log 2 + log 50 + log 2 + log 3 + log 2 + log 2
    assert torch.allclose(loss, torch.full((5,), 2 * np.log(50) + np.log(3) + 4 * np.log(2)), atol=1e-5)
    rows = heads.sample(np.zeros((1000, heads.out_width)), np.random.default_rng(0))
    assert set(np.unique(rows[:, -2:].sum(1))) == {1.0} and 0.4 < rows[:, -1].mean() < 0.6  # drawn, not argmax
    assert rows[:, 0].min() >= 0 and rows[:, 0].max() <= 1


def test_short_integer_range_gets_one_bin_per_value():
    from dpcore.data.schema import ColumnSpec
    from dpcore.models.heads import _bins_head

    h = _bins_head(ColumnSpec("edu", "integer", lower=0, upper=18), 0, 0, 50)
    assert h.bins == 19
    values = h.bin_value(np.arange(19), np.random.default_rng(0)) * 18
    assert np.allclose(values, np.arange(19))
    assert h.bin_of(torch.as_tensor(np.arange(19) / 18)).tolist() == list(range(19))


@pytest.mark.parametrize("name", ["p3gm", "dp-vae"])
def test_both_classes_appear_when_the_real_target_has_two(imbalanced, name):
    train, _ = imbalanced
    model = get_model(name)(epsilon=1.0, epochs=5, seed=0, **SMALL)
    model.fit(train)
    synth = model.sample(2000, seed=0)
    counts = np.bincount(synth.labels, minlength=2)
    assert counts.min() > 0, f"{name} generated one class: {counts}"
    frame = synth.to_frame()
    assert pd.api.types.is_integer_dtype(frame["term"]) and frame["term"].between(0, 72).all()
    assert set(frame["home"].dropna()) <= {"own", "rent", "other"} and frame["home"].nunique() > 1


def test_flat_heads_are_the_old_argmax_path(imbalanced):
    train, _ = imbalanced
    model = get_model("vae")(tabular_heads="flat", epochs=3, seed=0, **SMALL)
    model.fit(train)
    assert model.heads is None and model.decoder[-1].out_features == train.n_features + 2


def test_save_load_keeps_the_heads(imbalanced, tmp_path):
    train, _ = imbalanced
    model = get_model("p3gm")(epsilon=1.0, epochs=2, seed=0, **SMALL)
    model.fit(train)
    model.save(tmp_path)
    again = get_model("p3gm").load(tmp_path)
    assert again.heads is not None and again.heads.out_width == model.heads.out_width
    a, b = model.sample(300, seed=3), again.sample(300, seed=3)
    assert np.array_equal(a.features, b.features) and np.array_equal(a.labels, b.labels)


def test_models_saved_before_heads_load_as_flat():
    from dpcore.models.p3gm import P3GM
    from dpcore.models.vae import VAE

    assert P3GM._saved_config({"epochs": 4})["tabular_heads"] == "flat"
    assert VAE._saved_config({"epochs": 10})["tabular_heads"] == "flat"


def test_auto_epochs_aim_at_a_step_count_on_tables_and_keep_images(imbalanced, digits):
    from dpcore.models.p3gm import P3GM

    train, _ = imbalanced
    plan = P3GM.plan(P3GM.config_class(), train)
    assert plan.config.epochs > 4 and "epochs" in plan.adapted
    B = plan.config.batch_size
    assert plan.config.epochs == min(MAX_AUTO_EPOCHS, max(4, -(-TABLE_STEPS * B // train.n)))
    big = P3GM.plan(P3GM.config_class(), dataclasses.replace(train, features=np.tile(train.features, (20, 1)),
                                                             labels=np.tile(train.labels, 20)))
    sgd = big.steps - 2 - big.config.warmup_steps  # the free warm-up on the DP-PCA reconstruction
    assert TABLE_STEPS <= sgd < TABLE_STEPS + big.config.epochs  # 7 200 rows: ~1000 steps
    assert plan.epsilon <= 1.0 + 1e-6 and plan.noise["σ_s  (DP-SGD)"] > 0  # calibrated for those steps
    explicit = P3GM.plan(P3GM.config_class(epochs=4), train)
    assert explicit.config.epochs == 4 and "epochs" not in explicit.adapted
    img = P3GM.plan(P3GM.config_class(), digits[0])
    assert img.config.epochs == 4 and "epochs" not in img.adapted


def test_images_keep_the_flat_decoder(digits):
    train, _ = digits
    model = get_model("p3gm")(epsilon=1.0, pca_dim=8, hidden=32, epochs=1, batch_size=100, warmup_steps=2)
    model.fit(train)
    assert model.heads is None and model.decoder[-1].out_features == train.n_features + train.n_classes


def test_p3gm_heads_keep_the_label_tied_to_the_columns():
    """The label is a threshold on age: synthetic rows must keep that link, not just each column's
    share (without the free warm-up on the DP-PCA reconstruction the label head learned only its
    marginal on small tables: both classes had the same mean age, and train-on-synthetic AUROC fell
    below 0.5)."""
    i = np.arange(400)
    frame = pd.DataFrame({"age": 20 + i % 50, "city": np.array(list("abc"))[i % 3],
                          "y": np.where(i % 50 > 25, "yes", "no")})
    ds = read_csv(frame.to_csv(index=False).encode(), target="y", types={"age": "integer", "city": "categorical"},
                  bounds={"age": [0, 100]}, categories={"city": list("abc"), "y": ["no", "yes"]})
    model = get_model("p3gm")(epsilon=10.0, seed=0)
    model.fit(ds)
    out = model.sample(2000, seed=0).to_frame()
    means = out.groupby("y", observed=True)["age"].mean()
    assert means["yes"] - means["no"] > 5  # real: 57.5 vs 32.5


def test_marginal_offsets_move_a_head_onto_its_shares_and_keep_row_preferences(imbalanced):
    """A decoder that never gives 'other' any probability: offsets bring its marginal to the target
    shares, and rows that preferred 'rent' still prefer it over 'own' more than the rest do."""
    train, _ = imbalanced
    heads = TabularHeads.for_data(train.encoder, train.n_features, train.n_classes, bins=8)
    i = [k for k, h in enumerate(heads.heads) if h.kind == SOFTMAX][0]  # home
    h = heads.heads[i]
    rng = np.random.default_rng(0)
    out = rng.normal(0, 0.1, (4000, heads.out_width))
    out[:, h.out + 2] = -30.0  # 'other' is (almost) never drawn
    out[:2000, h.out + 1] += 2.0  # the first half leans to 'rent'
    target = np.array([0.5, 0.3, 0.2])
    offsets = heads.marginal_offsets(out, {i: (target, target)})
    rows = heads.sample(out, np.random.default_rng(1), offsets)
    got = rows[:, h.start:h.stop]
    assert np.allclose(got.mean(0), target, atol=0.03)
    # wide bounds: only the level outside them moves (to its lower bound), the others keep their ratio
    loose = heads.marginal_offsets(out, {i: (np.array([0.0, 0.0, 0.1]), np.ones(3))})
    share = heads.sample(out, np.random.default_rng(1), loose)[:, h.start:h.stop].mean(0)
    plain_share = heads.sample(out, np.random.default_rng(1))[:, h.start:h.stop].mean(0)
    assert abs(share[2] - 0.1) < 0.02 and abs(share[0] / share[1] - plain_share[0] / plain_share[1]) < 0.1
    assert got[:2000, 1].mean() > got[2000:, 1].mean() + 0.2
    plain = heads.sample(out, np.random.default_rng(1))
    assert plain[:, h.start + 2].sum() == 0


def test_level_shares_floor_every_declared_level(imbalanced):
    from dpcore.models.label_shares import level_shares

    train, _ = imbalanced
    heads = TabularHeads.for_data(train.encoder, train.n_features, train.n_classes, bins=8)
    i = [k for k, h in enumerate(heads.heads) if h.kind == SOFTMAX][0]
    h = heads.heads[i]
    mean = np.zeros(heads.width)
    mean[h.start:h.stop] = [0.7, 0.32, -0.02]  # a noisy mean: the third level's share fell below 0
    mean[-2:] = [0.9, 0.1]
    bounds = level_shares(heads, mean, noise=0.05)
    flags = [k for k, h in enumerate(heads.heads) if h.flag]
    assert sorted(bounds) == sorted([i, *flags])  # the label head is left to the label quotas
    assert all(bounds[k][1][0] == 0 for k in flags)  # flags at a noisy share of 0: columns complete
    lo, hi = bounds[i]
    assert lo == pytest.approx([0.6, 0.22, 0.01]) and hi == pytest.approx([0.8, 0.42, 0.08])


def test_missing_flags_follow_the_released_share_and_complete_columns_stay_complete():
    """A declared schema makes every column nullable; a decoder whose flag says 6 % everywhere (what
    P3GM's decoder learnt from the noisy mean it warms up on) put blanks into every column. A flag
    whose noisy share is under MISSING_SIGMAS noise stds now draws none; one clearly above keeps its
    share within the noise of the released one."""
    from dpcore.models.label_shares import MISSING_SIGMAS, level_shares

    schema = Schema([ColumnSpec("a", "numeric", 0.0, 1.0, nullable=True), ColumnSpec("b", "numeric", 0.0, 1.0, nullable=True)])
    heads = TabularHeads.for_data(TabularEncoder(schema), 4, 0, bins=4)
    flag_a, flag_b = [k for k, h in enumerate(heads.heads) if h.flag]
    noise = 0.02
    mean = np.array([0.5, MISSING_SIGMAS * noise * 0.9, 0.5, 0.3])  # a: under the threshold, b: 30 % missing
    bounds = level_shares(heads, mean, noise=noise, skip_label=False)  # no label block
    assert bounds[flag_a][1][0] == 0 and bounds[flag_b][0][0] == pytest.approx(0.3 - 2 * noise)
    out = np.zeros((4000, heads.out_width))
    out[:, heads.heads[flag_a].out] = out[:, heads.heads[flag_b].out] = np.log(0.06 / 0.94)  # 6 % each
    rng = np.random.default_rng(0)
    plain = heads.sample(out, rng)
    assert plain[:, heads.heads[flag_a].start].mean() > 0.04  # before: blanks in a complete column
    rows = heads.sample(out, rng, heads.marginal_offsets(out, bounds))
    assert rows[:, heads.heads[flag_a].start].sum() == 0
    assert abs(rows[:, heads.heads[flag_b].start].mean() - (0.3 - 2 * noise)) < 0.02


def test_p3gm_generates_every_declared_level_of_a_small_table():
    """A 2 % and a 3 % level on 300 rows at ε = 1: with category_shares 'dp-mean' both are
    generated (at least at the 1 % floor). The mechanism noise is secret, so only the floor is
    asserted, which holds whatever the noise."""
    from dpcore.data.csv import dataset_from_frame

    rng = np.random.default_rng(3)
    n = 300
    frame = pd.DataFrame({"a": rng.choice(list("pqrs"), n, p=[0.49, 0.3, 0.19, 0.02]),
                          "b": rng.choice(list("xyz"), n, p=[0.6, 0.37, 0.03]), "v": rng.random(n).round(3),
                          "y": rng.choice(["n", "y"], n)})
    ds = dataset_from_frame(frame, target="y", types={"v": "numeric", "a": "categorical", "b": "categorical"},
                            bounds={"v": (0, 1)}, categories={"a": list("pqrs"), "b": list("xyz"), "y": ["n", "y"]},
                            nullable={"a": False, "b": False, "v": False})
    m = get_model("p3gm")(epsilon=1.0, epochs=1, hidden=16, batch_size=50, warmup_steps=10, seed=0)
    m.fit(ds)
    s = m.sample(3000, seed=0).to_frame()
    assert set(s["a"]) == set("pqrs") and set(s["b"]) == set("xyz")
    # at least the 1 % floor (drawn: ~30 of 3 000 rows; the noisy shares' std is ~0.2 at n = 300)
    assert (s["a"] == "s").mean() > 0.005 and (s["b"] == "z").mean() > 0.005
