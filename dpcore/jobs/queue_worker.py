"""What a queued job runs where it runs (a Ray worker; a thread in tests): its trainings one after
another, with its progress written beside the queue and a stop file it obeys.

Why files and not Ray messages: the queue must survive the web server (a restart re-reads them),
and the same files work for a local Ray, a cluster on a shared filesystem and the tests' thread.
`run_queued` is module-level with a plain dict argument, so it pickles to any Ray worker.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from dpcore.errors import DPCoreError
from dpcore.io import atomic_write_json
from dpcore.jobs.job import Training, run_training
from dpcore.jobs.runner import one_line
from dpcore.runs.store import RunConfig

PROGRESS_EVERY_S = 0.5  # how often a worker rewrites its progress file
STOP_POLL_S = 0.25  # how often a worker looks for its stop file


def progress_path(control: Path, job_id: str) -> Path:
    return Path(control) / f"{job_id}.progress.json"


def result_path(control: Path, job_id: str) -> Path:
    return Path(control) / f"{job_id}.result.json"


def stop_path(control: Path, job_id: str) -> Path:
    return Path(control) / f"{job_id}.stop"


class _StopFile(threading.Thread):
    """Sets `event` once the job's stop file exists (the queue writes it to cancel a running job)."""

    def __init__(self, path: Path, event: threading.Event):
        super().__init__(name="dpcore-queue-stop", daemon=True)
        self.path, self.event, self.done = path, event, threading.Event()

    def run(self) -> None:  # noqa: D102 - threading entry point
        while not self.done.wait(STOP_POLL_S):
            if self.path.exists():
                self.event.set()
                return


def trainings(spec: dict) -> list[Training]:
    """The job's trainings: a Story pair's are scored after they train (utility, attacks and the
    canary audit, as the single-user Story does), every other job's are plain trainings."""
    configs = [RunConfig.from_dict(c) for c in spec["configs"]]
    if spec.get("kind") == "story" and len(configs) == 2:
        from dpcore.ui.story_job import pair_trainings  # the Story's scoring (no Streamlit at import)

        return pair_trainings(configs)
    return [Training(c) for c in configs]


def run_queued(spec: dict) -> dict:
    """Train spec["configs"] (RunConfig dicts) under spec["root"], one after another; the first
    that fails or stops ends the job. Returns (and writes to the result file) {"status", "runs",
    "results", "error"}: status "done", "stopped" (its stop file came) or "failed"."""
    control, job_id, root = Path(spec["control"]), str(spec["job"]), str(spec["root"])
    stop = threading.Event()
    watcher = _StopFile(stop_path(control, job_id), stop)
    watcher.start()
    n = len(spec["configs"])
    state: dict[str, Any] = {"index": 0, "of": n, "run": None, "runs": [], "step": 0, "total_steps": None,
             "started": time.time(), "updated": time.time()}
    last = [0.0]

    def publish(force: bool = False) -> None:
        now = time.time()
        if force or now - last[0] >= PROGRESS_EVERY_S:
            last[0] = state["updated"] = now
            try:
                atomic_write_json(progress_path(control, job_id), state)
            except DPCoreError:  # the queue folder went away: the job still trains
                pass

    def callback(ev) -> bool:
        state["step"], state["total_steps"] = int(ev.step), int(ev.total_steps)
        publish()
        return not stop.is_set()

    def created(run) -> None:
        state["run"] = run.target_name
        state["runs"] = [*state["runs"], run.target_name]
        publish(force=True)

    def say(text: str) -> None:
        state["phase"] = str(text)[:120]
        publish(force=True)

    results: list[dict] = []
    error = None
    try:
        for i, training in enumerate(trainings(spec)):
            if stop.is_set():
                break
            state.update(index=i, step=0, total_steps=None, phase="training")
            publish(force=True)
            results.append(run_training(training, root, callback, stop=stop, on_created=created, say=say))
            if results[-1].get("status") != "done":
                break
    except BaseException as exc:  # noqa: BLE001 - the job's error is its result, never lost
        error = one_line(exc)
    finally:
        watcher.done.set()
    statuses = [r.get("status") for r in results]
    status = ("failed" if error is not None or "failed" in statuses
              else "stopped" if stop.is_set() or "stopped" in statuses else "done")
    runs = list(dict.fromkeys([*state["runs"], *(str(r["run"]) for r in results if r.get("run"))]))
    out = {"status": status, "runs": runs, "results": results, "error": error, "finished": time.time()}
    try:
        atomic_write_json(result_path(control, job_id), out)
    except DPCoreError:
        pass
    return out
