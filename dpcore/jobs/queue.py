"""One training queue for a class: every training, Story pair and sweep is a job (its RunConfigs,
its owner, its state) persisted as a JSON file under BASE/_queue/.

Two roles over the same folder. The web server holds a *client* (`Queue(base)`, no executor): it
writes new job files and cancel requests and reads every job's state from disk on each look, so
a page shows what is true now. The *training service* (`Queue(base, executor)`, run by
`queue_service.serve` in a process of its own, never the web server's) is the only one that
changes a job's state: it starts queued jobs on the executor (Ray) as slots free up, polls them,
applies cancel requests and writes a heartbeat the pages read. Ray dying takes the service down,
never a page; the restarted service queues the jobs it lost once more.

Limits: `per_owner` jobs running per owner (default 1) and `slots` in all (default: the CPUs the
executor reports, or $DPCORE_QUEUE_SLOTS). Order: first come, first served, except that a queued
job whose owner is at their limit lets the next owner's job go first.

Restart: a new service over the same folder re-reads every job. Queued jobs stay queued; a job that
was running is re-attached when the executor still runs it, finished when its worker left a
result file, else queued again (once: `MAX_ATTEMPTS`), then marked "interrupted" with its partial
runs named. Files are data: each is checked against an allow-list on load and refused when it fails.
"""
from __future__ import annotations

import json
import os
import secrets
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Protocol

from dpcore.files import RunFileError, read_json
from dpcore.io import atomic_write_json
from dpcore.jobs.queue_dispatch import Dispatching
from dpcore.jobs.queue_files import (
    KINDS,
    MAX_CONFIGS,
    QUEUE_DIR,
    QueuedJob,
    QueueError,
    cancel_path,
    check_owner,
    check_record,
    service_status,
)
from dpcore.jobs.queue_worker import progress_path
from dpcore.runs.store import RunConfig

MAX_WAITING = 5  # queued jobs one owner may have waiting
class Executor(Protocol):
    """Where jobs run: `submit(spec) -> handle`, `poll(handle) -> None | ("ok", result) | ("error",
    why)`, `cancel(handle)`, `slots()`, `reattach(job_id) -> handle | None` (after a restart)."""

    def submit(self, spec: dict) -> Any: ...
    def poll(self, handle: Any) -> tuple[str, Any] | None: ...
    def cancel(self, handle: Any) -> None: ...
    def slots(self) -> int: ...
    def reattach(self, job_id: str) -> Any: ...


def default_slots(executor: Executor) -> int:
    env = os.environ.get("DPCORE_QUEUE_SLOTS", "").strip()
    if env:
        if not env.isdigit() or int(env) < 1:
            raise QueueError(f"DPCORE_QUEUE_SLOTS must be a whole number ≥ 1, got {env[:20]!r}")
        return int(env)
    return executor.slots()


