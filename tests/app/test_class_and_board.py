"""Issue "The workbench in front of a class and a board": broken values and crashes found walking
the workbench as a lecturer, a stakeholder and a CSV user (fast: no model is trained here except
one tiny PGM on digits)."""
from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
TINY = {"epochs": 1, "hidden": 32, "warmup_steps": 10, "pca_dim": 10, "batch_size": 200}
SHOWN_BAD = ("nan", "None", "Infinity", "inf")


def _ds(n=200, d=8, classes=(0, 1), labels=None, features=None):
    from dpcore.data.dataset import Dataset

    rng = np.random.default_rng(0)
    y = np.asarray(labels if labels is not None else rng.choice(classes, n))
    x = features if features is not None else rng.random((n, d))
    return Dataset(name="t", features=x, labels=y, label_names=[f"c{k}" for k in range(max(2, int(y.max()) + 1))])


# ----------------------------------------------------------------------------- stored scores
def test_missing_scores_are_stored_as_null_and_old_nan_strings_read_as_missing(tmp_path):
    from dpcore.report import headline, load_evaluation, save_evaluation

    save_evaluation(tmp_path, utility={"kind": "image", "mean": {"accuracy": float("nan")},
                                       "reference": {"mean": {"accuracy": 0.9}},
                                       "usefulness": {"metric": "balanced_accuracy", "value": float("nan"),
                                                      "reference": 0.9, "chance": 0.1, "classifier": "mlp"}})
    raw = json.loads((tmp_path / "evaluation.json").read_text())
    assert raw["utility"]["mean"]["accuracy"] is None  # null, never the string "nan"
    assert raw["utility"]["usefulness"]["value"] is None
    h = headline(load_evaluation(tmp_path))
    assert h["utility"] is None and h["reference"] == 0.9
    old = {"utility": {"kind": "image", "mean": {"accuracy": "nan"}, "reference": {"mean": {"accuracy": "nan"}},
                       "usefulness": {"metric": "balanced_accuracy", "value": "nan", "reference": "nan"}},
           "attacks": {"best": {"name": "loss", "auc": "nan", "epsilon_lower_bound": "inf"}}}
    h = headline(old)  # files written before the fix
    assert h["utility"] is None and h["reference"] is None and h["attack_auc"] is None
    assert h["attack_eps_lower_bound"] is None


def test_privacy_utility_curve_with_an_unscored_run_and_infinite_epsilon():
    from dpcore.figures import privacy_utility_figure

    rows = [{"run": "a", "model": "p3gm", "dataset": "d", "epsilon": 1.0, "utility": 0.7, "reference": 0.9},
            {"run": "b", "model": "p3gm", "dataset": "d", "epsilon": 3.0, "utility": "nan", "reference": "nan"},
            {"run": "c", "model": "vae", "dataset": "d", "epsilon": math.inf, "utility": 0.8, "reference": None}]
    fig = privacy_utility_figure(rows)
    assert fig.layout.xaxis.type == "log"


# ----------------------------------------------------------------------------- the Runs table


def test_runs_page_with_unscored_and_infinite_runs_shows_no_none_nan_or_infinity(runs_dir):
    from streamlit.testing.v1 import AppTest

    from dpcore.jobs import train_run
    from dpcore.runs import RunConfig

    data = {"dataset": "digits", "test_size": 0.2}
    scored = train_run(RunConfig(model="pgm", params=TINY, data=data), runs_dir)
    nan_run = train_run(RunConfig(model="pgm", params={**TINY, "seed": 1}, data=data), runs_dir)
    train_run(RunConfig(model="pgm", params={**TINY, "seed": 2}, data=data), runs_dir)  # never scored
    (Path(scored.path) / "evaluation.json").write_text(json.dumps(
        {"utility": {"kind": "image", "mean": {"accuracy": 0.5}, "reference": {"mean": {"accuracy": 0.9}}}}))
    (Path(nan_run.path) / "evaluation.json").write_text(json.dumps(  # as the old code stored it
        {"utility": {"kind": "image", "mean": {"accuracy": "nan"}, "reference": {"mean": {"accuracy": "nan"}}},
         "attacks": {"best": {"name": "loss", "auc": "nan", "epsilon_lower_bound": "nan"}}}))
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("app_pages/runs.py").run()
    assert not at.exception, [e.value for e in at.exception]
    frame = at.dataframe[0].value
    cells = {str(v) for v in frame.to_numpy().ravel()}
    assert not cells & set(SHOWN_BAD), cells & set(SHOWN_BAD)
    assert frame.isna().sum().sum() == 0
    assert set(frame.set_index("run").loc[[scored.name, nan_run.name], "ε"]) == {"∞"}
    assert {"share", "pca", "K", "epochs", "variant"} <= set(frame.columns)


# ----------------------------------------------------------------------------- utility badge and warnings
def test_utility_badge_has_no_nan_when_synthetic_has_one_class():
    from dpcore.ui.story import utility_badge

    res = SimpleNamespace(metrics=("accuracy",), mean={"accuracy": float("nan")},
                          reference={"mean": {"accuracy": 0.9}})
    b = utility_badge(res)
    assert b["value"] == "—" and b["delta"] is None and b["reference"] == "0.900"
    ok = utility_badge(SimpleNamespace(metrics=("accuracy",), mean={"accuracy": 0.7},
                                       reference={"mean": {"accuracy": 0.9}}))
    assert ok["delta"] == "-0.200"


def test_warnings_name_a_missing_class_a_collapsed_column_and_chance_utility():
    from dpcore.evaluate.checks import synthetic_warnings

    train = _ds(labels=np.arange(200) % 3)
    x = np.random.default_rng(1).random((100, 8))
    x[:, 2] = 0.5
    syn = _ds(labels=np.zeros(100, dtype=int), features=x)
    res = SimpleNamespace(metrics=("accuracy",), mean={"accuracy": float("nan")})
    w = " | ".join(synthetic_warnings(syn, train, train, res))
    assert "2 of 3 classes never appear" in w and "c1" in w and "1 encoded column collapsed" in w and "while it varies" in w
    assert "could not be measured" in w
    low = SimpleNamespace(metrics=("accuracy",), mean={"accuracy": 0.30})
    assert any("at or below chance" in m for m in synthetic_warnings(train, train, train, low))
    assert synthetic_warnings(train, train, train, SimpleNamespace(metrics=("accuracy",),
                                                                   mean={"accuracy": 0.9})) == []


# ----------------------------------------------------------------------------- ε sweep on another dataset
def test_sweep_settings_from_another_dataset_are_fitted_to_the_active_one():
    from dpcore.ui.sweep import fit_to_data

    small = _ds(n=100, d=8)  # 8 features + 2 label classes; a built-in's size (public)
    params, changed = fit_to_data("p3gm", {"pca_dim": 30, "batch_size": 300, "epochs": 2}, small, public_rows=100)
    assert params["pca_dim"] == 10 and params["batch_size"] is None and params["epochs"] == 2  # auto: from ñ
    assert len(changed) == 2
    fresh, _ = fit_to_data("p3gm", {}, small, public_rows=100)  # never opened the Train page: defaults, fitted
    assert fresh["pca_dim"] == 10 and fresh.get("batch_size") is None


def test_data_page_says_small_data_needs_a_larger_epsilon(runs_dir):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["dataset"] = "digits"
    at.run()
    text = " ".join(c.value for c in at.caption)
    assert "ε = 10" in text and "small data needs a larger ε" in text  # digits: 1,437 training rows
    from dpcore.ui.story import default_epsilon

    assert default_epsilon(60_000) == 1.0 and default_epsilon(1_437) == 10.0
