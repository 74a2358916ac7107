"""Benchmark: every registered model on its full defaults, on digits (where it takes images) and on
`credit`, against the quality floor of tests/models/test_quality_floor.py (every class generated, no
column collapsed, utility above chance). The test runs each model on one data set with shortened
durations; this runs the whole grid as a user would (minutes per neural model on a table).

Regenerates: the "DP-VAE on its new small-data defaults" row of docs/benchmarks.md's "Latest"
table.

    .venv/bin/python bench/quality_floor.py [--models p3gm dp-vae] [--json]
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time


def measure(name: str, data: dict, root: str) -> dict:
    from dpcore import report
    from dpcore.evaluate.checks import quality_floor
    from dpcore.jobs import train_run
    from dpcore.runs import RunConfig

    t0 = time.time()
    run = train_run(RunConfig(model=name, params={}, data=dict(data)), root)
    seconds = time.time() - t0
    bundle = report.load_bundle(run.path)
    res, _ = report.utility(bundle)
    metric = res.metrics[0] if res is not None else None
    return {"model": name, "data": data["dataset"], "seconds": round(seconds, 1),
            "metric": metric, "utility": None if res is None else res.mean.get(metric),
            "problems": quality_floor(bundle.synthetic, bundle.train, bundle.test, res)}


def main() -> None:
    from dpcore.models import MODELS, get_model

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="*", default=sorted(MODELS))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as root:
        for name in args.models:
            sets = ([{"dataset": "digits"}] if get_model(name).takes_images else []) + [{"dataset": "credit"}]
            for data in sets:
                rows.append(measure(name, data, root))
                if not args.json:
                    r = rows[-1]
                    util = "—" if r["utility"] is None else f"{r['utility']:.3f}"
                    print(f"{r['model']:8} {r['data']:7} {r['metric'] or '':8} {util:>6} {r['seconds']:7.1f}s "
                          f"{'OK' if not r['problems'] else '; '.join(r['problems'])}", flush=True)
    if args.json:
        print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
