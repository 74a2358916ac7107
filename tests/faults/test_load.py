"""A bounded load test: 8 browser sessions (Streamlit AppTest) on the Runs page while two tiny
trainings with the same settings run in the background. No session fails, no run collides with
another (two folders, two complete runs), nothing partial is left."""
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = 8


def test_eight_sessions_and_two_trainings(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from dpcore.jobs import train_run
    from dpcore.runs import RunConfig, list_runs

    monkeypatch.setenv("DPCORE_RUNS_DIR", str(tmp_path))
    monkeypatch.setenv("DPCORE_UI_RAISE", "1")
    cfg = RunConfig("vae", {"latent_dim": 2, "hidden": 8, "epochs": 3, "batch_size": 20},
                    {"dataset": "digits", "n": 300})
    runs, errors = [], []

    def train():
        try:
            runs.append(train_run(cfg, tmp_path))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=train) for _ in range(2)]
    for t in threads:
        t.start()
    seen = []
    t0 = time.perf_counter()
    for _ in range(SESSIONS):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        at.query_params["dataset"] = "digits"
        at.run()
        at.switch_page("app_pages/runs.py").run()
        assert not at.exception, [e.value for e in at.exception]
        assert not [e.value for e in at.error], [e.value for e in at.error]
        seen.append(len(at.dataframe[0].value) if at.dataframe else 0)
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert len(runs) == 2 and runs[0].path != runs[1].path  # the same settings, the same second: two names
    listed = {s.name: s.status for s in list_runs(tmp_path)}
    assert sorted(listed.values()) == ["done", "done"], listed
    assert not list(tmp_path.glob(".*.partial-*"))
    for r in runs:
        steps = [e["step"] for e in r.metrics()]
        assert steps == list(range(1, len(steps) + 1))  # one run's steps each, not a mix of two
    assert time.perf_counter() - t0 < 120
