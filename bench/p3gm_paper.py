"""Benchmark (not a test): the P3GM paper's Fashion-MNIST experiment on this machine.

Regenerates: docs/benchmarks.md#p3gm-against-the-paper (its P3GM rows in the "Latest" table) and
the README's Fashion-MNIST accuracies ("Results").

Fashion-MNIST official split (60k train / 10k test), ε = 1, δ = 1e-5: train each model, sample as
many rows as the training set, train the evaluation's image classifier on the synthetic rows only
(early-stopped on a synthetic validation split, dpcore.evaluate.utility) and test it on the real
test set. Reports accuracy and wall time (fit, sample). Paper: P3GM 0.749 (a CNN classifier).

    .venv/bin/python bench/p3gm_paper.py                       # P3GM, K=5, PGM, VAE, DP-VAE
    .venv/bin/python bench/p3gm_paper.py --models p3gm --json
    .venv/bin/python bench/p3gm_paper.py --quick               # 10k rows, a smoke run
    .venv/bin/python bench/p3gm_paper.py --models p3gm --set encoder_share=0.2 --set hidden=500
    .venv/bin/python bench/p3gm_paper.py --models p3gm --validation --set encoder_share=0.2

Tuning happens with `--validation`: 10k rows carved from the 60k training rows (seeded, stratified)
are held out and scored on, and the model trains on the other 50k; the real test set is not read.
The README's test-set numbers are measured once, with the defaults chosen that way.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import time

import numpy as np  # noqa: E402
import torch  # noqa: E402

from dpcore.data import load_split, train_test_split  # noqa: E402
from dpcore.evaluate.utility import utility_scores  # noqa: E402
from dpcore.models import config_class, make_model  # noqa: E402

# name → (model, overrides of the model's defaults)
SETUPS = {
    "p3gm": ("p3gm", {"epsilon": 1.0}),
    "p3gm-k5": ("p3gm", {"epsilon": 1.0, "components": 5}),
    "p3gm-ae": ("p3gm-ae", {"epsilon": 1.0}),
    "pgm": ("pgm", {}),
    "vae": ("vae", {}),
    "dp-vae": ("dp-vae", {"epsilon": 1.0}),
}
DEFAULT = ("p3gm", "p3gm-k5", "pgm", "vae", "dp-vae")


def _value(text: str):
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return None if text == "None" else text


def run_one(key: str, train, test, overrides: dict, seed: int, classifier: str) -> dict:
    model_name, params = SETUPS[key]
    fields = {f.name for f in dataclasses.fields(config_class(model_name))}
    params = {**params, **{k: v for k, v in overrides.items() if k in fields}, "seed": seed}
    model = make_model(model_name, **params)
    t0 = time.perf_counter()
    res = model.fit(train)
    t1 = time.perf_counter()
    synth = model.sample(train.n, seed=seed)
    t2 = time.perf_counter()
    util = utility_scores(synth, test, classifiers=[classifier], seed=seed)
    counts = np.bincount(synth.labels, minlength=train.n_classes)
    return {"setup": key, "model": model_name, "params": dataclasses.asdict(model.config),
            "epsilon": res.epsilon, "delta": res.delta, "accuracy": util.mean["accuracy"],
            "fit_s": round(t1 - t0, 1), "sample_s": round(t2 - t1, 1),
            "train_sample_s": round(t2 - t0, 1), "eval_s": round(util.seconds, 1),
            "label_share_min": float(counts.min() / counts.sum()),
            "label_share_max": float(counts.max() / counts.sum()),
            "calibration": {k: v for k, v in model.calibration.items() if isinstance(v, (int, float))}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(DEFAULT), help=f"comma list of {', '.join(SETUPS)}")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                    help="override a config field for every model that has it")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--classifier", default="mlp", choices=("mlp", "cnn"))
    ap.add_argument("--quick", action="store_true", help="10k training rows (smoke run)")
    ap.add_argument("--threads", type=int, default=2, help="torch threads (the target machine has 2)")
    ap.add_argument("--reference", action="store_true", help="also score a classifier trained on real data")
    ap.add_argument("--validation", action="store_true",
                    help="tune: train on 50k training rows, score on the other 10k (the test set is not read)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    overrides = dict((kv.split("=", 1)[0], _value(kv.split("=", 1)[1])) for kv in args.set)
    train, test = load_split("fashion-mnist", n=10_000 if args.quick else None, seed=args.seed)
    if args.quick:  # load_split's n subsamples the train and test parts alike; keep test whole
        test = load_split("fashion-mnist", seed=args.seed)[1]
    if args.validation:  # a fixed split (seed 0) so every tuning run is scored on the same rows
        train, test = train_test_split(train, test_size=10_000 / train.n, seed=0)
    rows = []
    if args.reference:
        ref = utility_scores(train, test, classifiers=[args.classifier], seed=args.seed)
        rows.append({"setup": "real data", "model": "-", "epsilon": math.inf,
                     "accuracy": ref.mean["accuracy"], "train_sample_s": 0.0})
    for key in args.models.split(","):
        row = run_one(key.strip(), train, test, overrides, args.seed, args.classifier)
        rows.append(row)
        if not args.json:
            print(f"{row['setup']:<10} ε={row['epsilon']:<8.4g} acc={row['accuracy']:.4f} "
                  f"fit={row.get('fit_s')}s sample={row.get('sample_s')}s", flush=True)
    out = {"dataset": "fashion-mnist", "scored_on": "validation" if args.validation else "test",
           "n_train": train.n, "n_test": test.n, "classifier": args.classifier,
           "threads": args.threads, "overrides": overrides, "rows": rows}
    if args.json:
        print(json.dumps(out, indent=2, default=str))
    else:
        print(f"\n| setup | ε | accuracy ({args.classifier}) | train+sample s |\n|---|---|---|---|")
        for r in rows:
            eps = "∞" if math.isinf(r["epsilon"]) else f"{r['epsilon']:.3g}"
            print(f"| {r['setup']} | {eps} | {r['accuracy']:.3f} | {r['train_sample_s']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
