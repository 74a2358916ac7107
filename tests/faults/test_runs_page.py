"""The Runs page with a hostile evaluation.json, an edited status and an interrupted partial folder
next to a good run: the table is drawn, the bad runs read "unreadable: <file>: <reason>", one can
be deleted, and the interrupted folder is pruned from the page after confirming."""
import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_runs_page_survives_bad_runs_and_prunes(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from dpcore.jobs import train_run
    from dpcore.runs import RunConfig

    monkeypatch.setenv("DPCORE_RUNS_DIR", str(tmp_path))
    monkeypatch.setenv("DPCORE_UI_RAISE", "1")
    good = train_run(RunConfig("dp-vae", {"latent_dim": 2, "hidden": 8, "epochs": 2, "batch_size": 50,
                                          "epsilon": 5.0}, {"dataset": "digits", "n": 200}), tmp_path, name="good")
    shutil.copytree(good.path, tmp_path / "listy")
    (tmp_path / "listy" / "evaluation.json").write_text('["x",1]')  # the one-liner
    shutil.copytree(good.path, tmp_path / "deep")
    (tmp_path / "deep" / "evaluation.json").write_text("[" * 50_000 + "]" * 50_000)
    shutil.copytree(good.path, tmp_path / "early")
    st = json.loads((tmp_path / "early" / "status.json").read_text())
    (tmp_path / "early" / "status.json").write_text(json.dumps({**st, "step": 1}))
    partial = tmp_path / ".gone.partial-x1"
    shutil.copytree(good.path, partial)
    (partial / "status.json").write_text(json.dumps({**st, "status": "running", "pid": 2**22 + 3, "heartbeat": 0}))

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params["dataset"] = "digits"
    at.run()
    at.switch_page("app_pages/runs.py").run()
    assert not at.exception, [e.value for e in at.exception]
    table = at.dataframe[0].value.set_index("run")
    assert table.loc["good", "status"] == "done"
    assert table.loc["listy", "status"].startswith("unreadable: evaluation.json: must be an object")
    assert table.loc["deep", "status"].startswith("unreadable: evaluation.json: ")
    assert table.loc["early", "status"].startswith("unreadable: status.json: says done at step 1")
    assert table.loc["gone.partial-x1", "status"] == "interrupted"

    at.selectbox(key="runs.selected").set_value("listy").run()
    assert any("cannot be used" in e.value for e in at.error)
    at.checkbox(key="runs.sure.listy").check().run()
    at.button(key="runs.delete").click().run()
    assert not at.exception and not (tmp_path / "listy").exists()

    assert at.button(key="runs.prune").disabled
    at.checkbox(key="runs.prune_sure").check().run()
    at.button(key="runs.prune").click().run()
    assert not at.exception and not partial.exists() and (tmp_path / "good").is_dir()
    assert any("Deleted 1 interrupted" in s.value for s in at.success)
