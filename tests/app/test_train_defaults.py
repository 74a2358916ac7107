"""The CLI and the Train page train the same model for the same settings: for every registered
model on a built-in image set and a built-in table, the config `python -m dpcore train --model M
--dataset D` trains with equals the one the Train page starts with, untouched.

Why: the size-based defaults (P3GM's ε and epochs on a public dataset) lived in the app only, so
the CLI trained P3GM on digits at ε = 1 (at chance) while the page offered ε = 10. Both now read
the declarations (dpcore.models.params.defaults) and a size-dependent `auto` field stays auto on
both, resolved from the noisy ñ inside the run.
"""
from __future__ import annotations

from pathlib import Path

import pytest

APP = str(Path(__file__).resolve().parents[2] / "app.py")
TEST_SIZE = 0.2  # the app's data choice (dpcore.ui.defaults.default_data_choice)


def _cli_config(model: str, dataset: str):
    from dpcore.cli import build_parser
    from dpcore.cli.train import train_config
    from dpcore.jobs import prepare

    args = build_parser().parse_args(["train", "--model", model, "--dataset", dataset,
                                      "--test-size", str(TEST_SIZE)])
    return prepare(train_config(args))[0]


def _page_configs(dataset: str, models: list[str]) -> dict:
    """{model: the prepared RunConfig the Train page would start}, each model picked in turn."""
    from streamlit.testing.v1 import AppTest

    from dpcore.jobs import prepare
    from dpcore.runs import RunConfig

    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["dataset"] = dataset
    at.run()
    at.switch_page("app_pages/train.py").run()
    out = {}
    for model in models:
        at.selectbox(key="train.model").set_value(model).run()
        assert not at.exception and not at.error, (model, [e.value for e in at.exception or at.error])
        params = at.session_state[f"dpcore.params.{model}"]  # what "Start training" would submit
        data = {"dataset": dataset, "test_size": TEST_SIZE, "split_seed": 0, "outlier": False}
        out[model] = prepare(RunConfig(model, params, data))[0]
    return out


@pytest.mark.parametrize("dataset", ["digits", "credit"])
def test_cli_and_train_page_train_the_same_config(runs_dir, dataset):
    from dpcore.models import MODELS

    models = [m for m in MODELS if dataset != "digits" or MODELS[m].takes_images]
    page = _page_configs(dataset, models)
    for model in models:
        cli = _cli_config(model, dataset)
        assert cli.params == page[model].params, (model, {k: (v, page[model].params.get(k))
                                                          for k, v in cli.params.items()
                                                          if page[model].params.get(k) != v})
        assert cli.data == page[model].data


def test_p3gm_defaults_follow_the_public_size_not_the_file():
    """digits (1 438 public training rows): ε = 10 and 10 epochs on the CLI too; a file: the
    constants (ε = 1, epochs auto), whatever its private row count."""
    from dpcore.runs import RunConfig

    digits = RunConfig("p3gm", {}, {"dataset": "digits", "test_size": TEST_SIZE})
    assert (digits.params["epsilon"], digits.params["epochs"]) == (10.0, 10)
    given = RunConfig("p3gm", {"epsilon": 2.0}, {"dataset": "digits"})
    assert given.params["epsilon"] == 2.0 and given.params["epochs"] == 10
    cps = RunConfig("p3gm", {}, {"dataset": "cps1988", "test_size": TEST_SIZE})  # 22 524 training rows
    assert (cps.params["epsilon"], cps.params["epochs"]) == (1.0, None)
    file = RunConfig("p3gm", {}, {"csv": "rows.csv"})  # never read: a file's size is private
    assert (file.params["epsilon"], file.params["epochs"]) == (1.0, None)
