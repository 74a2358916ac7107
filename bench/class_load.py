"""Benchmark: a class on one machine — N students (default 30) each submit a small digits training
to the class queue on a local Ray, while page renders (Streamlit AppTest sessions of the Train
and Queue pages, one student at a time) are timed.

It checks what the issue asks: every job finishes, every run lands in its owner's workspace
(BASE/workspaces/<name>) and nowhere else, and it reports the page response p50/p95/max while
jobs run, the queue's wall time and each job's cost on Ray (seconds from start to result,
worker start and imports included). The class file, the signed-in sessions (the record the sign-in
form writes), the queue, the executor and the pages are the real ones; each student's training is
submitted as the Train page's button submits it.

    .venv/bin/python bench/class_load.py [--students 30] [--cpus 2] [--json]

With `--browsers N` it measures the class as it is really started instead (bench/class_browsers.py):
`make run CLASS=…`, N headless Chromium sessions signing in and pressing "Start training" at once,
and `kill -9` of the Ray head mid-run (docs/class-mode.md has the numbers):

    .venv/bin/python bench/class_load.py --browsers 6 [--shots docs/screenshots] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JOB = {"model": "pgm", "params": {"epochs": 1, "hidden": 64, "em_iters": 5}, "data": {"dataset": "digits"}}
PAGES = ("app_pages/train.py", "app_pages/queue.py", "app_pages/story.py", "app_pages/compare.py",
         "app_pages/privacy.py", "app_pages/runs.py")  # each session opens on the Data page first


def _percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(q * (len(xs) - 1)))))]


def _render(page: str, session) -> tuple[list[float], object]:
    """A fresh browser session signed in as `session`'s member: the app's first page, then `page`;
    the seconds of each."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.session_state["dpcore.member"] = session
    at.query_params["dataset"] = "digits"
    t0 = time.perf_counter()
    at.run()
    t1 = time.perf_counter()
    at.switch_page(page).run()
    t2 = time.perf_counter()
    if at.exception:
        raise RuntimeError(f"{page}: {[e.value for e in at.exception]}")
    return [t1 - t0, t2 - t1], at


