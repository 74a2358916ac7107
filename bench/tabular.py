"""Benchmark (not a test): P3GM, DP-VAE, AIM and MST on the tabular built-ins `cps1988` (28 155 × 7)
and `credit` (4 454 × 14) and the generated small wide table `wide` (1 470 × 31, bench/wide_table.py)
at ε = 1 and 4, through the workbench's public path (registry `load_split`, `make_model(...).fit`,
`sample`, `dpcore.evaluate`). `wide-choose` is the same recipe drawn with another generator seed:
the table defaults are chosen on (with credit); `wide` is only scored. `journey` is issue 40's journey
table (bench/journey_table.py: Ecdat::Hdma's 2 380 mortgage applications plus a date, a money column
of 61.8 % zeros, a 12-row lender and gaps), read as the Data page reads the uploaded file with nothing
declared; not in the default datasets.

Regenerates: docs/tabular.md#benchmark, its wide-table tables (#scored-on-wide-the-table-nothing-was-chosen-on),
the journey table's ranking (#which-model-to-start-with-issue-40) and the README's "Tabular models" table.

Per cell (model, dataset, ε, seed): the accountant's ε, the mean 1-way TVD (20 bins) and 2-way TVD
(5 bins, all pairs) of the synthetic rows against the *training* rows the model was fitted to and
against the held-out test rows, TSTR AUC (train on synthetic, test on the real test split) of
logistic regression and gradient boosting, how many target classes the synthetic rows contain,
fit time, and what the binned TVDs do not see: the worst relative error of a numeric column's 99th
percentile (tails) and how many columns miss it by more than 10 %, the worst gap of a point-mass
share (a numeric column's most frequent value when it holds ≥ 10 % of the real rows, e.g. zeros)
and the declared levels the real rows use that the synthetic rows never take (all three against
the training rows). One reference row per dataset ("real train"): the training rows themselves
scored the same way: TVD train-vs-test is the sampling floor no synthetic set can beat against the test
rows, and its AUCs are train-on-real. The split is the same for every cell (`--split-seed`); the
seeds vary the models. sdmetrics is not in the workbench's environment (it pins pandas < 3): for its
scores, `--save-synthetic DIR` writes every cell's synthetic rows, the train and test rows (decoded
to the user's columns) and sdmetrics metadata, which `bench/sdmetrics_scores.py DIR` scores in an
environment of its own. DIR holds real rows: a bench output, never committed (`bench/out/` is ignored).

    .venv/bin/python bench/tabular.py [--models p3gm,dp-vae,aim,mst] [--datasets cps1988,credit,wide]
        [--epsilons 1,4] [--seeds 0,1] [--aim-time 60] [--json] [--quick] [--save-synthetic DIR]

`--floors` adds two model-free rows per dataset (resampled training rows; every column shuffled on its
own) and, for each model's cell, its synthetic rows scored again with their columns shuffled apart;
`--no-models` leaves the models out.
`--quick`: ε = 1, seed 0, AIM max_time 10 s, 2 epochs for the neural models (a smoke run).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from dpcore.data import load_split
from dpcore.evaluate import one_way_tvd, two_way_tvd, utility_scores
from dpcore.models import make_model

MODELS = ("p3gm", "dp-vae", "aim", "mst")
DATASETS = ("cps1988", "credit", "wide", "wide-choose", "journey")
DEFAULT_DATASETS = ("cps1988", "credit", "wide")
POINT_MASS = 0.10  # a value holding this share of a numeric column's real rows is a point mass
Q99_GOAL = 0.10  # issue 29: every numeric column's 99th percentile within 10 % of the real one
CLASSIFIERS = ("logistic_regression", "gradient_boosting")
SDMETRICS = ("sdmetrics is not in this environment (it pins pandas < 3): for its scores run with "
             "--save-synthetic DIR, then bench/sdmetrics_scores.py DIR in an environment that has it")
# Workbench column kind -> sdmetrics sdtype (and the pandas-side representation it is told about).
SDTYPES = {"numeric": ("numerical", "Float"), "integer": ("numerical", "Int64"),
           "categorical": ("categorical", None), "boolean": ("boolean", None)}


def _csv(kind, cast, choices=None):
    def parse(text: str):
        try:
            vals = [cast(v) for v in text.split(",") if v.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"{kind}: expected a comma-separated list, got {text!r}") from None
        bad = [v for v in vals if choices is not None and v not in choices]
        if not vals or bad:
            raise argparse.ArgumentTypeError(f"{kind}: choose from {', '.join(choices)}" if bad
                                             else f"{kind}: empty list")
        return vals
    return parse


def marginals(real, synth) -> dict:
    one = one_way_tvd(real, synth)
    return {"tvd_1way": float(np.mean(list(one.values()))), "tvd_2way": two_way_tvd(real, synth)[0]}


def shape_checks(real, synth) -> dict:
    """Tails, point masses and levels (decoded columns) of `synth` against `real`.

    q99: per numeric/integer column |q99(synth) − q99(real)| / |q99(real)| (the worst, and which);
    point masses: |share(synth) − share(real)| of each such column's real mode when it holds
    ≥ POINT_MASS of the rows; levels: declared categories present in `real`, absent in `synth`."""
    r, s = real.to_frame(), synth.to_frame()
    q99, mass, missing = {}, {}, []
    for c in real.schema.columns:
        a, b = r[c.name].dropna(), s[c.name].dropna()
        if c.kind in ("numeric", "integer"):
            qa = float(np.quantile(a.astype(float), 0.99))
            qb = float(np.quantile(b.astype(float), 0.99)) if len(b) else float("nan")
            q99[c.name] = abs(qb - qa) / max(abs(qa), 1e-9)
            share = a.value_counts(normalize=True)
            if len(share) and share.iloc[0] >= POINT_MASS:
                mass[c.name] = abs(float((b == share.index[0]).mean()) - float(share.iloc[0]))
        else:
            missing += [f"{c.name}={v}" for v in sorted(set(a.astype(str)) - set(b.astype(str)))]
    worst = max(q99, key=q99.get) if q99 else None
    heavy = max(mass, key=mass.get) if mass else None
    return {"q99_worst": q99.get(worst, float("nan")), "q99_worst_column": worst, "q99": q99,
            "q99_off": f"{sum(v > Q99_GOAL for v in q99.values())}/{len(q99)}",
            "mass_worst": mass.get(heavy, float("nan")), "mass_worst_column": heavy, "mass": mass,
            "levels_missing": missing}


def scores(synth, train, test, seed: int) -> dict:
    """TVDs against train and test, TSTR AUC per classifier, classes present, tails and levels."""
    out = {f"{k}_train": v for k, v in marginals(train, synth).items()}
    out.update({f"{k}_test": v for k, v in marginals(test, synth).items()})
    util = utility_scores(synth, test, classifiers=list(CLASSIFIERS), seed=seed)
    out.update({f"auc_{c}": util.rows[c]["auroc"] for c in CLASSIFIERS})
    out["classes"] = f"{len(np.unique(synth.labels))}/{test.n_classes}"
    out.update(shape_checks(train, synth))
    return out


def params(model: str, eps: float, seed: int, aim_time: float, quick: bool, overrides=None) -> dict:
    """The cell's config: ε, seed, AIM's max_time, `--set` overrides of the fields this model has."""
    from dataclasses import fields

    from dpcore.jobs.sweep import coerce
    from dpcore.models import config_class

    p = {"epsilon": eps, "seed": seed}
    names = {f.name for f in fields(config_class(model))}
    p.update({k: coerce(model, k, v) for k, v in (overrides or {}).items() if k in names})
    if model == "aim":
        p["max_time"] = aim_time
    if quick and model in ("p3gm", "dp-vae"):
        p["epochs"] = 2
    return p


def sdmetrics_metadata(schema) -> dict:
    """sdmetrics' single-table metadata (SINGLE_TABLE_V1) from the public schema, target included."""
    columns = {}
    for c in schema.columns:
        sdtype, representation = SDTYPES[c.kind]
        columns[str(c.name)] = {"sdtype": sdtype} | ({"computer_representation": representation}
                                                     if representation else {})
    return {"METADATA_SPEC_VERSION": "SINGLE_TABLE_V1", "columns": columns}


