"""The Ray backend of a sweep: one task per point, `num_cpus=1` each, one torch thread per task.

Why Ray and not a pool of our own: scheduling, retries of lost workers, GPUs and multi-node
clusters come with it. `connect()` starts a local Ray (all the machine's cores, or `num_cpus`)
or joins the cluster at `address`; without Ray importable or reachable it returns (None, why)
and the sweep runs in-process. Every worker must reach the runs root (on a cluster: a path on a
shared filesystem) and import dpcore (the same Python environment on every node).

Threads: a task reserves one CPU and runs torch with one thread (OMP/MKL too), so N workers on
N cores do not oversubscribe. GPUs: when the cluster has some and the point's `device` is "auto"
(or "cuda"), each task also asks for one GPU.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path

_THREAD_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


def _package_parent() -> str:
    import dpcore

    return str(Path(dpcore.__file__).resolve().parent.parent)


def connect(address: str | None = None, num_cpus: int | None = None):
    """(RayPool, None), or (None, a one-line reason) when Ray is not importable or reachable."""
    try:
        import ray
    except ImportError:
        return None, "Ray is not installed (pip install ray): ran in-process"
    try:
        if not ray.is_initialized():
            env = {**_THREAD_ENV, "PYTHONPATH": os.pathsep.join(
                p for p in (_package_parent(), os.environ.get("PYTHONPATH")) if p)}
            kwargs = {"include_dashboard": False, "log_to_driver": False, "ignore_reinit_error": True,
                          "runtime_env": {"env_vars": env}}
            if address:
                ray.init(address=address, **kwargs)
            else:
                ray.init(num_cpus=num_cpus or os.cpu_count() or 1, **kwargs)
    except Exception as exc:  # noqa: BLE001 - any failure to reach Ray means: run here
        return None, f"Ray unreachable ({type(exc).__name__}: {' '.join(str(exc).split())[:160]}): ran in-process"
    return RayPool(ray), None


def shutdown() -> None:
    """Stop the local Ray this process started (tests, benchmarks)."""
    try:
        import ray
    except ImportError:
        return
    if ray.is_initialized():
        ray.shutdown()


def _task(job: dict, root: str, scores) -> dict:
    import torch

    from dpcore.runs.sweep import run_point

    torch.set_num_threads(1)
    return run_point(job, root, tuple(scores))


class RayPool:
    """Submits a sweep's points as Ray tasks and collects their rows as they finish."""

    def __init__(self, ray):
        self.ray = ray
        self.gpus = int(ray.cluster_resources().get("GPU", 0))

    def _options(self, job: dict) -> dict:
        device = str(job.get("params", {}).get("device", "cpu"))
        gpu = 1 if self.gpus and device in ("auto", "cuda") else 0
        return {"num_cpus": 1, "num_gpus": gpu, "max_retries": 1}

    def run(self, jobs: list[dict], root: str, scores, progress, stop: threading.Event | None) -> list[dict]:
        ray = self.ray
        remote = ray.remote(_task)
        pending = {remote.options(**self._options(j)).remote(j, root, list(scores)): j for j in jobs}
        rows = []
        while pending:
            if stop is not None and stop.is_set():
                for ref in pending:
                    ray.cancel(ref, force=False)
                break
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=0.5)
            for ref in ready:
                job = pending.pop(ref)
                try:
                    row = ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - a lost worker: that point failed
                    from dpcore.runs.sweep import point_row

                    row = point_row(root, job["name"], job.get("point", {}),
                                    message=f"Ray task failed: {' '.join(str(exc).split())[:160]}")
                rows.append(row)
                progress.add(row)
        return rows
