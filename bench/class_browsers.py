"""Benchmark: a class as it is really started and really used — `make run CLASS=… ADDRESS=127.0.0.1`
(the supervisor, the web server and the training service with its Ray), N headless Chromium sessions
(a lecturer and N-1 students) signing in through the form and pressing "Start training" at once,
and, mid-run, `kill -9` of the Ray head (its GCS server). Run by `bench/class_load.py --browsers N`.

What it reports: every job's end (done / failed / interrupted, none lost), whether the web server
ever stopped answering or restarted (its /_stcore/health polled every second, its pid), how many
times the training service restarted, the Queue page's load time (p50/p95) and how far what the
lecturer's Queue page says ("N running, M waiting") is behind the jobs' real state, and the queue's
wall time from the first click to the last job's end.
"""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
QUERY = "?dataset=digits&model=p3gm"  # a small table, the default private model: tens of seconds a job


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pct(xs: list[float], q: float) -> float | None:
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))], 2) if xs else None


class Health(threading.Thread):
    """Polls the web server's /_stcore/health every second: failures and the longest outage."""

    def __init__(self, url: str):
        super().__init__(daemon=True)
        self.url, self.stop, self.fails, self.polls = url, threading.Event(), 0, 0
        self.streak, self.longest = 0, 0  # polls in a row without an answer (5 s each at most)

    def run(self) -> None:
        while not self.stop.wait(1.0):
            self.polls += 1
            try:
                with urllib.request.urlopen(self.url + "/_stcore/health", timeout=5) as r:
                    ok = r.read().strip() == b"ok"
            except OSError:
                ok = False
            self.fails += not ok
            self.streak = 0 if ok else self.streak + 1
            self.longest = max(self.longest, self.streak)


def _jobs(base: Path) -> list[dict]:
    out = []
    for p in sorted((base / "_queue").glob("j*.json")):
        if p.name.count(".") == 1:
            try:
                out.append(json.loads(p.read_text()))
            except (OSError, ValueError):
                pass
    return out


def _idle(page, timeout: float = 120_000) -> None:
    page.wait_for_selector(IDLE, timeout=timeout)
    page.wait_for_timeout(200)
    page.wait_for_selector(IDLE, timeout=timeout)


def _sign_in(page, url: str, code: str) -> None:
    page.goto(url + QUERY)
    page.get_by_label("Access code").fill(code)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_selector("h1:has-text('Data')", timeout=120_000)
    _idle(page)


def _goto(page, title: str) -> float:
    t0 = time.perf_counter()
    page.locator("[data-testid='stSidebarNav'] a", has_text=title).first.click()
    page.wait_for_selector(f"h1:has-text('{title}')", timeout=60_000)
    _idle(page)
    return time.perf_counter() - t0