def synthetic_path(directory, data, model, eps, seed) -> str:
    return os.path.join(directory, f"{data}-{model}-eps{eps:g}-s{seed}.csv")


def write_csv(ds, path) -> None:
    """Rows decoded to the user's columns, types and category names (missing values as empty cells)."""
    ds.to_frame().to_csv(path, index=False)


def save_reference(directory, data, train, test) -> None:
    """`<data>-train.csv`, `<data>-test.csv` (decoded like the synthetic rows) and `metadata-<data>.json`."""
    for split, ds in (("train", train), ("test", test)):
        write_csv(ds, os.path.join(directory, f"{data}-{split}.csv"))
    with open(os.path.join(directory, f"metadata-{data}.json"), "w", encoding="utf-8") as fh:
        json.dump(sdmetrics_metadata(train.schema), fh, indent=1)


def run_cell(model, data, eps, seed, train, test, aim_time, quick, save_dir=None, overrides=None,
             shuffled=False) -> list[dict]:
    """The cell's row; with `shuffled`, also its synthetic rows scored with the columns shuffled apart
    (`shuffle_columns`): what of its 2-way TVD its links earn, what its 1-ways alone give."""
    m = make_model(model, **params(model, eps, seed, aim_time, quick, overrides))
    t0 = time.perf_counter()
    result = m.fit(train)
    fit_s = time.perf_counter() - t0
    synth = m.sample(train.n, seed=seed)
    if save_dir is not None:
        write_csv(synth, synthetic_path(save_dir, data, model, eps, seed))
    row = {"model": model, "dataset": data, "epsilon_target": eps, "seed": seed,
           "epsilon": float(result.epsilon), "fit_s": fit_s,
           "selected": [list(c) for c in getattr(m, "calibration", {}).get("selected", [])]}
    row.update(scores(synth, train, test, seed))
    if shuffled:
        apart = {k: row[k] for k in ("dataset", "epsilon_target", "seed", "epsilon", "fit_s")}
        apart["model"] = f"{model}, columns shuffled apart"
        apart.update(scores(shuffle_columns(synth, np.random.default_rng(seed)), train, test, seed))
        return [row, apart]
    return [row]


