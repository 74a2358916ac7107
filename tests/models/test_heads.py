"""Per-column output heads on tables, the auto epochs, and images left on their old path."""
import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch

from dpcore.data.csv import read_csv
from dpcore.data.split import train_test_split
from dpcore.models import get_model
from dpcore.models.heads import BINARY, BINS, SOFTMAX, TabularHeads
from dpcore.models.prior_decoder import MAX_AUTO_EPOCHS, TABLE_STEPS

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