def _descendants(root_pid: int) -> set[int]:
    """Every process below `root_pid` (by parent pid, whatever session it started)."""
    kids: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            kids.setdefault(ppid, []).append(int(d.name))
    out, todo = set(), [root_pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            if k not in out:
                out.add(k)
                todo.append(k)
    return out


def _gcs_pids(root_pid: int) -> list[int]:
    """The Ray head's GCS server of this class (under the supervisor's tree; other Rays are left alone)."""
    found = subprocess.run(["pgrep", "-x", "gcs_server"], capture_output=True, text=True).stdout.split()
    mine = _descendants(root_pid)
    return [int(p) for p in found if int(p) in mine]


class Killer(threading.Thread):
    """`kill -9` of this class's Ray head once a running job is `kill_at` of its steps done."""

    def __init__(self, runs: Path, root_pid: int, kill_at: float, t0: float):
        super().__init__(daemon=True)
        self.runs, self.root_pid, self.kill_at, self.t0 = runs, root_pid, kill_at, t0
        self.at: float | None = None
        self.pids, self.shot = 0, False

    def run(self) -> None:
        while time.time() - self.t0 < 600:
            for q in (self.runs / "_queue").glob("j*.progress.json"):
                try:
                    g = json.loads(q.read_text())
                except (OSError, ValueError):
                    continue
                if (g.get("step") or 0) / max(1, g.get("total_steps") or 1) >= self.kill_at:
                    pids = _gcs_pids(self.root_pid)
                    for pid in pids:
                        os.kill(pid, signal.SIGKILL)
                    self.at, self.pids = round(time.time() - self.t0, 1), len(pids)
                    return
            time.sleep(0.3)


def run_class(browsers: int = 6, base: Path | None = None, shots: Path | None = None, timeout: float = 900,
              kill_at: float = 0.2) -> dict:
    from playwright.sync_api import sync_playwright

    from dpcore.classroom.classfile import create_class

    base = Path(base or tempfile.mkdtemp(prefix="class-browsers-"))
    runs = base / "runs"
    doc, codes = create_class("load", browsers - 1)
    (base / "class.json").write_text(json.dumps(doc))
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "DPCORE_RUNS_DIR": str(runs)}
    log = open(base / "make-run.log", "w")  # noqa: SIM115
    sup = subprocess.Popen(["make", "run", f"CLASS={base / 'class.json'}", "ADDRESS=127.0.0.1", f"PORT={port}"],
                           cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    health = Health(url)
    out: dict = {"browsers": browsers}
    try:
        end = time.time() + 180
        while time.time() < end:
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                    if r.read().strip() == b"ok":
                        break
            except OSError:
                time.sleep(0.5)
        web_pid = subprocess.run(["pgrep", "-f", f"streamlit run .*--server.port {port}"], capture_output=True,
                                 text=True).stdout.split()
        health.start()
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            pages = []
            for member, code in codes.items():  # the lecturer first, then the students
                page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
                page.set_default_timeout(120_000)
                _sign_in(page, url, code)
                pages.append((member, page))
            for _, page in pages:
                _goto(page, "Train")
            t_click = time.time()
            killer = Killer(runs, sup.pid, kill_at, t_click)
            killer.start()
            for _, page in pages:  # one after another as fast as a browser takes a click: "at once"
                page.get_by_role("button", name="Start training").click()
            end = time.time() + 120  # every click reached the queue (the pages keep polling: never idle)
            while len(_jobs(runs)) < len(pages) and time.time() < end:
                time.sleep(0.5)
            submitted = len(_jobs(runs))
            out["submit_s"] = round(time.time() - t_click, 1)
            lect = pages[0][1]
            loads, lags, mismatch_since = [], [], None
            while time.time() - t_click < timeout:
                loads.append(_goto(lect, "Queue"))
                text = lect.locator("[data-testid='stCaptionContainer']").first.inner_text()
                shown = re.search(r"(\d+) running, (\d+) waiting", text)
                jobs = _jobs(runs)
                real = (sum(j["state"] == "running" for j in jobs), sum(j["state"] == "queued" for j in jobs))
                if shown and (int(shown[1]), int(shown[2])) != real:
                    mismatch_since = mismatch_since or time.time()
                elif mismatch_since is not None:
                    lags.append(time.time() - mismatch_since)
                    mismatch_since = None
                if killer.at is not None and shots and not killer.shot:
                    killer.shot = True
                    lect.wait_for_timeout(12_000)  # the page says the service is restarting
                    _goto(lect, "Queue")
                    lect.screenshot(path=str(shots / "class-queue-restarting.png"), full_page=True)
                if jobs and all(j["state"] not in ("queued", "running") for j in jobs) and len(jobs) >= submitted:
                    break
                lect.wait_for_timeout(1500)
            wall = time.time() - t_click
            if shots:
                _goto(lect, "Queue")
                lect.screenshot(path=str(shots / "class-queue-done.png"), full_page=True)
            browser.close()
        jobs = _jobs(runs)
        web_pid_after = subprocess.run(["pgrep", "-f", f"streamlit run .*--server.port {port}"],
                                       capture_output=True, text=True).stdout.split()
        restarts = (runs / "_queue" / "service.log").read_text(errors="replace").count("dispatching ") - 1 \
            if (runs / "_queue" / "service.log").exists() else None
        states = [j["state"] for j in jobs]
        out.update({
            "jobs_submitted": submitted, "jobs_found": len(jobs), "lost": browsers - len(jobs),
            "done": states.count("done"), "failed": states.count("failed"),
            "interrupted": states.count("interrupted"), "ran_twice": sum(j.get("attempts", 0) > 1 for j in jobs),
            "web_health_failures": health.fails, "web_health_polls": health.polls,
            "web_health_longest_gap_polls": health.longest,
            "web_server_restarted": web_pid != web_pid_after, "service_restarts": restarts,
            "killed_at_s": killer.at, "killed_gcs_pids": killer.pids,
            "queue_page_p50_s": _pct(loads, 0.5), "queue_page_p95_s": _pct(loads, 0.95),
            "queue_page_max_lag_s": round(max(lags), 1) if lags else 0.0, "queue_wall_s": round(wall, 1),
            "job_s": sorted(round(j["seconds"], 1) for j in jobs if j.get("seconds"))})
        return out
    finally:
        health.stop.set()
        try:
            os.killpg(sup.pid, signal.SIGINT)
            sup.wait(40)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(sup.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        log.close()