def floor_row(data, train, test) -> dict:
    row = {"model": "real train", "dataset": data, "epsilon_target": None, "seed": None, "epsilon": None,
           "fit_s": None}
    row.update(scores(train, train, test, 0))
    row.update(shape_checks(train, test))  # the test rows' tails against train: the sampling floor
    return row


def shuffle_columns(data, rng: np.random.Generator):
    """`data` with every column (its encoded blocks together) and the labels shuffled on their own:
    the same 1-way marginals, no link left between any two columns."""
    X = np.array(data.features, copy=True)
    for column in dict.fromkeys(b.column for b in data.encoder.blocks):
        idx = np.concatenate([np.arange(b.start, b.stop) for b in data.encoder.blocks if b.column == column])
        X[:, idx] = X[rng.permutation(data.n)][:, idx]
    labels = None if data.labels is None else data.labels[rng.permutation(data.n)]
    return data.with_features(X, labels)


def reference_rows(data, train, test, seed: int = 0) -> list[dict]:
    """Two generators that need no model, scored like one (`--floors`): the training rows resampled
    with replacement (a perfect model's sampling noise at this many rows) and the training rows
    with every column shuffled on its own (exact 1-way marginals, no link between any two columns).
    Why: they tell how much of a 2-way TVD is sampling, how much the columns' links, and so how much
    is left to a model's 1-ways."""
    rng = np.random.default_rng(seed)
    boot = train.subset(rng.integers(0, train.n, train.n))
    out = []
    for name, synth in (("resampled train", boot), ("independent columns", shuffle_columns(train, rng))):
        row = {"model": name, "dataset": data, "epsilon_target": None, "seed": seed, "epsilon": None, "fit_s": None}
        row.update(scores(synth, train, test, seed))
        out.append(row)
    return out


def load(data: str, split_seed: int):
    """(train, test): a built-in through the registry, the generated wide table or the journey table."""
    if data == "journey":
        import journey_table  # bench/journey_table.py

        return journey_table.load(split_seed)
    if data.startswith("wide"):
        import wide_table  # bench/wide_table.py: `python bench/tabular.py` puts bench/ on the path

        seed = wide_table.CHOOSE_SEED if data == "wide-choose" else wide_table.SCORE_SEED
        return wide_table.load(seed, split_seed)
    return load_split(data, seed=split_seed)


def fmt(v, nd=3):
    if v is None:
        return "–"
    if isinstance(v, float):
        return "nan" if v != v else f"{v:.{nd}f}"
    return str(v)


def _worst(r, key) -> str:
    v, col = r.get(f"{key}_worst"), r.get(f"{key}_worst_column")
    return "–" if col is None else f"{fmt(v, 2)} ({col})"


