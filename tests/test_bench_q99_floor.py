"""bench/q99_floor.py: the oracle floor and the private-quantile bound measure what they say."""

import numpy as np
import pytest


@pytest.fixture(scope="module")
def q99(bench_script):
    return bench_script("q99_floor")


def test_em_quantile_is_accurate_at_large_epsilon_and_spread_at_small(q99):
    x = np.arange(1000.0)
    rng = np.random.default_rng(0)
    sharp = [q99.em_quantile(x, 0, 1000, 0.99, 50.0, rng) for _ in range(50)]
    loose = [q99.em_quantile(x, 0, 1000, 0.99, 0.01, rng) for _ in range(50)]
    assert max(abs(v - 990) for v in sharp) < 3
    assert np.std(loose) > 50 * np.std(sharp)


def test_floor_summary_counts_draws_within_the_goal(q99):
    errors = [{"a": 0.05, "b": 0.2}, {"a": 0.0, "b": 0.01}, {"a": 0.3, "b": 0.0}, {"a": 0.0, "b": 0.0}]
    s = q99.floor_summary(errors)
    assert s["all_within_share"] == 0.5 and s["columns_off_mean"] == 0.5
    assert s["off_share"] == {"a": 0.25, "b": 0.25}


def test_oracle_draws_score_like_the_bench(q99):
    import wide_table

    train, _ = wide_table.load(wide_table.SCORE_SEED, 0)
    errs = q99.oracle_errors(train, 2)
    assert len(errs) == 2 and set(errs[0]) == {c.name for c in train.schema.columns
                                               if c.kind in ("numeric", "integer")}
    assert all(v >= 0 for e in errs for v in e.values())
