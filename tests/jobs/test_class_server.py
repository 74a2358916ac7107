"""Class mode as it is documented to start (`python -m dpcore class serve`, what `make run CLASS=…`
runs): a real web server, a real training service with its local Ray; a job submitted as a page
submits it; `kill -9` of the Ray head while it runs. The web server must answer throughout (it
used to die with Ray), the service must come back, and the job must end done."""
from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
JOB = {"model": "dp-vae", "params": {"latent_dim": 4, "hidden": 16, "epochs": 60, "batch_size": 100,
                                     "epsilon": 2.0}, "data": {"dataset": "digits", "split_seed": 0}}


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/_stcore/health", timeout=5) as r:
            return r.read().strip() == b"ok"
    except OSError:
        return False


def _ray_heads(root: int) -> list[int]:
    """This class's Ray head (its GCS server, below the supervisor), not another Ray on the machine:
    the load benchmark's own lookup (bench/class_browsers.py)."""
    spec = importlib.util.spec_from_file_location("bench_class_browsers", ROOT / "bench" / "class_browsers.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench._gcs_pids(root)


def _new_service_lines(runs: Path) -> str:
    """The service log after its first start (a restarted service says "dispatching" again)."""
    log = (runs / "_queue" / "service.log").read_text(errors="replace")
    return log.split("dispatching ", 1)[1] if "dispatching " in log else ""


@pytest.mark.xdist_group("ray")  # its own Ray head: not beside the session's (tests/conftest.py)
@pytest.mark.timeout(400)
def test_the_web_server_outlives_a_killed_ray_and_the_job_still_ends_done(tmp_path):
    pytest.importorskip("ray")
    from dpcore.classroom.classfile import create_class
    from dpcore.jobs.queue import Queue
    from dpcore.jobs.queue_files import service_status

    doc, _ = create_class("e2e", 1, kdf={"name": "scrypt", "n": 2**10, "r": 8, "p": 1})
    (tmp_path / "class.json").write_text(json.dumps(doc))
    runs, port = tmp_path / "runs", _port()
    url = f"http://127.0.0.1:{port}"
    log = open(tmp_path / "serve.log", "w")
    env = {**os.environ, "DPCORE_QUEUE_SLOTS": "1"}
    sup = subprocess.Popen([sys.executable, "-m", "dpcore", "class", "serve", "--file", str(tmp_path / "class.json"),
                            "--address", "127.0.0.1", "--port", str(port), "--runs", str(runs)],
                           cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    fails, stop, new_heads = [], threading.Event(), []
    try:
        end = time.time() + 120
        while not (_healthy(url) and service_status(runs).up) and time.time() < end:
            time.sleep(0.5)
        assert _healthy(url) and service_status(runs).up, (tmp_path / "serve.log").read_text()[-2000:]

        def watch():
            while not stop.wait(1.0):
                fails.append(not _healthy(url))

        threading.Thread(target=watch, daemon=True).start()
        q = Queue(runs)  # what the Train page does
        job = q.submit([JOB], runs / "workspaces" / "student-01", "student-01")
        while not q.progress(job.id).get("step") and time.time() < end + 60:
            time.sleep(0.3)
        heads = _ray_heads(sup.pid)
        assert heads, "no Ray head under the class's processes"
        for pid in heads:
            os.kill(pid, signal.SIGKILL)
        end = time.time() + 240
        while not q.get(job.id).ended and time.time() < end:
            time.sleep(0.3)
        while "dispatching " not in _new_service_lines(runs) and time.time() < end:  # until the new one is up
            time.sleep(0.3)
        stop.set()
        done = q.get(job.id)
        assert done.state == "done", (done, (runs / "_queue" / "service.log").read_text()[-2000:])
        assert sum(fails) == 0 and len(fails) >= 5  # the web server answered every second throughout
        assert (runs / "_queue" / "service.log").read_text().count("dispatching ") >= 2  # a new service
        assert _healthy(url) and sup.poll() is None
        new_heads = _ray_heads(sup.pid)
        assert new_heads and not set(new_heads) & set(heads)  # the restarted service's own Ray
    finally:
        stop.set()
        sup.send_signal(signal.SIGINT)
        try:
            sup.wait(60)
        except subprocess.TimeoutExpired:
            sup.kill()
        log.close()
    end = time.time() + 30  # stopping the class stopped its Ray: its head goes within seconds
    while [p for p in new_heads if Path(f"/proc/{p}").exists()] and time.time() < end:
        time.sleep(0.2)
    assert not [p for p in new_heads if Path(f"/proc/{p}").exists()]
