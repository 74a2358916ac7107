"""The Train page preselects the recommended model (dpcore.models.recommend) and says why before
anything trains: on each installed built-in, and on the data owner's journey table (the one
tests/app/test_browser_journey.py uploads). The expected model is the one docs/tabular.md's
benchmark ranks first at ε = 1 (tests/models/test_recommend.py reads the doc), P3GM for images."""
from __future__ import annotations

import html
from pathlib import Path

import pytest
from test_browser_journey import patients_frame

from dpcore.data.registry import list_datasets

APP = str(Path(__file__).resolve().parents[2] / "app.py")
INSTALLED = [i.name for i in list_datasets() if i.available]


def _expected(name: str) -> str:
    """The model the benchmark ranks first for this built-in (tests/models/test_recommend.py checks
    that BENCHMARK_FIRST is the doc's table and that the other built-ins follow the same rule)."""
    from dpcore.models.recommend import BENCHMARK_FIRST, recommend

    return BENCHMARK_FIRST.get(name) or recommend(name).model


def _train_page(**query):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=180)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    at.switch_page("app_pages/train.py").run()
    assert not at.exception and not at.error, [e.value for e in at.exception or at.error]
    return at


def _reason(at) -> str:
    return " ".join(html.unescape(c.value) for c in at.caption if "Recommended for this data" in c.value)


@pytest.mark.parametrize("dataset", INSTALLED)
def test_each_builtin_preselects_the_benchmarks_first_model_with_its_reason(runs_dir, dataset):
    at = _train_page(dataset=dataset)
    model = at.selectbox(key="train.model").value
    assert model == _expected(dataset)
    assert model.upper() in _reason(at)


def test_the_journey_table_preselects_aim_and_a_user_pick_stays_until_the_data_changes(runs_dir):
    at = _train_page(dataset="digits")
    assert at.selectbox(key="train.model").value == "p3gm"
    at.switch_page("app_pages/data.py").run()
    at.segmented_control(key="data.source").set_value("Upload a CSV").run()
    at.file_uploader(key="data.upload").set_value(
        ("patients.csv", patients_frame(600).to_csv(index=False).encode(), "text/csv")).run()
    assert at.selectbox(key="data.target").value == "readmitted"
    at.button(key="data.use_csv").click().run()
    at.switch_page("app_pages/train.py").run()
    assert not at.exception and not at.error, [e.value for e in at.exception or at.error]
    assert at.selectbox(key="train.model").value == "aim" == _expected("credit")  # a table like the benchmark's
    assert "AIM" in _reason(at)
    at.selectbox(key="train.model").set_value("mst").run()
    at.switch_page("app_pages/data.py").run()
    at.switch_page("app_pages/train.py").run()
    assert at.selectbox(key="train.model").value == "mst"  # the user's pick stays with the same data
    infos = " ".join(i.value for i in at.info)
    assert "Recommended for this data" in infos and "AIM" in infos  # the other model is named, with why
