"""Jobs: a training, an ε sweep, a grid sweep and the Story's pair are one kind of thing — a list
of trainings, each optionally followed by work on its finished run (scoring) — run one after
another in a background thread or one per Ray task, behind one handle that the pages and the CLI
poll (`progress`, `snapshot`: done, time left, status, error; `stop`).

Why one runner: the live event buffer, the stop flag, the time left and the failure rules were
written three times (a training handle, a sweep handle, the Story's job) and drifted apart.

One rule for joining (`start`): a job with a `key` whose job is still running in this process is
joined, not started again — the Story's "a second click or a new tab joins the running job", a
grid sweep started twice. A job without a key (a Train page run) always starts.

`JobHandle.state()` is the job as JSON (kind, key, status, each training's result, progress):
what a queue persists and lists. `run_training` is what an executor runs for one training; it is
a module-level function of picklable arguments, so a Ray worker runs the same code as the thread.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dpcore.errors import DPCoreError
from dpcore.jobs.job import NOTHING_TO_DO, Job, Training, failed, remote_training, run_training
from dpcore.jobs.runner import EventFn, one_line
from dpcore.jobs.sweep_ray import connect as connect_ray
from dpcore.runs.store import Run, RunConfig

__all__ = ["Job", "JobHandle", "Training", "current", "run_training", "start", "start_training", "trainings_job"]


def _where_now(run: Run) -> Run:
    """A run after training ended: its partial folder, or the folder it was moved to."""
    if run.path.is_dir():
        return run
    try:
        return Run(run.path.parent / run.target_name)
    except DPCoreError:
        return run


def _duration(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s} s" if s < 90 else f"{s // 60} min {s % 60:02d} s"


class JobHandle:
    """A job running (or run): `.progress()`, `.snapshot()`, `.status`, `.error`, `.stop()`,
    `.events(since)` (the live training's events), `.runs`, `.results`, `.summary`, `.join()`.

    `start()` runs it in a background thread; `run_here()` runs it in this thread and re-raises its
    error (the CLI, `run_sweep`). `on_progress(snapshot)` hears each finished (or skipped) training."""

    def __init__(self, job: Job, *, stop: threading.Event | None = None,
                 on_progress: Callable[[dict], None] | None = None):
        self.job, self.on_progress = job, on_progress
        self._stop = stop if stop is not None else threading.Event()
        self._lock = threading.Lock()
        self._events: list[dict] = []
        self.status: str = "pending"
        self.error: str | None = None
        # None until `_main` builds them (a job with `build`)
        self.trainings: list[Training] | None = None if job.build is not None else list(job.trainings)
        self.results: list[dict | None] = [None] * len(self.trainings or [])
        self.runs: list[Run] = []
        self.current: Run | None = None
        self.summary: Any = None  # what `job.finish` returned (a sweep's: its summary dict)
        self.backend: str = "in-process"
        self.note: str | None = None
        self.started: float = time.time()
        self.finished: float | None = None
        self._t0: float | None = None
        self._f0 = 0.0
        self._active: int | None = None
        self._stage: dict[int, tuple[str, int, str]] = {}  # index → (stage, messages, last message)
        self._raised: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name=f"dpcore-{job.kind}", daemon=True)

    # ------------------------------------------------------------------ control
    def start(self) -> JobHandle:
        self._thread.start()
        return self

    def run_here(self) -> JobHandle:
        """Run the job in this thread; its error (if any) is raised here."""
        self._main()
        if self._raised is not None:
            raise self._raised
        return self

    def stop(self) -> None:
        """Ask the job to stop after the current step; a training stopped is saved as "stopped"."""
        self._stop.set()

    @property
    def stop_requested(self) -> bool:
        return self._stop.is_set()

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread; True when it has finished."""
        if self._thread.ident is not None:
            self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def root(self) -> str:
        return self.job.root

    # ------------------------------------------------------------------ what a page reads
    def events(self, since: int = 0) -> list[dict]:
        """The training events so far (TrainingEvent dicts plus "run", the run's name)."""
        with self._lock:
            return list(self._events[since:])

    @property
    def latest(self) -> dict | None:
        with self._lock:
            return self._events[-1] if self._events else None

    @property
    def run(self) -> Run | None:
        """The run being trained, or the last one trained."""
        return self.current if self.current is not None else (self.runs[-1] if self.runs else None)

    def fraction(self) -> float:
        """Share of the job done, each training weighted by its `weight`."""
        if self.status == "done":
            return 1.0
        ts = self.trainings
        if not ts:
            return 0.0
        total = sum(t.weight for t in ts) or 1.0
        return min(0.99, sum(t.weight * self._part(i, t) for i, t in enumerate(ts)) / total)

    def _part(self, i: int, t: Training) -> float:
        if self.results[i] is not None:
            return 1.0
        stage, steps, _ = self._stage.get(i, ("waiting", 0, ""))
        if stage == "after":
            return t.train_share + (1 - t.train_share) * min(steps, t.after_steps) / (t.after_steps + 1)
        last, cur = self.latest, self.current
        if stage != "train" or cur is None or not last or last.get("run") != cur.target_name:
            return 0.0
        return t.train_share * last["step"] / max(1, last["total_steps"])

    def seconds_left(self) -> float | None:
        """From the pace since the first training started (skipped trainings cost no time)."""
        if self._t0 is None:
            return None
        f = self.fraction()
        if f - self._f0 < 0.02:
            return None
        return (time.time() - self._t0) * (1 - f) / (f - self._f0)

    def snapshot(self) -> dict:
        """Trainings done (skipped included) / total, skipped, fraction, elapsed, time left, text."""
        results = [r for r in self.results if r is not None]
        left = self.seconds_left() if self.is_alive() or self.status == "running" else None
        return {"done": len(results), "total": None if self.trainings is None else len(self.trainings),
                "skipped": sum(bool(r.get("skipped")) for r in results), "fraction": self.fraction(),
                "elapsed": round(time.time() - self.started, 2),
                "seconds_left": None if left is None else round(left, 1), "text": self.progress()[0],
                "last": results[-1] if results else None, "status": self.status}

    def progress(self) -> tuple[str, float]:
        """(text, fraction): what the job does now and about how long is left."""
        f, ts = self.fraction(), self.trainings
        count = []
        if ts is not None and len(ts) > 1 and not any(t.label for t in ts):
            done = [r for r in self.results if r is not None]
            skipped = sum(bool(r.get("skipped")) for r in done)
            count = [f"{len(done)} of {len(ts)} runs finished" + (f" ({skipped} already done)" if skipped else "")]
        if self.status not in ("pending", "running"):
            took = (self.finished or time.time()) - self.started
            end = (f"{self.job.title} ready ({took:.0f} s)" if self.status == "done"
                   else f"{self.job.title} {self.status}")
            return " · ".join([end] + count), f
        left = self.seconds_left()
        eta = "estimating the time left" if left is None else f"about {_duration(left)} left"
        if ts is None:
            return f"Loading the data · {eta}", f
        now = [] if self._active is None else [self._now_text(self._active)]
        return " · ".join(count + now + [eta]), f

    def _built(self) -> list[Training]:
        """The trainings, for code that runs after `_main` has built them."""
        assert self.trainings is not None
        return self.trainings

    def _now_text(self, i: int) -> str:
        t = self._built()[i]
        stage, _, detail = self._stage.get(i, ("train", 0, ""))
        cur = self.current.target_name if self.current is not None else None
        name = t.label or t.name or cur or "the run"
        if stage == "after":
            return f"{name}: {detail or 'scoring'}"
        last = self.latest
        phase = last.get("phase") if last and cur and last.get("run") == cur else None
        return f"{name}: training" + (f", {phase}" if phase else "")

    def state(self) -> dict:
        """The job as JSON: what a queue persists and lists."""
        ts = self.trainings or []
        snap = {k: v for k, v in self.snapshot().items() if k != "last"}
        return {"kind": self.job.kind, "key": self.job.key, "title": self.job.title, "root": self.job.root,
                "status": self.status, "error": self.error, "backend": self.backend, "note": self.note,
                "started": self.started, "finished": self.finished, "progress": snap,
                "trainings": [{"run": t.name, "label": t.label, "point": t.point, "model": t.config.model,
                               "result": r} for t, r in zip(ts, self.results)]}

    # ------------------------------------------------------------------ the job's thread
    def _main(self) -> None:
        self.status = "running"
        try:
            if self.trainings is None:
                assert self.job.build is not None  # __init__: no trainings yet only when the job builds them
                built = list(self.job.build())
                self.results = [None] * len(built)
                self.trainings = built
            todo = []
            for i, t in enumerate(self.trainings):
                if self.job.skip is not None and self.job.skip(t):
                    self._done(i, {"run": t.name, "status": "done", "skipped": True, "message": None})
                else:
                    todo.append(i)
            self._t0, self._f0 = time.time(), self.fraction()
            if not todo:
                self.note = NOTHING_TO_DO
            elif not self._on_ray(todo):
                self._here(todo)
            if self.job.finish is not None:
                self.summary = self.job.finish(self)
            self.finished, self.status = time.time(), self._final()
        except BaseException as exc:  # noqa: BLE001 - reported through .status/.error (raised by run_here())
            self.finished, self.status, self.error, self._raised = time.time(), "failed", one_line(exc), exc

    def _final(self) -> str:
        if self.error is not None and not self.job.keep_going:
            return "failed"
        if self._stop.is_set() or any(r is not None and r.get("status") == "stopped" for r in self.results):
            return "stopped"
        return "done"

    def _done(self, i: int, result: dict) -> None:
        self.results[i] = result
        if self.on_progress is not None:
            self.on_progress(self.snapshot())

    def _here(self, todo: list[int]) -> None:
        for i in todo:
            if self._stop.is_set():
                break
            result = self._train_here(i)
            self._done(i, result)
            if result.get("status") != "done" and not self.job.keep_going:
                break

    def _train_here(self, i: int) -> dict:
        t = self._built()[i]
        self._active, self._stage[i] = i, ("train", 0, "")

        def callback(ev) -> bool:
            with self._lock:
                self._events.append({**ev.to_dict(), "run": self.current.target_name if self.current else None})
            if self.job.on_event is not None and self.job.on_event(ev) is False:
                self._stop.set()
            return not self._stop.is_set()

        def created(run: Run) -> None:
            self.current = run

        def say(text: str) -> None:
            _, steps, _ = self._stage[i]
            self._stage[i] = ("after", steps + 1, text)

        try:
            result = run_training(t, self.job.root, callback, stop=self._stop, on_created=created, say=say)
            self.runs.append(Run(Path(self.job.root) / result["run"]))
        except BaseException as exc:
            if self.current is not None:
                self.runs.append(_where_now(self.current))
            if not (self.job.keep_going and isinstance(exc, DPCoreError)):
                self.error = one_line(exc)
                raise
            result = failed(t, str(exc))
        finally:
            self.current, self._active = None, None
        return result

    def _on_ray(self, todo: list[int]) -> bool:
        """Run `todo` one per Ray task; False (and a note) when Ray is not asked for or not reachable."""
        if self.job.backend not in ("auto", "ray"):
            return False
        pool, self.note = connect_ray(address=self.job.address, num_cpus=self.job.num_cpus)
        if pool is None:
            return False
        self.backend = "ray"

        def done(k: int, result: dict | None, error: str | None) -> None:
            t = self._built()[todo[k]]
            if error is not None:
                result = failed(t, error)
            assert result is not None  # RayPool.run: a task without a result comes with its error
            try:
                self.runs.append(Run(Path(self.job.root) / str(result["run"])))
            except DPCoreError:  # a point that made no folder (refused, or its worker lost)
                pass
            self._done(todo[k], result)

        items = [(self._built()[i], self.job.root) for i in todo]
        pool.run(remote_training, items, done, self._stop,
                 device=lambda item: item[0].config.params.get("device", "cpu"))
        return True


# ----------------------------------------------------------------------------- starting jobs
_LOCK = threading.Lock()
_BY_KEY: dict[str, JobHandle] = {}


def start(job: Job, *, stop: threading.Event | None = None,
          on_progress: Callable[[dict], None] | None = None) -> JobHandle:
    """Start `job` in the background — or, when a job with its key is running in this process,
    return that one (a second click or a new tab joins it)."""
    with _LOCK:
        running = _BY_KEY.get(job.key) if job.key is not None else None
        if running is not None and running.is_alive():
            return running
        handle = JobHandle(job, stop=stop, on_progress=on_progress).start()
        if job.key is not None:
            _BY_KEY[job.key] = handle
        return handle


def current(key: str) -> JobHandle | None:
    """The latest job started with `key` in this process (running or finished), if any."""
    return _BY_KEY.get(key)


def trainings_job(run_config: RunConfig | dict | list, root, on_event: EventFn | None = None, *,
                  overwrite: bool = False, kind: str = "training", title: str = "Training") -> Job:
    """One config (or a list, trained one after another; the first that fails or stops ends it)."""
    items = run_config if isinstance(run_config, list) else [run_config]
    configs = [c if isinstance(c, RunConfig) else RunConfig.from_dict(c) for c in items]
    return Job(kind=kind, root=str(root), trainings=[Training(c, overwrite=overwrite) for c in configs],
               title=title, on_event=on_event)


def start_training(run_config: RunConfig | dict | list, root, on_event: EventFn | None = None, *,
                   overwrite: bool = False) -> JobHandle:
    """Train one config (or a list, one after another) in a background job; returns its handle."""
    return start(trainings_job(run_config, root, on_event, overwrite=overwrite))
