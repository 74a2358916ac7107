"""ε-estimated bounds: noisy histogram over a public grid, one ledgered Gaussian mechanism."""
import math

import numpy as np
import pandas as pd

from dpcore.data import read_csv
from dpcore.privacy.ledger import MechanismRecord


def test_noisy_bounds_cover_bulk_and_are_ledgered():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(100, 10, 3000).round(2), "b": rng.integers(0, 50, 3000),
                          "y": rng.integers(0, 2, 3000)})
    csv = frame.to_csv(index=False).encode()
    ds = read_csv(csv, target="y", undeclared="dp", bounds_noise_multiplier=5.0, seed=1,
                  types={"a": "numeric", "b": "integer"}, categories={"y": [0, 1]})
    a, b = ds.schema.column("a"), ds.schema.column("b")
    assert a.origin == b.origin == "dp" and ds.preprocessing_private
    assert a.lower <= np.quantile(frame.a, 0.01) and a.upper >= np.quantile(frame.a, 0.99)
    assert a.lower > 0 and a.upper <= 256  # a coarse public grid: powers of two
    rec = MechanismRecord.from_dict(ds.meta["privacy_records"][0])
    assert rec.mechanism == "gaussian" and rec.noise_multiplier == 5.0 and math.isclose(rec.sensitivity, math.sqrt(2))
    plain = read_csv(csv, target="y")
    assert not plain.preprocessing_private and plain.meta["privacy_records"] == []


def test_dp_bounds_need_declared_kinds():
    """A kind guessed from the rows is itself data-derived: such a column gets no DP bounds."""
    frame = pd.DataFrame({"a": np.arange(600) % 50, "y": np.arange(600) % 2})
    ds = read_csv(frame.to_csv(index=False).encode(), target="y", undeclared="dp", seed=0,
                  bounds_noise_multiplier=2.0, categories={"y": [0, 1]})
    assert ds.schema.column("a").origin == "data" and not ds.preprocessing_private
    assert ds.meta["privacy_records"] == []
