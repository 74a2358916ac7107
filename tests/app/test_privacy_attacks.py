"""The Privacy page's attack ladder under AppTest: curves with the bound, the table, exposed records."""
from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_privacy_page_shows_the_ladder(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from dpcore.jobs import train_run
    from dpcore.runs import RunConfig

    monkeypatch.setenv("DPCORE_RUNS_DIR", str(tmp_path))
    monkeypatch.setenv("DPCORE_UI_RAISE", "1")
    train_run(RunConfig(model="dp-vae", params={"epochs": 1, "hidden": 32, "batch_size": 100, "epsilon": 1.0},
                        data={"dataset": "digits", "test_size": 0.3}), tmp_path, name="dpvae")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at.switch_page("app_pages/privacy.py").run()
    assert not at.exception, [e.value for e in at.exception]
    figs = [json.loads(el.proto.spec) for el in at.get("plotly_chart")]
    curves = [f for f in figs if "Membership inference attacks" in json.dumps(f.get("layout", {}).get("title", ""))]
    assert curves, "no attack figure"
    names = [t.get("name", "") for t in curves[0]["data"]]
    assert any("loss" in n for n in names) and any("DP" in n for n in names)  # attacks + the (ε, δ) bound
    table = at.dataframe[-1].value if len(at.dataframe) else None
    text = " ".join(str(m.value) for m in at.markdown) + " ".join(str(w.value) for w in at.warning)
    assert "not covered by ε — data owner only" in text
    assert any("Most exposed" in json.dumps(f.get("layout", {}).get("title", "")) for f in figs)
    assert table is not None
    assert any("empirical ε ≥ (95 %)" in df.value.columns for df in at.dataframe)


def test_train_page_offers_the_overfit_preset(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("DPCORE_RUNS_DIR", str(tmp_path))
    monkeypatch.setenv("DPCORE_UI_RAISE", "1")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at.switch_page("app_pages/train.py").run()
    at.selectbox(key="train.model").set_value("vae").run()
    at.radio(key="train.vae.preset").set_value("overfit").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.slider(key="train.vae.overfit.epochs").value == 200
    assert any("Preset **overfit**" in i.value for i in at.info)
