"""The class queue's test executor, shared by tests/jobs and tests/app: it runs nothing, a test
says when each job ends (`end`, or a result put in `results`)."""
from __future__ import annotations


class ManualExecutor:
    name = "manual"

    def __init__(self, slots: int = 4, alive: bool = True):
        self._slots, self._alive = slots, alive
        self.started, self.specs, self.results, self.cancelled = [], [], {}, []

    def slots(self) -> int:
        return self._slots

    def submit(self, spec):
        self.started.append(spec["job"])
        self.specs.append(spec)
        return spec["job"]

    def poll(self, handle):
        return ("ok", self.results.pop(handle)) if handle in self.results else None

    def end(self, job_id, status="done", runs=()):
        self.results[job_id] = {"status": status, "runs": list(runs), "error": None}

    def cancel(self, handle):
        self.cancelled.append(handle)

    def reattach(self, job_id):
        return None

    def alive(self) -> bool:
        return self._alive
