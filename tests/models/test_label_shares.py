"""Label quotas: exact counts, the fill-in when a class is (almost) never generated, and P3GM's use."""
import numpy as np
import pytest

from dpcore.errors import InvalidParameter
from dpcore.models import make_model
from dpcore.models.label_shares import quota_counts, sample_with_quotas, shares_from_mean


def test_quota_counts_sum_to_n_and_follow_shares():
    counts = quota_counts(np.array([0.5, 0.3, 0.2]), 7)
    assert counts.sum() == 7 and list(counts) == [4, 2, 1]
    assert quota_counts(np.array([1.0, 1.0]), 0).sum() == 0
    with pytest.raises(InvalidParameter, match="shares"):
        quota_counts(np.array([0.0, 0.0]), 5)


def test_shares_from_a_noisy_mean():
    np.testing.assert_allclose(shares_from_mean([0.5, -0.01, 0.5]), [0.5, 0.0, 0.5])
    assert shares_from_mean([-0.1, 0.0]) is None


def _skewed_draw(p, seed=0):
    rng = np.random.default_rng(seed)

    def draw(m):
        y = rng.choice(len(p), size=m, p=p)
        return np.repeat(y[:, None].astype(np.float32), 3, axis=1), y
    return draw


def test_quotas_undo_a_skewed_generator():
    X, y = sample_with_quotas(_skewed_draw([0.7, 0.25, 0.05]), 3000, np.ones(3) / 3)
    assert len(y) == 3000 and list(np.bincount(y)) == [1000, 1000, 1000]
    np.testing.assert_array_equal(X[:, 0], y)  # rows keep their own labels


def test_follow_up_draws_are_sized_to_what_the_short_classes_need():
    """A class drawn a little under its share (8 % for 10 %) used to cost a whole chunk of n again
    for its last places; now the follow-ups ask for what they need at the rates seen so far."""
    sizes = []
    draw = _skewed_draw([0.62, 0.30, 0.08])

    def counted(m):
        sizes.append(m)
        return draw(m)
    X, y = sample_with_quotas(counted, 30_000, np.array([0.6, 0.3, 0.1]))
    assert list(np.bincount(y)) == [18_000, 9_000, 3_000]
    assert sizes[0] == 30_000 and all(s < 30_000 for s in sizes[1:])
    # class 2 is ~600 short after the first chunk: ~7 500 more draws at 8 %, not another 30 000
    assert sum(sizes) < 45_000


def test_a_class_never_generated_is_filled_from_the_others():
    X, y = sample_with_quotas(_skewed_draw([0.5, 0.5, 0.0]), 600, np.ones(3) / 3, max_factor=3)
    assert len(y) == 600 and X.shape == (600, 3)
    assert np.bincount(y, minlength=3)[2] == 0 and np.all(np.bincount(y)[:2] >= 200)


def test_p3gm_samples_follow_the_label_block_of_its_noisy_mean(digits):
    train, _ = digits
    kw = dict(epsilon=50.0, pca_dim=8, hidden=64, epochs=10, batch_size=100, warmup_steps=100)
    model = make_model("p3gm", **kw)
    model.fit(train)
    shares = shares_from_mean(model.pca["mean"][-train.n_classes:])
    rows = model.sample(1000, seed=1)
    np.testing.assert_array_equal(np.bincount(rows.labels, minlength=10), quota_counts(shares, 1000))
    assert not np.all(np.diff(rows.labels) >= 0)  # shuffled, not grouped by class
    assert model.sample(0, seed=1).features.shape == (0, train.n_features)
    plain = make_model("p3gm", label_shares="decoder", **kw)
    plain.fit(train)
    assert not np.array_equal(np.bincount(plain.sample(1000, seed=1).labels, minlength=10),
                              quota_counts(shares, 1000))
