"""Jobs: a single training, an ε list and a grid sweep run through one job API and one handle
type; progress reaches done; a job started again while it runs is joined, not run twice; what a
sweep may vary is the models' own declaration."""
from __future__ import annotations

import json
import threading
import time

import pytest

from dpcore.jobs import jobs
from dpcore.jobs.jobs import JobHandle
from dpcore.jobs.sweep import SweepSpec, sweep_axes, sweep_job, sweepable_models
from dpcore.runs import RunConfig

DATA = {"dataset": "digits", "split_seed": 0}
TINY = {"latent_dim": 4, "hidden": 16, "epochs": 1, "batch_size": 100}


def cfg(**kw) -> RunConfig:
    return RunConfig("dp-vae", {**TINY, **kw}, DATA)


def wait(handle: JobHandle, seconds: float = 180) -> list[dict]:
    """Poll the handle as a page does; its snapshots until the job ends."""
    seen = []
    end = time.time() + seconds
    while not handle.join(0.1) and time.time() < end:
        seen.append(handle.snapshot())
    assert handle.join(0), "the job did not end in time"
    return seen


def test_a_training_an_epsilon_list_and_a_grid_are_one_kind_of_job(tmp_path):
    single = jobs.start_training(cfg(epsilon=2.0), tmp_path / "one")
    eps = jobs.start(jobs.trainings_job([cfg(epsilon=e) for e in (1.0, 4.0)], tmp_path / "eps",
                                        kind="eps-sweep", title="ε sweep"))
    spec = SweepSpec(model="dp-vae", grid={"epsilon": ["1", "4"]}, params=TINY, seeds=1, name="g2",
                     scores=("marginals",))
    grid = jobs.start(sweep_job(spec, tmp_path / "grid", backend="in-process"))
    handles = (single, eps, grid)
    assert {type(h) for h in handles} == {JobHandle}
    polled = [wait(h) for h in handles]
    for h, seen, n in zip(handles, polled, (1, 2, 2)):
        assert h.status == "done" and h.error is None, (h.job.kind, h.error)
        snap = h.snapshot()
        assert snap["done"] == snap["total"] == n and snap["fraction"] == 1.0
        assert [r["status"] for r in h.results] == ["done"] * n and len(h.runs) == n
        fracs = [s["fraction"] for s in seen]
        assert all(0.0 <= f <= 1.0 for f in fracs) and fracs == sorted(fracs)
        assert h.progress()[0].startswith(h.job.title) and "ready" in h.progress()[0]
        state = json.loads(json.dumps(h.state()))  # what a queue would persist
        assert state["status"] == "done" and len(state["trainings"]) == n
    assert single.events() and single.events()[-1]["run"] == single.run.name  # the live view's events
    assert sorted(r.config.params["epsilon"] for r in eps.runs) == [1.0, 4.0]
    summary = grid.summary
    assert [r["status"] for r in summary["runs"]] == ["done", "done"]
    assert all(r["tvd_2way"] is not None for r in summary["runs"])  # the sweep's scores, saved with each run
    assert (tmp_path / "grid" / "_sweeps" / "g2.json").is_file()
    again = jobs.start(sweep_job(spec, tmp_path / "grid", backend="in-process"))  # finished: nothing trained
    assert again.join(60) and all(r["skipped"] for r in again.summary["runs"])
    assert again.snapshot()["skipped"] == 2 and "nothing trained" in again.summary["note"]


def test_a_job_started_again_while_it_runs_is_joined(tmp_path, monkeypatch):
    monkeypatch.setattr(jobs, "_BY_KEY", {})
    gate = threading.Event()

    def slow_build():
        gate.wait(30)
        return [jobs.Training(cfg(epsilon=2.0))]

    def job():
        return jobs.Job(kind="story", root=str(tmp_path), build=slow_build, key="k", title="Story")

    a = jobs.start(job())
    b = jobs.start(job())  # a second click or a new tab
    assert a is b and jobs.current("k") is a and a.progress()[0].startswith("Loading the data")
    gate.set()
    wait(a)
    assert a.status == "done" and len(list(tmp_path.glob("dp-vae*"))) == 1  # one training, not two
    c = jobs.start(job())  # once it ended, a start is a new job
    assert c is not a
    c.stop()
    c.join(60)
    plain = [jobs.start_training(cfg(), tmp_path) for _ in range(2)]  # no key: never joined
    assert plain[0] is not plain[1]
    for h in plain:
        h.stop()
        h.join(60)


def test_a_failing_training_ends_a_job_with_one_line_and_a_stop_is_stopped(tmp_path):
    bad = jobs.start_training([cfg(epsilon=1.0, batch_size=10**6), cfg()], tmp_path)
    assert bad.join(60) and bad.status == "failed" and "\n" not in bad.error and "batch" in bad.error
    assert bad.results[1] is None  # the first failure ends the list
    with pytest.raises(Exception, match="batch"):  # run_here raises it, as the CLI needs
        JobHandle(jobs.trainings_job(cfg(batch_size=10**6), tmp_path)).run_here()
    h = jobs.start_training(cfg(epochs=200), tmp_path)
    while not h.events() and h.join(0.05) is False:
        pass
    h.stop()
    assert h.join(60) and h.status == "stopped" and h.run.status()["status"] == "stopped"


@pytest.mark.parametrize("model", sorted(__import__("dpcore.models", fromlist=["MODELS"]).MODELS))
def test_what_a_sweep_varies_is_the_models_declaration(model):
    from dpcore.models import get_model

    cls = get_model(model)
    fields = {f for f in cls.config_class.__dataclass_fields__}
    axes = sweep_axes(model)
    assert set(axes) <= fields  # never an axis the model does not have (encoder_share: P3GM's)
    assert ("encoder_share" in axes) == ("encoder_share" in fields and cls.private)
    assert (model in sweepable_models()) == (cls.private and "epsilon" in fields)


def _imports(module: str) -> set[str]:
    """Every dpcore module `module` imports, at the top or inside a function."""
    import ast
    import importlib.util

    tree = ast.parse(open(importlib.util.find_spec(module).origin).read())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("dpcore"):
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("dpcore"))
    return out


def test_jobs_and_sweeps_import_nothing_above_them():
    """No cycle sweep ↔ sweep_ray, none sweep → report → runs: the jobs reach only down."""
    layer = ("dpcore.jobs.job", "dpcore.jobs.jobs", "dpcore.jobs.sweep", "dpcore.jobs.sweep_ray",
             "dpcore.jobs.selection", "dpcore.runs.evaluation", "dpcore.jobs.runner")
    for module in layer:
        above = {m for m in _imports(module) if m.startswith(("dpcore.report", "dpcore.ui", "dpcore.cli"))}
        assert not above, (module, above)
    assert not {m for m in _imports("dpcore.jobs.sweep_ray") if m.startswith(("dpcore.runs", "dpcore.jobs"))}
    for module in ("dpcore.jobs.job", "dpcore.jobs.jobs"):
        assert not {m for m in _imports(module) if m.startswith(("dpcore.jobs.sweep", "dpcore.jobs.selection"))
                    and not m.startswith("dpcore.jobs.sweep_ray")}
