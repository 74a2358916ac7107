"""Defaults that tell the story, run names that say what differs, settings that persist across pages
and reloads (fast: nothing is trained here except one tiny PGM on digits)."""
from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
TINY = {"epochs": 1, "hidden": 32, "warmup_steps": 10, "pca_dim": 10, "batch_size": 200}


def _fashion_installed() -> bool:
    from dpcore.data import list_datasets

    return any(d.name == "fashion-mnist" and d.available for d in list_datasets())


needs_fashion = pytest.mark.skipif(not _fashion_installed(), reason="Fashion-MNIST is not installed "
                                   "(apt-get install dataset-fashion-mnist)")


def _app(page: str | None = None, **query):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=120)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    if page is not None:
        at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _key(elements, prefix: str) -> str:
    """The key of the one widget whose key starts with `prefix` (a size-specific default adds ".dN")."""
    keys = [e.key for e in elements if e.key and e.key.startswith(prefix)]
    assert len(keys) == 1, keys
    return keys[0]


def _metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


# ----------------------------------------------------------------------------- 1. the default dataset
@needs_fashion
def test_app_opens_on_fashion_mnist_demo_rows_and_says_why(runs_dir):
    from dpcore.ui.defaults import DEMO_TRAIN_ROWS, default_data_choice, demo_rows

    choice = default_data_choice()
    assert choice["dataset"] == "fashion-mnist" and demo_rows(70_000) == choice["n"] and demo_rows(1_797) is None
    at = _app()
    assert html.unescape(at.subheader[0].value) == "Active dataset: fashion-mnist"
    assert _metric(at, "Training rows (private)") == f"{DEMO_TRAIN_ROWS:,}"
    text = " ".join(c.value for c in at.caption)
    assert "Why Fashion-MNIST" in text and "small data" in text and "needs a larger ε" in text
    assert not at.info  # no fallback note when the files are there


def test_app_falls_back_to_digits_with_a_note_when_fashion_mnist_is_missing(runs_dir, monkeypatch):
    from dpcore.ui import defaults

    monkeypatch.setattr(defaults, "_available", lambda: {"fashion-mnist": False, "digits": True})
    at = _app()
    assert html.unescape(at.subheader[0].value) == "Active dataset: digits"
    assert any("Fashion-MNIST is not installed" in i.value and "ε = 10" in i.value for i in at.info)
    assert "ε = 10" in " ".join(c.value for c in at.caption)


# ----------------------------------------------------------------------------- 2. run names
def test_run_name_carries_only_the_settings_that_differ():
    from dpcore.runs import RunConfig
    from dpcore.runs.folders import check_run_name

    data = {"dataset": "fashion-mnist", "n": 23_333}
    name = RunConfig("p3gm", {"epsilon": 1.0, "encoder_share": 0.1, "pca_dim": 10}, data).default_name()
    assert re.fullmatch(r"p3gm-fashion-mnist-eps1-share0\.1-pca10-s0-\d{8}-\d{6}", name), name
    plain = RunConfig("p3gm", {"epsilon": 1.0, "pca_dim": 30}, data).default_name()  # 30: what auto means
    assert re.fullmatch(r"p3gm-fashion-mnist-eps1-s0-\d{8}-\d{6}", plain), plain
    vae = RunConfig("vae", {"epochs": 200, "seed": 3}, {"dataset": "digits", "outlier": True}).default_name()
    assert re.fullmatch(r"vae-digits-epsinf-epochs200-outlier-s3-\d{8}-\d{6}", vae), vae
    check_run_name(name)


def test_run_name_stays_valid_and_bounded():
    from dpcore.runs.folders import check_run_name
    from dpcore.runs.naming import MAX_NAME, run_name

    long = run_name("p3gm-ae", "é/" + "x" * 300 + " <b>", 1e-5, 2**62, "20250101-120000",
                    "share0.123456789-pca100-K10-epochs1000-outlier")
    assert len(long) <= MAX_NAME and check_run_name(long) == long and "-s4611686018427387904-" in long
    assert check_run_name(long + "-9999")  # room for the collision suffix


