"""The sweeps' settings fitted to the active data publish no function of a file's exact size.

Issue 41: `fit_to_data` wrote batch_size 300 at n_train = 301 and null (auto) at 300, so the ε and
grid sweeps' config.json told a file from its neighbour."""
from __future__ import annotations

import numpy as np
import pytest

from dpcore.jobs.sweep import sweepable_models
from dpcore.runs.config import DataConfig
from dpcore.ui.defaults import public_size
from dpcore.ui.sweep import fit_to_data


def _files(tmp_path, n: int = 400):
    """D (n rows) and D + one row."""
    rng = np.random.default_rng(5)
    lines = ["age,score,y"] + [f"{a},{b:.2f},{c}" for a, b, c in
                               zip(rng.integers(18, 90, n), rng.random(n) * 10, rng.choice(["0", "1"], n))]
    base, bigger = tmp_path / "D.csv", tmp_path / "D1.csv"
    base.write_text("\n".join(lines) + "\n")
    bigger.write_text("\n".join([*lines, "55,3.20,1"]) + "\n")
    return base, bigger


@pytest.mark.parametrize("model", sweepable_models())
def test_neighbouring_files_get_the_same_fitted_settings(tmp_path, model):
    fitted = []
    for path in _files(tmp_path):
        choice = {"csv": str(path), "target": "y", "test_size": 0.0}
        train, _ = DataConfig(**choice).load()
        rows = public_size(choice, train.n)
        assert rows is None  # a file's size is private
        # batch 400: not below D's 400 training rows, below D + 1's 401
        fitted.append(fit_to_data(model, {"batch_size": 400, "pca_dim": 3}, train, public_rows=rows))
    assert fitted[0] == fitted[1]
    assert fitted[0][0]["batch_size"] == 400 and fitted[0][1] == []


def test_a_builtins_public_size_still_fits_the_batch():
    from dpcore.data.dataset import Dataset

    rng = np.random.default_rng(0)
    train = Dataset(name="t", features=rng.random((100, 4)), labels=rng.integers(0, 2, 100), label_names=["a", "b"])
    params, changed = fit_to_data("p3gm", {"batch_size": 300}, train, public_rows=100)
    assert params["batch_size"] is None and "batch_size 300 → auto" in changed[-1]
    kept, _ = fit_to_data("p3gm", {"batch_size": 99}, train, public_rows=100)
    assert kept["batch_size"] == 99