def table(rows) -> str:
    head = ("| dataset | model | ε target | seed | ε (accountant) | 1-way TVD train | 2-way TVD train | "
            "1-way TVD test | 2-way TVD test | AUC LR | AUC GB | classes | q99 worst | q99 > 10 % | "
            "point mass worst | levels missing | fit s |")
    lines = [head, "|" + "---|" * 17]
    for r in rows:
        lines.append("| " + " | ".join([
            r["dataset"], r["model"], fmt(r["epsilon_target"], 0), fmt(r["seed"]), fmt(r["epsilon"], 4),
            fmt(r["tvd_1way_train"], 4), fmt(r["tvd_2way_train"], 4), fmt(r["tvd_1way_test"], 4),
            fmt(r["tvd_2way_test"], 4), fmt(r["auc_logistic_regression"]), fmt(r["auc_gradient_boosting"]),
            r["classes"], _worst(r, "q99"), r.get("q99_off", "–"), _worst(r, "mass"), str(len(r.get("levels_missing", []))),
            fmt(r["fit_s"], 0)]) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", type=_csv("--models", str, MODELS), default=list(MODELS))
    ap.add_argument("--datasets", type=_csv("--datasets", str, DATASETS), default=list(DEFAULT_DATASETS))
    ap.add_argument("--epsilons", type=_csv("--epsilons", float), default=[1.0, 4.0])
    ap.add_argument("--seeds", type=_csv("--seeds", int), default=[0, 1])
    ap.add_argument("--split-seed", type=int, default=0)
    ap.add_argument("--aim-time", type=float, default=60.0, help="AIM's max_time (seconds of rounds)")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON instead of a table")
    ap.add_argument("--quick", action="store_true", help="ε = 1, seed 0, AIM 10 s, 2 epochs (smoke run)")
    ap.add_argument("--save-synthetic", metavar="DIR", default=None,
                    help="write each cell's synthetic rows, the train/test rows and sdmetrics metadata to DIR")
    ap.add_argument("--floors", action="store_true",
                    help="also score resampled training rows, the training rows' columns shuffled apart and each "
                         "cell's synthetic rows with their columns shuffled apart")
    ap.add_argument("--no-models", action="store_true", help="only the reference rows (with --floors)")
    ap.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE",
                    help="config overrides, applied to the models that have the field (e.g. target_weight=4)")
    args = ap.parse_args(argv)
    if any("=" not in kv for kv in args.set):
        ap.error("--set: expected FIELD=VALUE")
    overrides = dict(kv.split("=", 1) for kv in args.set)
    if any(not (e > 0 and np.isfinite(e)) for e in args.epsilons):
        ap.error("--epsilons: every ε must be a positive finite number")
    if not args.aim_time > 0:
        ap.error("--aim-time: must be positive")
    if args.save_synthetic is not None:
        try:
            os.makedirs(args.save_synthetic, exist_ok=True)
        except OSError as exc:
            ap.error(f"--save-synthetic: cannot create directory {args.save_synthetic!r} ({exc.strerror})")
    if args.quick:
        args.epsilons, args.seeds, args.aim_time = [args.epsilons[0]], [args.seeds[0]], min(args.aim_time, 10.0)
    if args.save_synthetic is None:
        print(SDMETRICS, file=sys.stderr)
    rows = []
    for data in args.datasets:
        train, test = load(data, args.split_seed)
        rows.append(floor_row(data, train, test))
        if args.floors:
            rows.extend(reference_rows(data, train, test))
        if args.save_synthetic is not None:
            save_reference(args.save_synthetic, data, train, test)
        for model in [] if args.no_models else args.models:
            for eps in args.epsilons:
                for seed in args.seeds:
                    cell = run_cell(model, data, eps, seed, train, test, args.aim_time, args.quick,
                                    save_dir=args.save_synthetic, overrides=overrides, shuffled=args.floors)
                    rows.extend(cell)
                    row = cell[0]
                    print(f"{data} {model} ε={eps:g} seed={seed}: 1-way {row['tvd_1way_train']:.4f} "
                          f"2-way {row['tvd_2way_train']:.4f} (train), AUC {row['auc_logistic_regression']:.3f} / "
                          f"{row['auc_gradient_boosting']:.3f}, fit {row['fit_s']:.0f} s",
                          file=sys.stderr, flush=True)
    print(json.dumps(rows, indent=1) if args.json else table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