def test_settings_label_is_the_same_short_form_in_the_runs_table_and_compare(runs_dir):
    from dpcore.jobs import train_run
    from dpcore.runs import RunConfig
    from dpcore.ui.tables import runs_table, settings_label

    file = {"csv": "rows.csv"}  # a file's defaults are the declared constants (its size is private)
    assert settings_label("p3gm", RunConfig("p3gm", {"pca_dim": 30}, file).params) == ""  # all defaults
    # digits' public size gives P3GM 10 epochs (not the auto 4), on the CLI as on the Train page
    assert settings_label("p3gm", RunConfig("p3gm", {"pca_dim": 30}).params) == "epochs10"
    run = train_run(RunConfig("pgm", {**TINY, "components": 2}, {"dataset": "digits", "test_size": 0.2}), runs_dir)
    assert "-pca10-K2-epochs1-" in run.name
    table = runs_table([run.summary()])
    row = table.iloc[0]
    assert (row["pca"], row["K"], row["epochs"]) == ("10", "2", "1")
    # what people compare comes first, not behind the long names and settings (issue 24)
    assert list(table.columns[:8]) == ["run", "ε", "utility", "shared (with noise)", "best attack", "attack AUC",
                                       "ε ≥ (attack)", "ε ≥ (canary audit)"]
    at = _app("app_pages/compare.py", dataset="digits")
    assert any("`pca10-K2-epochs1`" in m.value for m in at.markdown), [m.value for m in at.markdown]


# ----------------------------------------------------------------------------- 3. persistence
def test_train_settings_survive_another_page(runs_dir):
    at = _app("app_pages/train.py", dataset="digits")
    eps, epochs = _key(at.select_slider, "train.p3gm.epsilon"), _key(at.slider, "train.p3gm.epochs")
    at.select_slider(key=eps).set_value(0.5).run()
    at.slider(key=epochs).set_value(7).run()
    at.number_input(key="train.p3gm.adv.hidden").set_value(64).run()
    at.switch_page("app_pages/runs.py").run()
    at.switch_page("app_pages/train.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.select_slider(key=eps).value == 0.5
    assert at.slider(key=epochs).value == 7
    assert at.number_input(key="train.p3gm.adv.hidden").value == 64
    at.selectbox(key="train.model").set_value("vae").run()
    at.switch_page("app_pages/data.py").run()
    at.switch_page("app_pages/train.py").run()
    assert at.selectbox(key="train.model").value == "vae"


def test_reload_keeps_dataset_and_model_from_the_address(runs_dir):
    at = _app("app_pages/train.py", dataset="digits", model="vae")
    assert at.selectbox(key="train.model").value == "vae"
    assert "Training on **digits**" in " ".join(m.value for m in at.markdown)
    assert at.query_params["dataset"] == "digits" and at.query_params["model"] == "vae"
    at.selectbox(key="train.model").set_value("pgm").run()
    assert at.query_params["model"] == "pgm"  # what a reload would reopen


@pytest.mark.parametrize("query", [{"dataset": "../../etc/passwd"}, {"dataset": "<b>x</b>"}, {"model": "rm -rf"},
                                   {"dataset": "DIGITS", "model": ""}])
def test_a_bad_address_value_is_ignored_with_one_line(runs_dir, query):
    from dpcore.ui.defaults import default_dataset

    at = _app(**query)
    assert html.unescape(at.subheader[0].value) == f"Active dataset: {default_dataset()}"
    notes = [w.value for w in at.warning if "in the address" in w.value]
    assert len(notes) == len(query) and all("\n" not in n for n in notes), notes
    at.run()  # shown once, not on every rerun
    assert not [w for w in at.warning if "in the address" in w.value]