class Queue(Dispatching):
    """The queue over BASE/_queue/: `submit`, `cancel`, `jobs`, `position`, `seconds_left` for the
    pages; with an executor also `tick()`, one round of applying requests, polling and starting (the
    training service calls it, tests too)."""

    def __init__(self, base, executor: Executor | None = None, *, per_owner: int = 1,
                 slots: int | None = None, max_waiting: int = MAX_WAITING):
        self.base = Path(base)
        self.dir = self.base / QUEUE_DIR
        self.dir.mkdir(parents=True, exist_ok=True)
        self.executor, self.per_owner, self.max_waiting = executor, per_owner, max_waiting
        self._slots = slots if slots is not None else (default_slots(executor) if executor is not None else None)
        if self.per_owner < 1 or (self._slots is not None and self._slots < 1):
            raise QueueError("the queue needs at least one slot per owner and in all")
        self._lock = threading.RLock()
        self._handles: dict[str, Any] = {}
        self._cancel_at: dict[str, float] = {}
        self.refused: list[str] = []  # one line per job file refused on load
        self._refused_sigs: dict[str, tuple] = {}
        self._jobs: dict[str, QueuedJob] = {}
        self._sigs: dict[str, tuple] = {}
        self._thread: threading.Thread | None = None
        self._closing = threading.Event()
        self._last_beat = 0.0
        self._refresh()
        if executor is None or self._dispatched_elsewhere():
            return  # a client, or a live service runs these jobs: this queue only reads and submits
        for job in list(self._jobs.values()):
            if job.state == "running":
                self._recover(job)

    @property
    def dispatching(self) -> bool:
        """True for the training service's queue (it owns the jobs' states), False for a page's."""
        return self.executor is not None

    @property
    def slots(self) -> int:
        """Jobs at once in all: the service's own number, read from its heartbeat by a client."""
        if self._slots is not None:
            return self._slots
        beat = service_status(self.base)
        return beat.slots if beat.slots else 1

    # ------------------------------------------------------------------ persistence
    def _refresh(self) -> None:
        """Read the job files that are new or changed since the last look (a client re-reads every
        change; the service only picks up new submissions, its own state being the truth)."""
        seen = set()
        for p in sorted(self.dir.glob("j*.json")):
            if p.name.count(".") != 1 or p.is_symlink():
                continue  # progress/result files are read per job
            jid = p.name[:-5]
            seen.add(jid)
            try:
                st = p.stat()
            except OSError:
                continue
            sig = (st.st_mtime_ns, st.st_size)
            if self._sigs.get(jid) == sig or self._refused_sigs.get(jid) == sig:
                continue
            if self.dispatching and jid in self._jobs:
                self._sigs[jid] = sig
                continue
            try:
                job = check_record(read_json(p, base=self.dir), self.base, str(p))
            except RunFileError as exc:
                self._refused_sigs[jid] = sig
                self.refused.append(str(exc))
                self._jobs.pop(jid, None)
                continue
            self._jobs[job.id], self._sigs[jid] = job, sig
        if not self.dispatching:
            for jid in set(self._jobs) - seen:  # a job file removed by hand
                self._jobs.pop(jid, None)
                self._sigs.pop(jid, None)

    def _dispatched_elsewhere(self) -> bool:
        """True when another process holds the dispatcher's lock (its running jobs are alive)."""
        import fcntl

        with open(self.dir / ".dispatcher.lock", "a") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return True
            fcntl.flock(fh, fcntl.LOCK_UN)
        return False

    def _read(self, path: Path) -> dict | None:
        try:
            d = read_json(path, base=self.dir)
        except RunFileError:
            return None
        return d if isinstance(d, dict) else None

    def _save(self, job: QueuedJob) -> None:
        atomic_write_json(self.dir / f"{job.id}.json", asdict(job))
        try:
            st = (self.dir / f"{job.id}.json").stat()
            self._sigs[job.id] = (st.st_mtime_ns, st.st_size)
        except OSError:
            pass

    # ------------------------------------------------------------------ requests
    def submit(self, configs: list, root, owner: str, *, kind: str = "training", title: str = "Training",
               steps: int | None = None) -> QueuedJob:
        """Queue `configs` (RunConfigs or dicts) to train under `root` (inside BASE) for `owner`."""
        check_owner(owner)
        if kind not in KINDS:
            raise QueueError(f"job kind must be one of {KINDS}, got {kind!r}")
        items = configs if isinstance(configs, list) else [configs]
        if not 1 <= len(items) <= MAX_CONFIGS:
            raise QueueError(f"a job holds 1 to {MAX_CONFIGS} trainings, got {len(items)}")
        dicts = [(c if isinstance(c, RunConfig) else RunConfig.from_dict(c)).to_dict() for c in items]
        dicts = json.loads(json.dumps(dicts, default=str))
        full = Path(root).resolve()
        if not full.is_relative_to(self.base.resolve()) or full == self.base.resolve():
            raise QueueError("a job's runs folder must be a workspace inside the runs root")
        title = " ".join(str(title).split())[:120].replace("<", "").replace(">", "")
        with self._lock:
            self._refresh()
            waiting = [j for j in self._jobs.values() if j.owner == owner and j.state == "queued"]
            if len(waiting) >= self.max_waiting:
                raise QueueError(f"you have {len(waiting)} jobs waiting already; cancel one or wait")
            job = QueuedJob(id=f"j{time.time_ns() // 1_000_000:013d}-{secrets.token_hex(4)}", owner=owner,
                            kind=kind, title=title or "Training", root=str(full.relative_to(self.base.resolve())),
                            configs=dicts, steps=steps if isinstance(steps, int) and steps > 0 else None)
            full.mkdir(parents=True, exist_ok=True)
            self._save(job)
            self._jobs[job.id] = job
        return job

    def cancel(self, job_id: str, by: str, *, lecturer: bool = False) -> QueuedJob:
        """The owner cancels their job, a lecturer any job: a queued one never starts, a running one
        stops after its current step (its run saved "stopped"). A page writes a request that the
        training service applies within a tick (`cancelling`); the service applies it at once."""
        with self._lock:
            self._refresh()
            job = self._jobs.get(job_id)
            if job is None or (job.owner != by and not lecturer):
                raise QueueError("no such job of yours")  # another's job reads as absent
            if job.ended:
                return job
            check_owner(by)
            if not self.dispatching:
                atomic_write_json(cancel_path(self.dir, job.id), {"by": by})
                return job
            self._apply_cancel(job, by)
            return job

    def cancelling(self, job_id: str) -> bool:
        """A cancel was asked for and the service has not applied it yet."""
        return cancel_path(self.dir, job_id).exists()

    # ------------------------------------------------------------------ what pages read
    def jobs(self, owner: str | None = None) -> list[QueuedJob]:
        """Every job (a lecturer), or one owner's, oldest first, as the files say now."""
        with self._lock:
            self._refresh()
            return sorted((j for j in self._jobs.values() if owner is None or j.owner == owner),
                          key=lambda j: (j.created, j.id))

    def get(self, job_id: str) -> QueuedJob | None:
        with self._lock:
            self._refresh()
            return self._jobs.get(job_id)

    def waiting(self) -> list[QueuedJob]:
        """The queued jobs in the order the dispatcher will consider them."""
        return [j for j in self.jobs() if j.state == "queued"]

    def position(self, job_id: str) -> tuple[int, int] | None:
        """(1-based place, jobs waiting) for a queued job; None otherwise."""
        order = [j.id for j in self.waiting()]
        return (order.index(job_id) + 1, len(order)) if job_id in order else None

    def progress(self, job_id: str) -> dict:
        """The running job's worker progress: index, of, run, step, total_steps, started."""
        return self._read(progress_path(self.dir, job_id)) or {}

    def fraction(self, job: QueuedJob) -> float:
        if job.state == "done":
            return 1.0
        p = self.progress(job.id)
        total = p.get("total_steps")
        if job.state != "running" or not isinstance(total, int) or total <= 0:
            return 0.0
        within = min(1.0, int(p.get("step", 0)) / total)
        return min(0.99, (int(p.get("index", 0)) + within) / max(1, len(job.configs)))

    def estimate(self, job: QueuedJob) -> float | None:
        """Seconds a job takes, before it starts: the finished jobs of the same model (seconds per
        planned step when both know their steps, else their mean duration), else None."""
        done = [(j.seconds, j.steps, len(j.configs)) for j in self._jobs.values()
                if j.state == "done" and j.seconds and j.model == job.model]
        per_step = [secs / steps for secs, steps, _ in done if secs and steps]
        if job.steps and per_step:
            return job.steps * sum(per_step) / len(per_step) * len(job.configs)
        if done:
            return sum(float(secs or 0) / n for secs, _, n in done) / len(done) * len(job.configs)
        return None

    def seconds_left(self, job_id: str) -> float | None:
        """Running: from its own pace (elapsed / fraction done). Queued: the jobs ahead of it and its
        own estimate, shared over the slots. None while there is nothing to go on."""
        job = self._jobs.get(job_id)
        if job is None or job.ended:
            return None if job is None or job.state != "done" else 0.0
        if job.state == "running":
            f, p = self.fraction(job), self.progress(job.id)
            started = p.get("started") if isinstance(p.get("started"), (int, float)) else job.started
            if f < 0.02 or started is None:
                return self.estimate(job)
            return (time.time() - started) * (1 - f) / f
        ahead = self.waiting()
        ahead = ahead[: [j.id for j in ahead].index(job_id)]
        costs = [self.estimate(j) for j in ahead + [job]]
        running = [self.seconds_left(j.id) for j in self._jobs.values() if j.state == "running"]
        known = [c for c in costs + running if c is not None]
        if len(known) < len(costs) + len(running):
            return None
        mine = known[len(costs) - 1]  # this job's own estimate, after the ones ahead of it
        return (sum(known) - mine) / self.slots + mine

    def close(self) -> None:
        self._closing.set()
        if self._thread is not None:
            self._thread.join(5)
        if getattr(self, "_lockfile", None) is not None:
            self._lockfile.close()
            self._lockfile = None  # type: ignore[assignment]