def run_load(students: int = 30, cpus: int = 2, base: Path | None = None, timeout: float = 1800,
             kdf: dict | None = None) -> dict:
    """A class of `students` (a class file of hashed codes; `kdf` cheaper only in tests): one small
    training per student in the queue, pages rendered until every job ended; the numbers."""
    from dpcore.classroom.classfile import create_class, parse_class
    from dpcore.classroom.signin import new_session
    from dpcore.jobs import sweep_ray
    from dpcore.jobs.queue_ray import RayExecutor
    from dpcore.ui import class_queue

    base = Path(base or tempfile.mkdtemp(prefix="class-load-"))
    doc, _ = create_class("load", students, **({"kdf": kdf} if kdf else {}))
    (base / "class.json").write_text(json.dumps(doc))
    cf = parse_class(doc)
    old_env = {k: os.environ.get(k) for k in ("DPCORE_RUNS_DIR", "DPCORE_CLASS")}
    os.environ["DPCORE_RUNS_DIR"], os.environ["DPCORE_CLASS"] = str(base), str(base / "class.json")
    members = [m for m in cf.members if m.role == "student"]
    names = [m.name for m in members]
    renders: list[float] = []
    try:
        import ray

        started_ray = not ray.is_initialized()  # a Ray the caller started is the caller's to stop
    except ImportError:
        started_ray = False  # RayExecutor says so in one line
    try:
        t_ray = time.perf_counter()
        q = class_queue.class_queue(executor=RayExecutor(num_cpus=cpus))
        ray_start = time.perf_counter() - t_ray
        t0 = time.perf_counter()
        for n in names:  # what the Train page's button does for each signed-in student
            q.submit([JOB], base / "workspaces" / n, n, title="PGM training")
        submit_s = time.perf_counter() - t0
        i, seen_others = 0, 0
        while any(not j.ended for j in q.jobs()) and time.perf_counter() - t0 < timeout:
            member = members[i % students]
            times, at = _render(PAGES[i % len(PAGES)], new_session(cf, member))
            renders += times
            if PAGES[i % len(PAGES)] == "app_pages/queue.py":  # a student's Queue page shows no one else
                own = {f"queue.cancel.{j.id}" for j in q.jobs(member.name)}
                seen_others += sum(str(b.key).startswith("queue.cancel.") and b.key not in own for b in at.button)
            i += 1
        wall = time.perf_counter() - t0
        jobs = q.jobs()
    finally:
        class_queue.forget_queues()
        if started_ray:
            sweep_ray.shutdown()
        for k, v in old_env.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
    misplaced = 0
    for job in jobs:
        ws = base / "workspaces" / job.owner
        misplaced += sum(not (ws / r / "config.json").is_file() for r in job.runs)
    in_workspaces = [p for p in (base / "workspaces").glob("*/*") if (p / "config.json").is_file()]
    per_owner = sorted({len([p for p in in_workspaces if p.parent.name == n]) for n in names})
    stray = [p.name for p in base.iterdir() if (p / "config.json").is_file()]
    costs = [j.seconds for j in jobs if j.state == "done" and j.seconds]
    return {"students": students, "cpus": cpus, "jobs": len(jobs),
            "done": sum(j.state == "done" for j in jobs), "states": sorted({j.state for j in jobs}),
            "runs": sum(len(j.runs) for j in jobs), "runs_in_workspaces": len(in_workspaces),
            "misplaced_runs": misplaced, "stray_runs": len(stray), "runs_per_workspace": per_owner, "other_students_shown": seen_others,
            "ray_start_s": round(ray_start, 1), "submit_s": round(submit_s, 2), "wall_s": round(wall, 1),
            "job_s_mean": round(statistics.mean(costs), 1) if costs else None,
            "job_s_max": round(max(costs), 1) if costs else None,
            "renders": len(renders), "render_p50_s": round(_percentile(renders, 0.5), 2) if renders else None,
            "render_p95_s": round(_percentile(renders, 0.95), 2) if renders else None,
            "render_max_s": round(max(renders), 2) if renders else None}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--students", type=int, default=30)
    p.add_argument("--cpus", type=int, default=os.cpu_count() or 1, help="the local Ray's CPUs (job slots)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--browsers", type=int, default=0,
                   help="real browsers against `make run CLASS=…` (lecturer + N-1 students), with a Ray kill")
    p.add_argument("--shots", default=None, help="with --browsers: a folder for the Queue page's screenshots")
    a = p.parse_args(argv)
    if a.students < 1 or a.cpus < 1 or a.browsers < 0 or a.browsers == 1:
        p.error("--students and --cpus must be ≥ 1, --browsers 0 or ≥ 2")
    if a.browsers:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from class_browsers import run_class

        shots = Path(a.shots) if a.shots else None
        if shots:
            shots.mkdir(parents=True, exist_ok=True)
        r = run_class(a.browsers, shots=shots)
        print(json.dumps(r) if a.json else "\n".join(f"{k:>22}: {v}" for k, v in r.items()))
        ok = r["lost"] == 0 and r["done"] + r["failed"] + r["interrupted"] == r["jobs_found"] == a.browsers
        return 0 if ok and not r["web_health_failures"] and not r["web_server_restarted"] else 1
    r = run_load(a.students, a.cpus)
    if a.json:
        print(json.dumps(r))
    else:
        for k, v in r.items():
            print(f"{k:>22}: {v}")
    ok = r["done"] == r["jobs"] == r["runs"] == r["runs_in_workspaces"] and r["runs_per_workspace"] == [1]
    return 0 if ok and not r["misplaced_runs"] and not r["stray_runs"] and not r["other_students_shown"] else 1


if __name__ == "__main__":
    sys.exit(main())
