"""The queue's executor on Ray: one queued job = one Ray task (`num_cpus=1`), running
`queue_worker.run_queued` in a Ray worker process, never in the web server's.

The executor lives in the training service (`queue_service.serve`), a process of its own: when Ray
dies the service dies with it and is started again, and no web page goes down. Why tasks and not
detached actors: a task lives as long as the process that submitted it (Ray's ownership), so the
restarted service queues the jobs it lost once more (their partial runs stay for the Runs page's
clean-up). A job that finished before Ray died has written its result file; the restarted queue
reads it, so finished work is never lost.
Cancelling a running job is the stop file first (the run is saved "stopped"), `ray.cancel` only
when a job ignores it (e.g. stuck loading data).
"""
from __future__ import annotations

import os

from dpcore.errors import DPCoreError
from dpcore.jobs import sweep_ray
from dpcore.jobs.queue_worker import run_queued

NO_RAY = ("the training queue runs jobs on Ray, which is not installed here "
          "(pip install 'ray[default]'); class mode needs it")


class RayExecutor:
    """Submits jobs to the local Ray (started on first use with `num_cpus`, default every core) or
    to the cluster at `address` (default: $RAY_ADDRESS)."""

    name = "ray"

    def __init__(self, address: str | None = None, num_cpus: int | None = None,
                 object_store_mb: int | None = None):
        try:
            import ray
        except ImportError:
            raise DPCoreError(NO_RAY) from None
        address = address or os.environ.get("RAY_ADDRESS") or None
        # a busy class server starts its local Ray slowly: wait for the node longer than Ray's 60 s
        # (the node and its metrics agent; Ray's defaults give up after 30–60 s on a loaded machine)
        os.environ.setdefault("RAY_raylet_start_wait_time_s", "180")
        os.environ.setdefault("RAY_agent_register_timeout_ms", "180000")
        pool, why = sweep_ray.connect(address=address, num_cpus=num_cpus, object_store_mb=object_store_mb)
        if pool is None:
            raise DPCoreError((why or "Ray unreachable").replace(": ran in-process", "")
                              + " — the training queue cannot start jobs")
        self.ray = ray
        self._remote = ray.remote(sweep_ray._task)

    def slots(self) -> int:
        """CPUs the cluster reports: one job per CPU."""
        return max(1, int(self.ray.cluster_resources().get("CPU", 1)))

    def submit(self, spec: dict):
        return self._remote.options(num_cpus=1, num_gpus=0, max_retries=0).remote(run_queued, spec)

    def poll(self, ref) -> tuple[str, dict | str] | None:
        """None while it runs; ("ok", result) once it ended; ("error", one line) when the job itself
        failed or was cancelled; ("lost", one line) when Ray lost its worker or node (the queue
        runs such a job again)."""
        ready, _ = self.ray.wait([ref], num_returns=1, timeout=0)
        if not ready:
            return None
        try:
            return "ok", self.ray.get(ref)
        except Exception as exc:  # noqa: BLE001 - a lost worker or a cancelled task
            from ray import exceptions as rex

            if isinstance(exc, (rex.RayTaskError, rex.TaskCancelledError)):
                return "error", f"Ray task ended without a result ({type(exc).__name__})"
            return "lost", f"Ray lost the worker ({type(exc).__name__})"

    def alive(self) -> bool:
        """Ray answers and still has CPUs (a killed raylet's node is dropped by the GCS)."""
        return bool(self.ray.is_initialized()) and self.ray.cluster_resources().get("CPU", 0) > 0

    def shutdown(self) -> None:
        """Stop the local Ray this process started (a cluster at RAY_ADDRESS is only left)."""
        sweep_ray.shutdown()

    def cancel(self, ref) -> None:
        self.ray.cancel(ref, force=True)

    def reattach(self, job_id: str):
        """Tasks die with the process that submitted them: nothing to re-attach to."""
        return None
