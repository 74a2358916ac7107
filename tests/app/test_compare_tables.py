"""The Compare page on two tiny tabular runs: quality summary beside TVD, atoms in the 1-way bars,
the two 2-way heatmaps on one colour scale with its colour bar."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
TINY = {"epochs": 2, "hidden": 32, "warmup_steps": 10, "pca_dim": 3, "batch_size": 100}


@pytest.fixture(scope="module")
def table_runs(runs_dir, tmp_path_factory):
    """A P3GM (ε = 1) and a PGM run on a 400-row CSV whose income is exactly 0 in 40 % of rows."""
    from dpcore.jobs import train_run
    from dpcore.runs import RunConfig

    rng = np.random.default_rng(0)
    n = 400
    income = np.where(rng.random(n) < 0.4, 0, rng.integers(1000, 90_000, n))
    lines = ["income,age,region,y"] + [f"{i},{a},{r},{y}" for i, a, r, y in zip(
        income, rng.integers(18, 80, n), rng.choice(["n", "s", "e"], n), rng.integers(0, 2, n))]
    csv = tmp_path_factory.mktemp("csv") / "people.csv"
    csv.write_text("\n".join(lines) + "\n")
    data = {"csv": str(csv), "target": "y"}
    p3gm = train_run(RunConfig("p3gm", {**TINY, "epsilon": 1.0}, data), runs_dir, name="tab-p3gm")
    pgm = train_run(RunConfig("pgm", TINY, data), runs_dir, name="tab-pgm")
    return p3gm, pgm


def _figures(at) -> list[dict]:
    return [json.loads(el.proto.spec) for el in at.get("plotly_chart")]


def _values(y) -> np.ndarray:
    """A trace's numbers as plotly sends them: a list, or {"dtype", "bdata" (base64)}."""
    if isinstance(y, dict):
        import base64

        return np.frombuffer(base64.b64decode(y["bdata"]), dtype=y["dtype"])
    return np.asarray(y, dtype=float)


def test_compare_on_tables_shows_quality_atoms_and_one_colour_scale(table_runs):
    from streamlit.testing.v1 import AppTest

    p3gm, pgm = table_runs
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("app_pages/compare.py").run()
    at.selectbox(key="compare.run").set_value(p3gm.name).run()
    assert not at.exception, [e.value for e in at.exception]
    metrics = {m.label: m.value for m in at.metric}
    for label in ("Quality", "Column shapes", "Column pairs"):
        assert metrics[label].endswith("%") and 0 <= float(metrics[label][:-1]) <= 100, metrics
    assert any("not covered by ε" in c.value for c in at.caption)  # an evaluation, labelled as one
    at.selectbox(key=f"compare.col.{p3gm.name}").set_value("income").run()
    bars = next(f for f in _figures(at) if f["layout"]["title"]["text"].startswith("income"))
    real = bars["data"][0]
    assert real["x"][0] == "= 0" and abs(_values(real["y"])[0] - 0.4) < 0.08  # the point mass, beside the bins
    assert real["marker"]["pattern"]["shape"][0] == "/"

    at.selectbox(key="compare.other").set_value(pgm.name).run()  # side by side
    assert not at.exception, [e.value for e in at.exception]
    assert sum(m.label == "Quality" for m in at.metric) == 2
    heat = [tr for fig in _figures(at) for tr in fig["data"] if tr["type"] == "heatmap"]
    assert len(heat) == 2 and heat[0]["zmax"] == heat[1]["zmax"] and heat[0]["zmin"] == heat[1]["zmin"]
    assert all(tr.get("showscale", True) for tr in heat)
    assert all("shared scale" in json.dumps(tr["colorbar"]) for tr in heat)
