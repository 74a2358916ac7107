"""Marginals and utility of a neural model on one table, over seeds: what docs/tabular-heads.md reports.

    python scripts/tabular_marginals.py --dataset credit --model p3gm --seeds 0 1
    python scripts/tabular_marginals.py --data cps1988.csv --schema cps1988.schema.json --model p3gm \
        --seeds 0 1 --set tabular_heads=flat epochs=4

Prints one JSON line per seed: 1-way / 2-way TVD of the synthetic rows against the training rows
(dpcore.evaluate.scoring.score_marginals), TSTR AUROC on the held-out 10 % (mean of the tabular
classifiers), the synthetic label counts, the accountant's ε and the DP-SGD steps. Not covered by ε:
it reads the real rows (a data owner's measurement).
"""
from __future__ import annotations

import argparse
import json
import time


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset")
    p.add_argument("--data")
    p.add_argument("--schema")
    p.add_argument("--model", default="p3gm")
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE", help="config overrides")
    args = p.parse_args()

    import numpy as np

    from dpcore.data import load_split
    from dpcore.data.split import train_test_split
    from dpcore.evaluate.scoring import score_marginals, score_utility
    from dpcore.jobs.sweep import coerce
    from dpcore.models import get_model

    if args.data:
        from dpcore.data.csv import read_csv

        doc = json.load(open(args.schema)) if args.schema else {}
        ds = read_csv(args.data, target=doc.get("target"), types=doc.get("types"), bounds=doc.get("bounds"),
                      categories=doc.get("categories"))
        train, test = train_test_split(ds, test_size=0.1, seed=0)
    else:
        train, test = load_split(args.dataset, seed=0)
    overrides = dict(kv.split("=", 1) for kv in args.set)
    cls = get_model(args.model)
    for seed in args.seeds:
        kw = {k: coerce(args.model, k, v) for k, v in overrides.items()}  # the field's own type
        if cls.private:
            kw["epsilon"] = args.epsilon
        t0 = time.time()
        model = cls(seed=seed, **kw)
        fit = model.fit(train)
        synth = model.sample(train.n, seed=seed)
        marg = score_marginals(synth, train)
        util = score_utility(synth, train, test, seed=seed)
        print(json.dumps({
            "data": args.data or args.dataset, "model": args.model, "seed": seed, "overrides": overrides,
            "epsilon": round(fit.epsilon, 4), "sgd_steps": model.calibration.get("sgd_steps"),
            "tvd_1way": round(marg["tvd_1way"], 4), "tvd_2way": round(float(marg["tvd_2way"]), 4),
            "tstr_auroc": None if util is None else round(util.mean.get("auroc", float("nan")), 4),
            "synthetic_labels": np.bincount(synth.labels, minlength=train.n_classes).tolist(),
            "real_labels": np.bincount(train.labels, minlength=train.n_classes).tolist(),
            "seconds": round(time.time() - t0, 1)}), flush=True)


if __name__ == "__main__":
    main()
