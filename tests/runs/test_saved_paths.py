"""What a saved run names of dpcore's code: only allow-listed classes, at paths that still import.

Why: a run folder outlives the code that wrote it. model.json names the classes of its template by
module path (`dpcore.data.schema:Schema`), and `dpcore.models.saved` loads only names on its
allow-list; a module moved without a compatibility entry would leave every run saved before the move
unopenable. So every `dpcore.` path in every file a run and a queued job write must be importable
and allow-listed, and the paths runs have been saved with must stay on the allow-list.
"""
from __future__ import annotations

import importlib
import re

import pytest
from queue_kit import ManualExecutor

from dpcore.jobs import train_run
from dpcore.jobs.queue import Queue
from dpcore.models.saved import _allowed_classes
from dpcore.runs import Run, RunConfig
from dpcore.runs.run_score import release_score
from dpcore.runs.verify import require_consistent

# the class paths runs on disk were saved with (model.json's template): a move keeps each loadable
SAVED_CLASS_PATHS = {"dpcore.data.schema:Schema", "dpcore.data.encoder:TabularEncoder"}
DOTTED = re.compile(rb"dpcore(?:\.[A-Za-z_][A-Za-z0-9_]*)+(?::[A-Za-z_][A-Za-z0-9_.]*)?")


def named_paths(root) -> dict[str, set[str]]:
    """Every `dpcore.…` path (with its `:Class` when there is one) in any file under `root`, by file."""
    out: dict[str, set[str]] = {}
    for f in sorted(p for p in root.rglob("*") if p.is_file()):
        found = {m.decode() for m in DOTTED.findall(f.read_bytes())}
        if found:
            out[str(f.relative_to(root))] = found
    return out


def resolve(path: str):
    """The object `path` names ("pkg.mod:Qual.name" or a dotted module path), imported."""
    module, _, qual = path.partition(":")
    obj = importlib.import_module(module)
    for part in filter(None, qual.split(".")):
        obj = getattr(obj, part)
    return obj


def check_named(root) -> set[str]:
    allowed = _allowed_classes()
    named = named_paths(root)
    paths = set().union(*named.values()) if named else set()
    off_list = {f: sorted(p for p in ps if p not in allowed) for f, ps in named.items()}
    assert not {f: p for f, p in off_list.items() if p}, f"saved files name code off the allow-list: {off_list}"
    for p in paths:
        assert resolve(p) is allowed[p], p
    return paths


@pytest.fixture(scope="module")
def scored_run(tmp_path_factory, make_people_csv):
    """A tiny table run (its model.json names the template's classes) with a released score."""
    root = tmp_path_factory.mktemp("saved")
    cfg = RunConfig("mst", {"epsilon": 1.0}, {"csv": str(make_people_csv(root / "people.csv")), "target": "y",
                                              "bounds": {"age": [18, 90]}, "test_size": 0.3})
    run = train_run(cfg, root / "runs", name="mst")
    release_score(run.path, 0.1)
    return run


def test_a_saved_run_names_only_allow_listed_importable_classes(scored_run):
    folder = scored_run.path
    assert {"config.json", "status.json", "ledger.json", "evaluation.json", "metrics.jsonl"} <= {
        p.name for p in folder.iterdir()}
    paths = check_named(folder.parent)
    assert paths == SAVED_CLASS_PATHS  # the scan is not vacuous: the template names both classes
    run = Run(folder)  # and it opens, verifies and loads with the code of today
    require_consistent(run)
    assert run.load_model().sample(5, seed=0).n == 5


def test_the_paths_runs_were_saved_with_stay_loadable():
    allowed = _allowed_classes()
    assert SAVED_CLASS_PATHS <= set(allowed)
    for p in SAVED_CLASS_PATHS:
        assert resolve(p) is allowed[p]


def test_a_queued_job_file_names_no_code(tmp_path):
    q = Queue(tmp_path, ManualExecutor())
    job = q.submit([{"model": "dp-vae", "params": {"epochs": 1}, "data": {"dataset": "digits"}}],
                   tmp_path / "workspaces" / "alice", "alice")
    assert (tmp_path / "_queue" / f"{job.id}.json").is_file()
    assert check_named(tmp_path) == set()


def test_the_scan_sees_a_path_off_the_allow_list(tmp_path):
    """A file naming a moved module (the old path of a job module, say) is found and refused."""
    (tmp_path / "model.json").write_text('{"schema_class": "dpcore.runs.runner:Thing"}')
    assert named_paths(tmp_path) == {"model.json": {"dpcore.runs.runner:Thing"}}
    with pytest.raises(AssertionError, match="off the allow-list"):
        check_named(tmp_path)
