"""The Ray backend of a job: one task per training, `num_cpus=1` each, one torch thread per task.

Why Ray and not a pool of our own: scheduling, retries of lost workers, GPUs and multi-node
clusters come with it. `connect()` starts a local Ray (all the machine's cores, or `num_cpus`)
or joins the cluster at `address`; without Ray importable or reachable it returns (None, why)
and the job runs in-process. Every worker must reach the runs root (on a cluster: a path on a
shared filesystem) and import dpcore (the same Python environment on every node).

Threads: a task reserves one CPU and runs torch with one thread (OMP/MKL too), so N workers on
N cores do not oversubscribe. GPUs: when the cluster has some and a training's `device` is "auto"
(or "cuda"), each task also asks for one GPU.
"""
from __future__ import annotations

import os
import threading
import warnings
from pathlib import Path
from typing import Any

_THREAD_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


def _package_parent() -> str:
    import dpcore

    return str(Path(dpcore.__file__).resolve().parent.parent)


OBJECT_STORE_MB = 256  # a job's arguments and results are small dicts: Ray's default (30 % of RAM) is not needed


def connect(address: str | None = None, num_cpus: int | None = None, object_store_mb: int | None = None):
    """(RayPool, None), or (None, a one-line reason) when Ray is not importable or reachable.

    Without an address a new local Ray starts on 127.0.0.1 (`address="local"`): a Ray address file
    left in /tmp by an earlier, dead cluster is ignored instead of being joined (with `num_cpus`
    Ray would refuse the join: "num_cpus and num_gpus must not be provided")."""
    try:
        import ray
    except ImportError:
        return None, "Ray is not installed (pip install ray): ran in-process"
    try:
        if not ray.is_initialized():
            env = {**_THREAD_ENV, "PYTHONPATH": os.pathsep.join(
                p for p in (_package_parent(), os.environ.get("PYTHONPATH")) if p)}
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                      "ignore_reinit_error": True, "runtime_env": {"env_vars": env}}
            if address:
                kwargs["address"] = address
            else:
                mb = object_store_mb or OBJECT_STORE_MB
                kwargs |= {"address": "local", "num_cpus": num_cpus or os.cpu_count() or 1,
                           "_node_ip_address": "127.0.0.1", "object_store_memory": mb * 1024 * 1024}
            with warnings.catch_warnings():
                # Ray starts its head's processes with subprocess.Popen: fork, a signal mask and a
                # parent-death signal (its preexec_fn, the reason Python runs the fork hooks), then
                # exec. The child touches nothing of JAX's (an AIM fit in this process starts its
                # threads), so JAX's "will likely lead to a deadlock" is for a fork that goes on
                warnings.filterwarnings("ignore", r"os\.fork\(\) was called", RuntimeWarning)
                ray.init(**kwargs)
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


def _task(fn, item):
    import torch

    torch.set_num_threads(1)
    return fn(item)


class RayPool:
    """Runs `fn(item)` for each item as a Ray task and hands each result back as it finishes.

    Why `fn` is given: the pool knows nothing of what a task does (a job's training, a sweep's
    point), so the job runner depends on it and not the other way round."""

    def __init__(self, ray):
        self.ray = ray
        self.gpus = int(ray.cluster_resources().get("GPU", 0))

    def _options(self, device: str) -> dict:
        gpu = 1 if self.gpus and device in ("auto", "cuda") else 0
        return {"num_cpus": 1, "num_gpus": gpu, "max_retries": 1}

    def run(self, fn, items: list, on_done, stop: threading.Event | None, device=lambda item: "cpu") -> None:
        """`on_done(index, result, error)` per item, in the order they finish; `error` is the
        one-line reason a task was lost (its result None). `stop` cancels the tasks not done."""
        ray = self.ray
        remote = ray.remote(_task)
        pending = {remote.options(**self._options(str(device(it)))).remote(fn, it): i for i, it in enumerate(items)}
        while pending:
            if stop is not None and stop.is_set():
                for ref in pending:
                    ray.cancel(ref, force=False)
                break
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=0.5)
            for ref in ready:
                i = pending.pop(ref)
                try:
                    on_done(i, ray.get(ref), None)
                except Exception as exc:  # noqa: BLE001 - a lost worker: that item failed
                    on_done(i, None, f"Ray task failed: {' '.join(str(exc).split())[:160]}")
