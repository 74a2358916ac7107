"""Sweeps: the same 4-point grid on a local Ray (2 CPUs) and in-process gives the same runs and
ledger structure; a stopped sweep resumes without redoing finished runs; a rerun trains nothing;
private selection releases one run whose ε is the accountant's over its extended ledger."""
from __future__ import annotations

import json
import threading

import pytest

from dpcore.jobs.sweep import SweepSpec, run_sweep
from dpcore.runs.store import Run

TINY = {"epochs": 1, "hidden": 16, "em_iters": 2, "pca_dim": 8, "batch_size": 100}


def spec():
    return SweepSpec(model="p3gm", grid={"epsilon": ["1", "4"], "encoder_share": [0.1, 0.3]},
                     params=TINY, seeds=1, name="t4")


def structure(run: Run):
    return [(r.name, r.mechanism, r.noise) for r in run.ledger()]


def check_calibrated(run: Run) -> None:
    """The run's σ's and steps are exactly what its config calibrates to at its released noisy
    row count ñ (the count's noise is secret, so ñ, and with it q, T and σ_s, differ per run)."""
    from dpcore.privacy.accountant import calibrate_p3gm, sgd_schedule
    from dpcore.privacy.ledger import PrivacyLedger

    led = run.ledger()
    saved = json.loads((run.path / "model" / "model.json").read_text())
    p, n = saved["config"], saved["released_rows"]  # auto batch/epochs: as the run resolved them from ñ
    cal = calibrate_p3gm(p["epsilon"], p["delta"], p["encoder_share"], n, p["batch_size"], p["epochs"],
                         components=p["components"], em_iters=p["em_iters"], center=p["pca_center"],
                         spent=PrivacyLedger(led.records[:1]))
    sig = {r.name: r for r in led}
    assert sig["dp-pca"].noise_multiplier == pytest.approx(cal.pca_sigma, rel=1e-9)
    assert sig["dp-sgd"].noise_multiplier == pytest.approx(cal.sgd_sigma, rel=1e-9)
    assert sig["dp-sgd"].steps == sgd_schedule(n, p["batch_size"], p["epochs"])[1]
    em = [r.noise_multiplier for r in led if r.name.startswith("dp-em")]
    assert len(em) == 3 and em == pytest.approx([cal.em_sigma] * 3, rel=1e-9)


@pytest.fixture(scope="module")
def in_process(tmp_path_factory):
    """The sweep in-process, stopped after two runs, then resumed."""
    root = tmp_path_factory.mktemp("inproc")
    stop = threading.Event()
    seen = []

    def progress(p):
        seen.append(p)
        if p["done"] == 2:
            stop.set()

    first = run_sweep(spec(), root, backend="in-process", stop=stop, progress=progress)
    second = run_sweep(spec(), root, backend="in-process")
    return root, first, second, seen


def test_stop_then_resume_redoes_no_finished_run(in_process):
    root, first, second, seen = in_process
    assert first["stopped"] and [r["status"] for r in first["runs"]].count("done") == 2
    assert seen[0]["total"] == 4 and seen[0]["seconds_left"] is not None
    assert [r["skipped"] for r in second["runs"]] == [True, True, False, False]
    assert all(r["status"] == "done" and r["utility"] is not None for r in second["runs"])
    assert json.loads((root / "_sweeps" / "t4.json").read_text())["runs"] == second["runs"]


def test_rerun_trains_nothing(in_process):
    root = in_process[0]
    before = {p.name: (p / "status.json").stat().st_mtime_ns for p in root.glob("t4--*")}
    again = run_sweep(spec(), root, backend="in-process")
    assert all(r["skipped"] for r in again["runs"]) and "nothing trained" in again["note"]
    assert before == {p.name: (p / "status.json").stat().st_mtime_ns for p in root.glob("t4--*")}


def test_ray_and_in_process_give_the_same_runs(in_process, local_ray, tmp_path):
    ray_sum = run_sweep(spec(), tmp_path, backend="ray", num_cpus=2)
    root, _, local, _ = in_process
    assert ray_sum["backend"] == "ray"
    assert [(r["run"], r["params"]) for r in ray_sum["runs"]] == [(r["run"], r["params"]) for r in local["runs"]]
    for a, b in zip(ray_sum["runs"], local["runs"]):
        ra, rb = Run(tmp_path / a["run"]), Run(root / b["run"])
        assert a["status"] == "done" and structure(ra) == structure(rb)
        assert {r.noise for r in ra.ledger()} == {"secret"}
        check_calibrated(ra)
        check_calibrated(rb)
        assert a["epsilon"] == pytest.approx(b["epsilon"], rel=1e-6)


def test_private_selection_releases_one_run_with_the_selection_in_its_epsilon(in_process, monkeypatch):
    from dpcore.jobs import selection
    from dpcore.privacy.accountant import epsilon

    root = in_process[0]
    monkeypatch.setattr(selection, "draw_trials", lambda rng, **kw: 1)  # keep the test short
    out = selection.select_private(spec(), root, mean_trials=3.0, backend="in-process")
    assert len(out["trials"]) == 1 and out["released"] is not None
    run = Run(root / out["released"]["run"])
    led = run.ledger()
    assert led.selection is not None and led.selection.distribution == "negative_binomial"
    assert run.epsilon == pytest.approx(epsilon(led, run.delta), rel=1e-12)
    single = max(r["epsilon"] for r in in_process[2]["runs"])
    assert run.epsilon > out["epsilon_base"] >= single * (1 - 1e-9) > 0  # Q can be the grid's largest ε
    # a second call finds the same draw and does not extend the ledger again
    again = selection.select_private(spec(), root, mean_trials=3.0, backend="in-process")
    assert again["released"]["run"] == out["released"]["run"]
    assert Run(root / out["released"]["run"]).epsilon == pytest.approx(run.epsilon)


def test_cli_sweep_json_skips_finished_and_rejects_bad_grid(in_process, capsys):
    from dpcore.cli import main

    root = in_process[0]
    args = ["sweep", "--model", "p3gm", "--dataset", "digits", "--grid", "epsilon=1,4",
            "--grid", "encoder_share=0.1,0.3", "--name", "t4", "--root", str(root), "--json",
            "--backend", "in-process"] + [f"--set={k}={v}" for k, v in TINY.items()]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["backend"] == "in-process" and len(out["runs"]) == 4
    assert set(out["runs"][0]) == {"run", "params", "epsilon", "utility", "status"}
    assert "not covered" in out["best"]["label"]
    toml = root / "sweep.toml"
    toml.write_text('name = "t4"\nmodel = "p3gm"\ndataset = "digits"\n[params]\n'
                    + "".join(f"{k} = {v}\n" for k, v in TINY.items())
                    + "[grid]\nepsilon = [1, 4]\nencoder_share = [0.1, 0.3]\n")
    assert main(["sweep", "--file", str(toml), "--root", str(root), "--json", "--backend", "in-process"]) == 0
    from_file = json.loads(capsys.readouterr().out)
    assert [r["run"] for r in from_file["runs"]] == [r["run"] for r in out["runs"]]
    assert "nothing trained" in from_file["note"]
    assert main(["sweep", "--model", "p3gm", "--dataset", "digits", "--grid", "pca_dim=9999",
                 "--root", str(root), "--json"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: sweep point") and "\n" not in err
