"""The Runs page's grid-sweep panel draws the Pareto front and the heatmap of a finished sweep."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def finished_sweep(root: Path) -> dict:
    """A finished sweep's summary: ε × encoder share × PCA dimension × 2 seeds (scores made up:
    the views read only the summary)."""
    from dpcore.jobs.sweep import SweepSpec, point_name, save_summary

    spec = SweepSpec(model="p3gm", grid={"epsilon": [1.0, 4.0], "encoder_share": [0.1, 0.3],
                                         "pca_dim": [8, 16]}, seeds=2, name="view")
    rows = []
    for eps in (1.0, 4.0):
        for share in (0.1, 0.3):
            for dim in (8, 16):
                for seed in (0, 1):
                    p = {"epsilon": eps, "encoder_share": share, "pca_dim": dim, "seed": seed}
                    rows.append({"run": point_name("view", p), "params": p, "epsilon": eps, "status": "done",
                                 "utility": 0.1 * eps + share + dim / 100 + seed / 50, "tvd_2way": 0.2,
                                 "mia_auc": 0.5, "skipped": False})
    summary = {"sweep": spec.to_dict(), "backend": "in-process", "runs": rows, "stopped": False}
    save_summary(root, "view", summary)
    return summary


def test_runs_page_draws_pareto_front_and_heatmap(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("DPCORE_RUNS_DIR", str(tmp_path))
    monkeypatch.setenv("DPCORE_UI_RAISE", "1")
    finished_sweep(tmp_path)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at.switch_page("app_pages/runs.py").run()
    assert not at.exception, [e.value for e in at.exception]
    figs = {json.loads(el.proto.spec)["layout"]["title"]["text"]: json.loads(el.proto.spec)
            for el in at.get("plotly_chart")}
    pareto = figs["Privacy–utility Pareto front"]
    lines = [t for t in pareto["data"] if t.get("mode") == "lines+markers"]
    assert len(lines) == 4  # one per (encoder share, PCA dimension)
    bands = [t for t in pareto["data"] if t.get("fill") == "toself"]
    assert len(bands) == 4 and all(max(b["y"]) - min(b["y"]) > 0 for b in bands)  # seeds' spread
    heat = figs["utility (synthetic → real) at ε = 4"]["data"][0]
    assert heat["type"] == "heatmap" and len(heat["z"]) == 2 and len(heat["z"][0]) == 2
    # mean over the two seeds of 0.4 + share + dim/100 + seed/50
    assert heat["z"][0][0] == pytest.approx(0.4 + 0.1 + 0.08 + 0.01)
    assert any("best on private data (selection not covered by ε)" in w.value for w in at.warning)


def test_both_sweeps_offer_the_same_models_and_a_grid_from_each_models_declaration(tmp_path, monkeypatch):
    """The ε sweep and the grid sweep decide from one rule (`sweepable_models`); the grid starts
    from the chosen model's own axes (encoder_share only for a model that has it)."""
    from streamlit.testing.v1 import AppTest

    from dpcore import ui
    from dpcore.jobs.sweep import sweep_axes, sweepable_models

    monkeypatch.setenv("DPCORE_RUNS_DIR", str(tmp_path))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at.switch_page("app_pages/runs.py").run()
    assert not at.exception, [e.value for e in at.exception]
    labels = [ui.model_info(m)["label"] for m in sweepable_models()]
    assert list(at.selectbox(key="runs.sweep_model").options) == labels
    assert list(at.selectbox(key="sweep.model").options) == labels
    for model in sweepable_models():
        at.selectbox(key="sweep.model").set_value(model).run()
        text = at.text_area(key=f"sweep.grid.{model}").value
        assert [line.split("=")[0] for line in text.splitlines()] == list(sweep_axes(model))
        assert ("encoder_share" in text) == (model in ("p3gm", "p3gm-ae"))
