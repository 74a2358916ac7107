"""Benchmark: the Story page's default pair on the app's default dataset, with no setting changed.

What the lecturer's one click does (dpcore.ui.story.story_configs on dpcore.ui.defaults'
data choice): P3GM at the size's default ε and the `overfit` VAE, trained one after the other;
then what the page shows — the private run's utility against the real reference (target ≥ 0.6 ×)
and the non-private run's best attack AUC (target ≥ 0.65) — and the wall time of each run.
Runs go to a temporary folder (nothing is kept). Run with OMP_WAIT_POLICY=PASSIVE on a shared machine.

    .venv/bin/python bench/story_defaults.py --seeds 0 1 [--dataset digits] [--json]
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time


def measure(dataset: str | None, seed: int, root: str, epochs: int | None = None, private_only: bool = False) -> dict:
    from dpcore import report
    from dpcore.evaluate.attacks import DEFAULT, best
    from dpcore.runs import RunConfig, train_run
    from dpcore.ui.defaults import default_data_choice
    from dpcore.ui.story import USEFUL_SHARE, side_numbers, story_configs

    choice = default_data_choice(dataset)
    train, _ = RunConfig(model="pgm", data=choice).data.load()
    out = {"dataset": choice["dataset"], "rows": choice.get("n"), "train_rows": train.n, "seed": seed}
    configs = story_configs(choice, train.n, seed=seed)
    if epochs is not None:  # what another default would give (choosing the size's epochs)
        configs[0] = RunConfig(configs[0].model, {**configs[0].params, "epochs": epochs}, configs[0].data)
    out["private_epochs"] = configs[0].params["epochs"]
    for role, cfg in zip(("private", "nonprivate"), configs[:1] if private_only else configs):
        t0 = time.time()
        run = train_run(cfg, root)
        seconds = time.time() - t0
        b = report.load_bundle(run.path)
        res, _ = report.utility(b)
        scores = report.attacks(b, list(DEFAULT))
        top = best(scores.results)
        nums = side_numbers(res, scores.results, run.epsilon)
        out[role] = {"run": run.name, "epsilon": run.epsilon, "seconds": round(seconds, 1),
                     "utility": nums["utility"], "reference": nums["reference"],
                     "best_attack": top.name if top else None, "auc": nums["auc"]}
    p = out["private"]
    out["private_share_of_real"] = round(p["utility"] / p["reference"], 3) if p["utility"] and p["reference"] else None
    leak = out.get("nonprivate", {}).get("auc")
    out["ok"] = bool(out["private_share_of_real"] and out["private_share_of_real"] >= USEFUL_SHARE
                     and (private_only or (leak or 0) >= 0.65))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--dataset", default=None, help="default: the app's default dataset")
    ap.add_argument("--epochs", type=int, default=None, help="override the private run's default epochs")
    ap.add_argument("--private-only", action="store_true", help="skip the non-private run")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as root:
        rows = [measure(args.dataset, s, root, args.epochs, args.private_only) for s in args.seeds]
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    for r in rows:
        p, q = r["private"], r.get("nonprivate")
        print(f"{r['dataset']} ({r['train_rows']:,} training rows) seed {r['seed']}: "
              f"private ε = {p['epsilon']:.3g}, {r['private_epochs']} epochs: utility {p['utility']:.3f} / real "
              f"{p['reference']:.3f} = {r['private_share_of_real']:.2f} × real, AUC {p['auc']:.2f}, {p['seconds']:.0f} s"
              + (f" · non-private best attack {q['best_attack']} AUC {q['auc']:.2f}, {q['seconds']:.0f} s" if q else "")
              + f" · {'OK' if r['ok'] else 'NOT OK'}", flush=True)


if __name__ == "__main__":
    main()
