"""What only the training service does with the queue (`Queue` with an executor): pick up the pages'
requests, poll the running jobs, start queued ones, recover after a restart, beat.

Why apart from queue.py: the pages' side (submit, ask to cancel, read) is all the web server ever
runs; this half belongs to the one process that hosts Ray (queue_service.py).
"""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpcore.jobs.queue_files import (
    MAX_ATTEMPTS,
    OWNER,
    RUN_NAME,
    QueuedJob,
    QueueError,
    resolve_root,
    write_heartbeat,
)
from dpcore.jobs.queue_worker import progress_path, result_path, stop_path
from dpcore.runs.folders import interrupted_partials

CANCEL_GRACE_S = 30.0  # a running job that ignores its stop file this long is cancelled on Ray


class Dispatching:
    """The dispatcher's half of `dpcore.jobs.queue.Queue` (a mixin: the state is the queue's)."""

    base: Path
    dir: Path
    executor: Any
    per_owner: int
    _jobs: dict[str, QueuedJob]
    _handles: dict[str, Any]
    _cancel_at: dict[str, float]
    _lock: Any
    _thread: threading.Thread | None
    _closing: threading.Event
    _last_beat: float

    if TYPE_CHECKING:
        @property
        def slots(self) -> int: ...
        def _refresh(self) -> None: ...
        def _read(self, path: Path) -> dict | None: ...
        def _save(self, job: QueuedJob) -> None: ...
        def waiting(self) -> list[QueuedJob]: ...

    def _recover(self, job: QueuedJob) -> None:
        """A job that was running when the last service stopped: re-attach, read its result, or
        queue it again (once), else mark it interrupted with its partial runs named."""
        assert self.executor is not None
        handle = self.executor.reattach(job.id)
        if handle is not None:
            self._handles[job.id] = handle
            return
        result = self._read(result_path(self.dir, job.id))
        if result is not None:
            self._finish(job, result)
            return
        self._lost(job, "the training service stopped while this job ran")

    def _lost(self, job: QueuedJob, why: str) -> None:
        """The executor lost a running job (not the job's own error): its partial runs are named,
        then it waits at its old place in the queue again, or ends "interrupted" after MAX_ATTEMPTS."""
        progress = self._read(progress_path(self.dir, job.id)) or {}
        names = {r for r in progress.get("runs", []) if isinstance(r, str) and RUN_NAME.fullmatch(r)}
        root = resolve_root(self.base, job.root)
        job.partials = sorted({*job.partials, *(p.name[1:] for p in interrupted_partials(root)
                                                if p.name[1:].split(".partial-", 1)[0] in names)})
        job.runs = sorted({*job.runs, *(n for n in names if (root / n).is_dir())})
        self._handles.pop(job.id, None)
        for p in (progress_path(self.dir, job.id), result_path(self.dir, job.id)):
            p.unlink(missing_ok=True)
        if job.cancelled_by is None and max(job.attempts, 1) < MAX_ATTEMPTS:
            job.state, job.started, job.attempts = "queued", None, max(job.attempts, 1)
            job.error = f"{why}; queued again"
        else:
            job.state, job.finished = "interrupted", time.time()
            job.error = f"{why}; its unfinished run is kept as interrupted"
        self._save(job)

    def _apply_cancel(self, job: QueuedJob, by: str) -> None:
        job.cancelled_by = by
        if job.state == "queued":
            job.state, job.finished = "cancelled", time.time()
        else:
            stop_path(self.dir, job.id).touch()
            self._cancel_at.setdefault(job.id, time.time())
        self._save(job)

    def _apply_requests(self) -> None:
        """The pages' cancel requests (`<id>.cancel`, {"by": name}; the page checked who may)."""
        for p in self.dir.glob("j*.cancel"):
            job = self._jobs.get(p.name[: -len(".cancel")])
            req = self._read(p) or {}
            by = req.get("by")
            p.unlink(missing_ok=True)
            if job is None or job.ended or not isinstance(by, str) or not OWNER.fullmatch(by):
                continue
            self._apply_cancel(job, by)

    # ------------------------------------------------------------------ the dispatcher
    def tick(self) -> None:
        """Pick up new jobs and cancel requests, poll running jobs, then start queued ones while
        slots are free (the training service only)."""
        if self.executor is None:
            raise QueueError("only the training service dispatches jobs")
        with self._lock:
            self._refresh()
            self._apply_requests()
            for job in [j for j in self._jobs.values() if j.state == "running"]:
                handle = self._handles.get(job.id)
                if handle is None:
                    continue
                got = self.executor.poll(handle)
                if got is None:
                    t = self._cancel_at.get(job.id)
                    if t is not None and time.time() - t > CANCEL_GRACE_S:
                        self.executor.cancel(handle)
                    continue
                kind, value = got
                if kind == "lost":  # the executor lost the worker, not the job's own error
                    self._lost(job, str(value))
                    continue
                self._finish(job, value if kind == "ok" else {"status": "failed", "error": str(value)})
            running = [j for j in self._jobs.values() if j.state == "running"]
            for job in self.waiting():
                if len(running) >= self.slots:
                    break
                if sum(j.owner == job.owner for j in running) >= self.per_owner:
                    continue
                self._start(job)
                running.append(job)

    def _start(self, job: QueuedJob) -> None:
        assert self.executor is not None  # tick() checked it
        root = resolve_root(self.base, job.root)
        spec = {"job": job.id, "kind": job.kind, "root": str(root), "configs": job.configs,
                "control": str(self.dir.resolve())}
        job.state, job.started, job.attempts = "running", time.time(), job.attempts + 1
        self._save(job)  # running before it is submitted: a crash in between reads as lost
        try:
            self._handles[job.id] = self.executor.submit(spec)
        except Exception as exc:  # noqa: BLE001 - the executor refused: the job failed, the queue goes on
            self._finish(job, {"status": "failed", "error": f"could not start: {' '.join(str(exc).split())[:160]}"})

    def _finish(self, job: QueuedJob, result: dict) -> None:
        status = str(result["status"]) if result.get("status") in ("done", "failed", "stopped") else "failed"
        if job.cancelled_by is not None and status in ("stopped", "done", "failed"):
            status = "cancelled" if status != "done" else "done"
        job.state, job.finished = status, time.time()
        job.error = str(result["error"])[:300] if result.get("error") else None
        runs = result["runs"] if isinstance(result.get("runs"), list) else []
        job.runs = [r for r in runs if isinstance(r, str) and RUN_NAME.fullmatch(r)]
        job.seconds = round(job.finished - (job.started or job.finished), 3)
        self._handles.pop(job.id, None)
        self._cancel_at.pop(job.id, None)
        self._save(job)
        for p in (progress_path(self.dir, job.id), stop_path(self.dir, job.id), result_path(self.dir, job.id)):
            p.unlink(missing_ok=True)

    def start_dispatcher(self, every: float = 0.5) -> Dispatching:
        """Run `tick` every `every` seconds in a daemon thread of this process (it only schedules
        and polls; the trainings run in the executor's workers)."""
        if self._thread is None or not self._thread.is_alive():
            self._claim()
            self._closing.clear()

            def loop() -> None:
                while not self._closing.wait(every):
                    try:
                        self.tick()
                        self.beat()
                    except Exception:  # noqa: BLE001 - one bad round must not stop the queue
                        pass

            self._thread = threading.Thread(target=loop, name="dpcore-queue", daemon=True)
            self._thread.start()
        return self

    def _claim(self) -> None:
        """One dispatcher per queue folder: a second server process over it is refused."""
        import fcntl

        fh = open(self.dir / ".dispatcher.lock", "a")  # noqa: SIM115 - held until close()
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.close()
            raise QueueError("another training service dispatches this queue already") from None
        self._lockfile = fh

    def beat(self, every: float = 2.0, error: str | None = None) -> None:
        """The service's heartbeat (BASE/_queue/.service.json): the pages tell "running" from
        "restarting" by its age, and read the slots from it."""
        now = time.time()
        if error is None and now - self._last_beat < every:
            return
        self._last_beat = now
        write_heartbeat(self.dir, slots=self.slots, error=error,
                        executor=str(getattr(self.executor, "name", type(self.executor).__name__)))

