"""Benchmark: one 24-run sweep on digits in-process vs on a local Ray with 2 workers, side by
side in one run, and Ray's own per-run overhead (start-up, scheduling, a worker's first import).

Regenerates: docs/sweeps.md#benchmarks and the "sweeps" row of docs/benchmarks.md's "Latest" table.

The grid is the README's: epsilon=0.5,1,2,4 × encoder_share=0.1,0.3,0.5 × 2 seeds, P3GM with its
default settings (or `--tiny` for a quick check). Each backend trains into its own fresh runs root
(a temporary folder), so neither skips anything. In-process runs torch with its default threads
(both cores); each Ray worker runs one thread on one core.

    .venv/bin/python bench/sweep.py [--json] [--tiny] [--workers 2]
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

GRID = {"epsilon": [0.5, 1, 2, 4], "encoder_share": [0.1, 0.3, 0.5]}
TINY = {"epochs": 1, "hidden": 16, "em_iters": 2, "pca_dim": 8, "batch_size": 100}


def spec(tiny: bool):
    from dpcore.jobs.sweep import SweepSpec

    return SweepSpec(model="p3gm", grid=GRID, params=TINY if tiny else {}, seeds=2, name="bench")


def timed_sweep(backend: str, root: Path, tiny: bool, workers: int) -> dict:
    from dpcore.jobs.sweep import run_sweep

    t0 = time.perf_counter()
    s = run_sweep(spec(tiny), root, backend=backend, num_cpus=workers)
    wall = time.perf_counter() - t0
    done = [r for r in s["runs"] if r["status"] == "done"]
    return {"backend": s["backend"], "wall_s": round(wall, 1), "runs": len(s["runs"]), "done": len(done),
            "run_s_sum": round(sum(r["seconds"] or 0 for r in done), 1)}


def ray_overhead(workers: int, tasks: int = 48) -> dict:
    """ray.init, the first round trip (worker start + import of dpcore's run code), and the
    scheduling round trip of a no-op task on warm workers."""
    import ray

    from dpcore.jobs import sweep_ray

    t0 = time.perf_counter()
    pool, note = sweep_ray.connect(num_cpus=workers)
    init = time.perf_counter() - t0
    if pool is None:
        return {"note": note}

    def first_import():
        import torch  # noqa: F401

        import dpcore.jobs.sweep  # noqa: F401 - what a worker imports before its first run
        return 0

    t0 = time.perf_counter()
    ray.get([ray.remote(num_cpus=1)(first_import).remote() for _ in range(workers)])
    first = time.perf_counter() - t0

    def noop():
        return 0

    remote = ray.remote(num_cpus=1)(noop)
    ray.get([remote.remote() for _ in range(workers)])
    t0 = time.perf_counter()
    ray.get([remote.remote() for _ in range(tasks)])
    per_task = (time.perf_counter() - t0) / tasks * workers  # per task on one worker's timeline
    t0 = time.perf_counter()
    sweep_ray.shutdown()
    down = time.perf_counter() - t0
    return {"init_s": round(init, 2), "first_round_trip_s": round(first, 2),
            "noop_task_ms": round(per_task * 1000, 1), "shutdown_s": round(down, 2)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--tiny", action="store_true", help="tiny P3GM settings (a quick check)")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    from dpcore.jobs import sweep_ray

    with tempfile.TemporaryDirectory() as tmp:
        local = timed_sweep("in-process", Path(tmp) / "in-process", args.tiny, args.workers)
        ray = timed_sweep("ray", Path(tmp) / "ray", args.tiny, args.workers)
        sweep_ray.shutdown()
    over = ray_overhead(args.workers)
    out = {"grid": GRID, "seeds": 2, "tiny": args.tiny, "workers": args.workers, "in_process": local, "ray": ray,
           "speed_up": round(local["wall_s"] / ray["wall_s"], 2) if ray["backend"] == "ray" else None,
           "ray_overhead": over}
    if ray["backend"] == "ray" and ray["runs"]:
        # wall time Ray spends beyond perfect sharing of the in-process work over the workers
        out["ray_overhead_per_run_s"] = round((ray["wall_s"] - local["wall_s"] / args.workers) / ray["runs"], 2)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"in-process: {local['wall_s']} s for {local['runs']} runs; Ray ({args.workers} workers): "
              f"{ray['wall_s']} s; speed-up {out['speed_up']}×; Ray overhead {over}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
