"""Benchmark: the Story on the app's default dataset, with no setting changed — the whole job.

What the app's first start (and the Story button) does: the Story's job (`dpcore.ui.story_job`) trains P3GM
at the size's default ε and PGM (the same pipeline without noise, ε = ∞) on the same rows, then
scores each side: utility against the real reference, the attack ladder (best attack and its AUC)
and the canary audit. Per side ("private", "nonprivate"): utility, reference, best attack, auc,
the canary audit (AUC, ε lower bound) and seconds (training + scoring); the whole job's wall and
CPU seconds beside the machine's load (`os.getloadavg`), since the cores may be shared. `ok`: the
Story's checks hold (`dpcore.ui.story.story_checks`). Runs go to a temporary folder.

    .venv/bin/python bench/story_defaults.py [--seeds 0 1] [--dataset digits] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time


def measure(dataset: str | None, seed: int, root: str) -> dict:
    from dpcore.report import load_evaluation
    from dpcore.runs import RunConfig
    from dpcore.runs.jobs import JobHandle
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
    job.join()
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
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as root:
        rows = [measure(args.dataset, s, root) for s in args.seeds]
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    for r in rows:
        if "error" in r:
            print(f"{r['dataset']} seed {r['seed']}: {r['error']}")
            continue
        p, q = r["private"], r["nonprivate"]
        print(f"{r['dataset']} ({r['train_rows']:,} training rows) seed {r['seed']}: {r['seconds']:.0f} s "
              f"(CPU {r['cpu_seconds']:.0f} s, load {r['load_before']:.1f} → {r['load_after']:.1f})\n"
              + "".join(f"  {role:10s} ε = {s['epsilon']:.3g}: utility {s['utility']:.3f} / real {s['reference']:.3f}, "
                        f"best attack {s['best_attack']} AUC {s['auc']:.2f}, canaries AUC {s['canary_auc']:.2f} "
                        f"(top {s['canary_top_in']}, ε ≥ {s['audit_epsilon_lower_bound']:.2f}), {s['seconds']:.0f} s\n"
                        for role, s in (("private", p), ("nonprivate", q)))
              + ("  OK" if r["ok"] else "  NOT OK: " + "; ".join(r["problems"])), flush=True)


if __name__ == "__main__":
    main()
