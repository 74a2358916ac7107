"""Study: how far DP-estimated bounds land from a column's true min/max, by table size (findings: the
README's "Your own table (CSV)" and dpcore.ui.schema_editor's default for an upload).

Why: the Data page's default for a fresh upload is either "estimate with DP" (covered by ε, one
ledgered noisy histogram per run) or "read from the rows" (exact, not covered). Which one is
usable depends on the rows: the noisy histogram keeps a power-of-two bin only when its count
clears 3.72 noise sds (3.89 for a year of dates), so a small table loses its sparse ends (clipped)
or every bin (refused).
This draws a patient-like table (age, income with 25 % zeros, bmi, visits, an admission date) at
each size, estimates its bounds `--repeats` times per noise multiplier, and reports per column
the true range, the median DP range, the share of real values the DP range clips and how often
the estimate is refused; with the ε (δ = 1e-5) of the one bounds record alone.

    PYTHONPATH=$PWD .venv/bin/python studies/dp_bounds.py [--rows 120 3000] [--sigmas 2 5 10] [--repeats 20] [--json]
"""
from __future__ import annotations

import argparse
import json

import numpy as np
import pandas as pd

COLUMNS = {"age": "integer", "income": "integer", "bmi": "numeric", "visits": "integer", "admit_date": "date"}


def patients(rows: int, seed: int = 0) -> pd.DataFrame:
    """The generated table of the data owner's journey (issue 24), as text like a CSV."""
    rng = np.random.default_rng(seed)
    income = np.where(rng.random(rows) < 0.25, 0, np.round(rng.lognormal(10, 0.5, rows)))
    days = np.datetime64("2023-01-01") + rng.integers(0, 700, rows)
    return pd.DataFrame({
        "age": rng.integers(18, 91, rows).astype(str), "income": income.astype(int).astype(str),
        "bmi": np.round(rng.normal(26, 4, rows), 1).astype(str), "visits": rng.poisson(3, rows).astype(str),
        "admit_date": pd.Series(days).dt.strftime("%Y-%m-%d"), "target": rng.choice(["0", "1"], rows)})


def measure(rows: int, sigma: float, repeats: int) -> dict:
    from dpcore.data.csv import dataset_from_frame
    from dpcore.errors import DataError
    from dpcore.privacy.accountant import epsilon
    from dpcore.privacy.ledger import PrivacyLedger

    frame = patients(rows)
    exact = dataset_from_frame(frame, target="target", types=COLUMNS)
    truth = {c: (exact.schema.column(c).lower, exact.schema.column(c).upper) for c in COLUMNS}
    found: dict[str, list] = {c: [] for c in COLUMNS}
    refused, eps = 0, None
    for _ in range(repeats):
        try:
            ds = dataset_from_frame(frame, target="target", types=COLUMNS, undeclared="dp",
                                    bounds_noise_multiplier=sigma)
        except DataError:
            refused += 1
            continue
        eps = epsilon(PrivacyLedger.from_list(ds.meta["privacy_records"]), 1e-5)
        for c in COLUMNS:
            found[c].append((ds.schema.column(c).lower, ds.schema.column(c).upper))
    out = {"rows": rows, "sigma": sigma, "repeats": repeats, "refused": refused,
           "epsilon_of_bounds": None if eps is None else round(float(eps), 3), "columns": {}}
    for c in COLUMNS:
        if c == "admit_date":  # learnt as day numbers since 1970-01-01
            x = (pd.to_datetime(frame[c]) - pd.Timestamp("1970-01-01")).dt.days
        else:
            x = pd.to_numeric(frame[c], errors="coerce")
        x = x.to_numpy(dtype=float)
        got = np.array(found[c], dtype=float).reshape(-1, 2)
        clipped = [float(np.mean((x < lo) | (x > hi))) for lo, hi in got]
        out["columns"][c] = {"true": [truth[c][0], truth[c][1]],
                             "dp_median": None if not len(got) else [float(np.median(got[:, 0])),
                                                                     float(np.median(got[:, 1]))],
                             "clipped_share_median": None if not clipped else round(float(np.median(clipped)), 3),
                             "clipped_share_max": None if not clipped else round(float(np.max(clipped)), 3)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[120, 3000])
    ap.add_argument("--sigmas", type=float, nargs="+", default=[2.0, 5.0, 10.0])
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    results = [measure(n, s, args.repeats) for n in args.rows for s in args.sigmas]
    if args.json:
        print(json.dumps(results, indent=1))
        return
    for r in results:
        print(f"rows={r['rows']} σ={r['sigma']:g}: ε(bounds)={r['epsilon_of_bounds']} "
              f"refused {r['refused']}/{r['repeats']}")
        for c, v in r["columns"].items():
            print(f"  {c:11s} true {v['true']}  DP median {v['dp_median']}  clipped median "
                  f"{v['clipped_share_median']} max {v['clipped_share_max']}")


if __name__ == "__main__":
    main()
