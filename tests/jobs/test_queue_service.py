"""The class's training service and its supervisor: the service dispatches, beats and leaves when
its Ray stops answering; the supervisor starts it again whenever it exits and stops both children
when the web server ends. (The whole set-up with real browsers and a Ray kill is
bench/class_load.py --browsers; tests/jobs/test_queue.py covers the queue itself.)"""
from __future__ import annotations

import sys
import threading
import time

from queue_kit import ManualExecutor

from dpcore.jobs.class_server import supervise
from dpcore.jobs.queue import Queue
from dpcore.jobs.queue_files import service_status
from dpcore.jobs.queue_service import EXIT_RAY_LOST, serve

CFG = {"model": "dp-vae", "params": {"epochs": 1}, "data": {"dataset": "digits"}}


def Executor(alive=True):
    return ManualExecutor(slots=2, alive=alive)


def test_the_service_dispatches_what_a_page_submits_and_beats(tmp_path):
    ex, stop = Executor(), threading.Event()
    t = threading.Thread(target=lambda: serve(tmp_path, executor=ex, stop=stop, every=0.05), daemon=True)
    t.start()
    try:
        page = Queue(tmp_path)
        job = page.submit([CFG], tmp_path / "workspaces" / "alice", "alice")
        end = time.time() + 10
        while not ex.started and time.time() < end:
            time.sleep(0.05)
        assert ex.started == [job.id] and ex.specs[0]["kind"] == "training"
        assert service_status(tmp_path).up and service_status(tmp_path).slots == 2
        ex.results[job.id] = {"status": "done", "runs": ["r1"], "error": None}
        while page.get(job.id).state != "done" and time.time() < end:
            time.sleep(0.05)
        assert page.get(job.id).runs == ["r1"]
    finally:
        stop.set()
        t.join(5)


def test_the_service_leaves_when_ray_stops_answering_and_says_why_when_it_cannot_start(tmp_path):
    assert serve(tmp_path, executor=Executor(alive=False), every=0.01, health_every=0.02) == EXIT_RAY_LOST

    class Refused:
        def __init__(self, *a, **k):
            from dpcore.errors import DPCoreError

            raise DPCoreError("Ray unreachable (test)")

    import dpcore.jobs.queue_ray as qr

    real, qr.RayExecutor = qr.RayExecutor, Refused
    try:
        assert serve(tmp_path / "other") == 2
    finally:
        qr.RayExecutor = real
    s = service_status(tmp_path / "other")
    assert not s.up and s.error == "Ray unreachable (test)"


def test_the_supervisor_restarts_a_dying_service_and_stops_with_the_web_server(tmp_path):
    starts = tmp_path / "starts"
    service = [sys.executable, "-c", f"open({str(starts)!r}, 'a').write('x'); raise SystemExit(3)"]
    web = [sys.executable, "-c", "import time; time.sleep(5)"]
    t0 = time.time()
    code = supervise(tmp_path / "runs", class_file=tmp_path / "class.json", address="127.0.0.1", port=1,
                     app=tmp_path / "app.py", service=service, web=web, poll=0.05)
    assert code == 0 and time.time() - t0 < 20
    assert len(starts.read_text()) >= 3  # started, then again after 1 s and after 2 s more
    assert (tmp_path / "runs" / "_queue" / "service.log").exists()


def test_a_local_ray_is_started_fresh_on_loopback_never_joined_from_a_stale_address_file(monkeypatch):
    """A Ray address file left in /tmp by a dead cluster made every job fail ("num_cpus and num_gpus
    must not be provided"): without an address the service starts its own Ray, `address="local"`."""
    import ray

    from dpcore.jobs import sweep_ray

    calls = []
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", lambda **kw: calls.append(kw))
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"CPU": 2})
    pool, why = sweep_ray.connect(num_cpus=2)
    assert why is None and calls[0]["address"] == "local" and calls[0]["_node_ip_address"] == "127.0.0.1"
    assert calls[0]["object_store_memory"] == sweep_ray.OBJECT_STORE_MB * 1024 * 1024
    sweep_ray.connect(address="10.0.0.1:6379")  # a cluster the user names is joined as named
    assert calls[1]["address"] == "10.0.0.1:6379" and "num_cpus" not in calls[1]


def test_starting_a_local_ray_after_an_aim_fit_gives_no_fork_warning(monkeypatch):
    """JAX (an AIM fit in the same process) warns at every fork that it "will likely lead to a
    deadlock"; Ray's head starts with subprocess.Popen (fork, a preexec_fn that sets signals, exec),
    to which the warning does not apply. Here `ray.init` starts a real process the same way."""
    import subprocess
    import warnings

    import jax.numpy as jnp
    import ray

    from dpcore.jobs import sweep_ray

    float(jnp.ones(3).sum())  # JAX's threads are running, as after a fit
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    def popen_as_ray(**kw):  # a preexec_fn makes Python run the fork hooks, as Ray's does
        subprocess.run(["true"], check=True, preexec_fn=lambda: None)

    monkeypatch.setattr(ray, "init", popen_as_ray)
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"CPU": 2})
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        popen_as_ray()  # the same start outside connect: JAX does warn
        assert any("os.fork()" in str(w.message) for w in seen), "JAX no longer warns: drop the filter"
        seen.clear()
        _, why = sweep_ray.connect(num_cpus=2)
    assert why is None and not [w for w in seen if "os.fork()" in str(w.message)]
