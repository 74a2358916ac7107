"""A job's description: its trainings (`Training`), how it runs (`Job`), and `run_training`, what
an executor runs for one training — a module-level function of picklable arguments, so a Ray worker
runs the same code as the in-process thread. The runner and its handle: `dpcore.jobs.jobs`.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from dpcore.errors import DPCoreError, InvalidParameter
from dpcore.jobs.runner import EventFn, train_run
from dpcore.runs.store import Run, RunConfig

BACKENDS = ("auto", "ray", "in-process")
NOTHING_TO_DO = "every run was finished already: nothing trained"
AfterFn = Callable[[Run, Callable[[str], None]], object]


@dataclass
class Training:
    """One training of a job: its config, then `after(run, say)` on the finished ("done") run.

    `weight`: its share of the job's time (relative to the others); `train_share`: of its own
    time, the training's (the rest is `after`, which reports `after_steps` messages through `say`).
    `resume`: a run of this name that is done with a model is not retrained (only `after` runs),
    any other run of this name is replaced (a sweep's point run again)."""

    config: RunConfig
    label: str = ""
    point: dict = field(default_factory=dict)
    weight: float = 1.0
    train_share: float = 1.0
    after: AfterFn | None = None
    after_steps: int = 0
    resume: bool = False
    overwrite: bool = False

    @property
    def name(self) -> str | None:
        return self.config.name


@dataclass
class Job:
    """What to run (`trainings`, or `build()` making them in the job's thread when that needs the
    data loaded), where (`backend`), and what follows (`finish(handle)` → `handle.summary`).

    `skip(training)`: finished already, nothing to run (a sweep's scored points); `keep_going`: a
    training failing with a one-line DPCoreError does not end the job (its result says why)."""

    kind: str
    root: str
    trainings: list = field(default_factory=list)
    build: Callable[[], list] | None = None
    key: str | None = None
    title: str = "Training"
    skip: Callable[[Training], bool] | None = None
    keep_going: bool = False
    backend: str = "in-process"
    address: str | None = None
    num_cpus: int | None = None
    finish: Callable[[object], object] | None = None  # called with the JobHandle
    on_event: EventFn | None = None

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise InvalidParameter(f"backend must be one of {BACKENDS}, got {self.backend!r}")
        self.root = str(self.root)


def _trained(root: str, name: str) -> bool:
    try:
        run = Run(Path(root) / name)
        return run.status().get("status") == "done" and run.has_model()
    except DPCoreError:
        return False


def run_training(training: Training, root: str, callback: EventFn | None = None, *,
                 stop: threading.Event | None = None, on_created: Callable[[Run], None] | None = None,
                 say: Callable[[str], None] | None = None) -> dict:
    """Train one training (unless `resume` finds it trained), then its `after`: the result
    {"run", "status", "skipped", "message", "seconds": {"train", "after"}}. What every executor runs."""
    t0, name = time.time(), training.name
    if training.resume and name and _trained(root, name):
        run = Run(Path(root) / name)
    else:
        overwrite = training.overwrite or bool(training.resume and name and (Path(root) / name).exists())
        run = train_run(training.config, root, callback, stop=stop, overwrite=overwrite, on_created=on_created)
    st = run.status()
    seconds = {"train": round(time.time() - t0, 3)}
    if st.get("status") == "done" and training.after is not None:
        t1 = time.time()
        training.after(run, say or (lambda text: None))
        seconds["after"] = round(time.time() - t1, 3)
    return {"run": run.name, "status": st.get("status"), "skipped": False, "message": st.get("message"),
            "seconds": seconds}


def remote_training(item: tuple) -> dict:
    """A Ray task's body: one training; a one-line error comes back as a failed result."""
    training, root = item
    try:
        return run_training(training, root)
    except DPCoreError as exc:
        return failed(training, str(exc))


def failed(training: Training, message: str) -> dict:
    return {"run": training.name, "status": "failed", "skipped": False, "message": message, "error": message}
