"""Benchmark: the Story on the app's default dataset, with no setting changed — the whole job.

What the app's first start (and the Story button) does: the Story's job (`dpcore.ui.story_job`) trains P3GM
at the size's default ε and PGM (the same pipeline without noise, ε = ∞) on the same rows, then
scores each side: utility against the real reference, the attack ladder (best attack and its AUC)
and the canary audit. Per side ("private", "nonprivate"): utility, reference, best attack, auc,
the canary audit (AUC, ε lower bound) and seconds (training + scoring); the whole job's wall and
CPU seconds beside the machine's load (`os.getloadavg`), since the cores may be shared. `ok`: the
Story's checks hold (`dpcore.ui.story.story_checks`). Runs go to a temporary folder.

`--compare`: each seed also with the settings before issue 40 (canary audit on 2 000 rows with 512
canaries, 1 000 attack targets, the full image schedule), in the same process one after the other,
so both numbers share the machine's load. `estimates`: the job's time-left estimate every 2 s
(elapsed, seconds left), to check that it holds steady.

    .venv/bin/python bench/story_defaults.py [--seeds 0 1] [--dataset digits] [--compare] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

PREVIOUS = {"AUDIT_ROWS": 2_000, "CANARIES": 512, "ATTACK_TARGETS": 1_000, "QUICK_SCHEDULE": {}}  # before issue 40


def measure_with(settings: dict | None, dataset: str | None, seed: int, root: str) -> dict:
    """`measure` with the Story's module settings replaced by `settings` (None: as they are)."""
    from dpcore.ui import story

    saved = {k: getattr(story, k) for k in (settings or {})}
    try:
        for k, v in (settings or {}).items():
            setattr(story, k, v)
        return {"settings": "before" if settings else "now", **measure(dataset, seed, root)}
    finally:
        for k, v in saved.items():
            setattr(story, k, v)


def measure(dataset: str | None, seed: int, root: str) -> dict:
    from dpcore.jobs.jobs import JobHandle
    from dpcore.report import load_evaluation
    from dpcore.runs import RunConfig
    from dpcore.ui.defaults import default_data_choice
    from dpcore.ui.story import ROLES, side_numbers, story_checks, story_configs
    from dpcore.ui.story_job import story_job

    choice = default_data_choice(dataset)
    train, _ = RunConfig(model="pgm", data=choice).data.load()
    out = {"dataset": choice["dataset"], "rows": choice.get("n"), "train_rows": train.n, "seed": seed,
           "load_before": round(os.getloadavg()[0], 2)}
    configs = story_configs(choice, train.n, seed=seed)
    wall, cpu = time.perf_counter(), time.process_time()
    job = JobHandle(story_job(configs, root)).start()
    estimates = []
    while not job.join(2.0):
        left = job.seconds_left()
        estimates.append((round(time.perf_counter() - wall), None if left is None else round(left)))
    out["estimates"] = estimates
    out["seconds"], out["cpu_seconds"] = round(time.perf_counter() - wall, 1), round(time.process_time() - cpu, 1)
    out["load_after"] = round(os.getloadavg()[0], 2)
    if job.status != "done":
        out["error"] = f"{job.status}: {job.error}"
        out["ok"] = False
        return out
    sides = {}
    for role, run, result in zip(ROLES, job.runs, job.results):
        s = side_numbers(load_evaluation(run.path), run.epsilon)
        sides[role] = s
        au = s["audit"] or {}
        out[role] = {"run": run.name, "epsilon": run.epsilon, "utility": s["utility"], "reference": s["reference"],
                     "best_attack": s["best"], "auc": s["auc"], "canary_auc": au.get("auc"),
                     "canary_top_in": f"{au.get('top_in')}/{au.get('k')}",
                     "audit_epsilon_lower_bound": au.get("epsilon_lower_bound"),
                     "seconds": round(sum(result["seconds"].values()), 1),
                     "train_seconds": round(result["seconds"].get("train", 0.0), 1)}
    out["problems"] = story_checks(sides["private"], sides["nonprivate"])
    out["ok"] = not out["problems"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--dataset", default=None, help="default: the app's default dataset")
    ap.add_argument("--compare", action="store_true", help="also the settings before issue 40, alternating")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as root:
        rows = [measure_with(settings, args.dataset, s, root) for s in args.seeds
                for settings in ([PREVIOUS, None] if args.compare else [None])]
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    for r in rows:
        if "error" in r:
            print(f"{r['dataset']} seed {r['seed']}: {r['error']}")
            continue
        p, q = r["private"], r["nonprivate"]
        print(f"{r['dataset']} ({r['train_rows']:,} training rows) seed {r['seed']}, settings {r['settings']}: "
              f"{r['seconds']:.0f} s "
              f"(CPU {r['cpu_seconds']:.0f} s, load {r['load_before']:.1f} → {r['load_after']:.1f})\n"
              + "".join(f"  {role:10s} ε = {s['epsilon']:.3g}: utility {s['utility']:.3f} / real {s['reference']:.3f}, "
                        f"best attack {s['best_attack']} AUC {s['auc']:.2f}, canaries AUC {s['canary_auc']:.2f} "
                        f"(top {s['canary_top_in']}, ε ≥ {s['audit_epsilon_lower_bound']:.2f}), {s['seconds']:.0f} s\n"
                        for role, s in (("private", p), ("nonprivate", q)))
              + "  time left said at (elapsed s: s left): "
              + ", ".join(f"{t}: {left}" for t, left in r["estimates"][::5]) + "\n"
              + ("  OK" if r["ok"] else "  NOT OK: " + "; ".join(r["problems"])), flush=True)


if __name__ == "__main__":
    main()
