"""Class mode as `make run CLASS=…` starts it: two processes under one supervisor — the web server
(Streamlit, which only writes and reads the queue's files) and the training service
(`queue_service`, the queue's dispatcher and its Ray driver) — and the supervisor restarts the
service whenever it exits, so Ray dying never takes a page down.

Why a supervisor and not Ray started inside Streamlit: a Ray driver exits with its Ray, and the web
server was that driver. Here the service restarts with a short backoff (1, 2, 4 … 30 s), the pages
meanwhile say "the training service is restarting", and the queue's files carry every job across.
Stopping the supervisor (Ctrl-C, SIGTERM) stops both children, the service first.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

BACKOFF_MAX_S = 30.0
STOP_GRACE_S = 15.0


def service_cmd(base: Path) -> list[str]:
    return [sys.executable, "-m", "dpcore", "class", "queue-service", "--runs", str(base)]


def web_cmd(address: str, port: int, app: Path) -> list[str]:
    return [sys.executable, "-m", "streamlit", "run", str(app), "--server.headless", "true",
            "--server.address", address, "--server.port", str(port), "--browser.gatherUsageStats", "false"]


def _stop(proc: subprocess.Popen | None, grace: float = STOP_GRACE_S) -> None:
    """SIGTERM to the child (the service shuts its Ray down), then whatever is left of its process
    group (Ray's processes) gets SIGTERM, and SIGKILL after `grace`."""
    if proc is None:
        return
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            pass
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            break
        time.sleep(1.0 if sig == signal.SIGTERM else 0)
    if proc.poll() is None:
        proc.wait(5)


def say(line: str) -> None:
    print(f"[class] {time.strftime('%H:%M:%S')} {line}", flush=True)


def supervise(base: Path, *, class_file: Path, address: str, port: int, app: Path,
              service: list[str] | None = None, web: list[str] | None = None, poll: float = 0.5) -> int:
    """Run the web server and the training service until the web server exits or a signal comes;
    restart the service each time it exits. Returns the web server's exit code."""
    base.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "DPCORE_CLASS": str(class_file.resolve()), "DPCORE_RUNS_DIR": str(base.resolve())}
    log_dir = base / "_queue"
    log_dir.mkdir(parents=True, exist_ok=True)
    stopping = {"flag": False}

    def on_signal(*_):
        stopping["flag"] = True

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)

    def start_service() -> subprocess.Popen:
        log = open(log_dir / "service.log", "ab")  # noqa: SIM115 - the child keeps it open
        return subprocess.Popen(service or service_cmd(base), env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)

    svc: subprocess.Popen | None = start_service()
    assert svc is not None
    say(f"training service started (pid {svc.pid}); its log: {log_dir / 'service.log'}")
    webp = subprocess.Popen(web or web_cmd(address, port, app), env=env, start_new_session=True)
    say(f"web server started (pid {webp.pid}) on http://{address}:{port}")
    backoff, restarts, next_start, started_at = 1.0, 0, None, time.time()
    try:
        while not stopping["flag"]:
            if webp.poll() is not None:
                say(f"web server exited ({webp.returncode}); stopping the training service")
                break
            if svc is not None and svc.poll() is not None:
                code = svc.returncode
                say(f"training service exited ({code}); restarting in {backoff:.0f} s (the pages say it is restarting)")
                svc, next_start = None, time.time() + backoff
            if svc is None and next_start is not None and time.time() >= next_start:
                svc, restarts = start_service(), restarts + 1
                say(f"training service restarted (pid {svc.pid}, restart {restarts})")
                started_at = time.time()
                backoff = min(BACKOFF_MAX_S, backoff * 2)
            elif svc is not None and restarts and time.time() - started_at > 120:
                backoff = 1.0  # up for two minutes: the next failure restarts quickly again
            time.sleep(poll)
    finally:
        _stop(svc)
        _stop(webp)
    return webp.returncode if webp.returncode is not None else 0
