"""The class's training service: the one process that dispatches the queue under BASE/_queue and
hosts its Ray driver (`python -m dpcore class queue-service --runs BASE`, started and restarted by
`python -m dpcore class serve`, which `make run CLASS=…` runs).

Why a process of its own: a Ray driver exits when its Ray goes away ("Failed to connect to GCS
within 60 seconds … The program will terminate"). Inside the web server that took every page and
every session down; here it takes only this service, which the supervisor starts again, and the
queue's files carry every job across (lost jobs are queued again once, finished ones keep their
result). The web server never imports Ray in class mode: it writes job files and reads them.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

from dpcore.errors import DPCoreError
from dpcore.jobs.queue import Queue
from dpcore.jobs.queue_files import QUEUE_DIR, write_heartbeat

EXIT_RAY_LOST = 3  # the service's Ray stopped answering: the supervisor starts a new one


def ray_alive(executor, timeout: float = 10.0) -> bool:
    """Whether the executor's Ray still answers (a local raylet that was killed does not)."""
    check = getattr(executor, "alive", None)
    if check is None:
        return True
    box: list[bool] = []
    t = threading.Thread(target=lambda: box.append(bool(check())), daemon=True)
    t.start()
    t.join(timeout)
    return bool(box and box[0])


def serve(base, *, address: str | None = None, num_cpus: int | None = None, every: float = 0.5,
          executor=None, stop: threading.Event | None = None, health_every: float = 5.0) -> int:
    """Dispatch the queue under `base` until SIGTERM/SIGINT (or `stop`): 0 on a clean stop, 2 when
    it cannot start (its one line is in the heartbeat for the pages), EXIT_RAY_LOST when Ray died."""
    base = Path(base)
    qdir = base / QUEUE_DIR
    qdir.mkdir(parents=True, exist_ok=True)
    stop = stop or threading.Event()
    previous: dict = {}
    try:
        if executor is None:
            from dpcore.jobs.queue_ray import RayExecutor

            executor = RayExecutor(address=address, num_cpus=num_cpus)
        q = Queue(base, executor)
        q._claim()
        if threading.current_thread() is threading.main_thread():  # after Ray's start: it sets its own
            for sig in (signal.SIGTERM, signal.SIGINT):
                previous[sig] = signal.signal(sig, lambda *_: stop.set())
    except DPCoreError as exc:
        write_heartbeat(qdir, slots=None, error=str(exc))
        print(f"training service: {exc}", file=sys.stderr, flush=True)
        return 2
    print(f"training service: dispatching {qdir} on {getattr(executor, 'name', 'an executor')} "
          f"with {q.slots} slots (pid {os.getpid()})", flush=True)
    code, last_health = 0, time.time()
    try:
        while not stop.wait(every):
            try:
                q.tick()
            except Exception as exc:  # noqa: BLE001 - one bad round must not stop the queue
                print(f"training service: a round failed ({type(exc).__name__}: {exc})", file=sys.stderr, flush=True)
            if time.time() - last_health >= health_every:
                last_health = time.time()
                if not ray_alive(executor):
                    print("training service: Ray stopped answering; exiting so that a new one starts",
                          file=sys.stderr, flush=True)
                    code = EXIT_RAY_LOST
                    break
            q.beat()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        q.close()
        if code == 0:
            shutdown = getattr(executor, "shutdown", None)
            if shutdown is not None:
                shutdown()
    return code
