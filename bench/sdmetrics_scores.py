"""sdmetrics' QualityReport on the synthetic sets `bench/tabular.py --save-synthetic DIR` wrote: an
outside opinion next to our own TVDs.

Regenerates: docs/tabular.md#sdmetrics-outside-opinion.

Why a separate environment: sdmetrics pins pandas < 3 and the workbench uses pandas 3, so this
script imports nothing from dpcore and runs with its own Python:

    python3 -m venv /tmp/sdm && /tmp/sdm/bin/pip install sdmetrics==0.32.0   # pandas 2.3.3 comes with it
    .venv/bin/python bench/tabular.py --epsilons 1 --seeds 0 --save-synthetic bench/out
    /tmp/sdm/bin/python bench/sdmetrics_scores.py bench/out [--json]

Each `<dataset>-<model>-eps<ε>-s<seed>.csv` is scored against `<dataset>-train.csv` (the rows the
model was fitted to) with `metadata-<dataset>.json`; `<dataset>-test.csv` scored the same way is the
"real test" reference row (the sampling floor). What the scores are, read in sdmetrics 0.32.0's source:

- Column Shapes: mean over columns of KSComplement (numerical: 1 - Kolmogorov-Smirnov statistic)
  or TVComplement (categorical, boolean: 1 - TVD), i.e. 1 - a 1-way distance.
- Column Pair Trends: two numerical columns -> CorrelationSimilarity, 1 - |r_real - r_synth| / 2
  (Pearson); any other pair -> ContingencySimilarity, 1 - TVD of the 2-way table, a numerical
  column cut into 10 `np.histogram_bin_edges` bins computed on each table separately (real and
  synthetic bins need not line up). By default the report (`real_correlation_threshold` 0.5,
  `real_association_threshold` 0.3) averages only the pairs that are strong in the real rows:
  |Pearson r| > 0.5 for numerical pairs, Cramér's V > 0.3 for the others; weaker pairs get no score
  and are left out. With no pair that strong the property is NaN and the overall score is Column
  Shapes alone. Tables over 50 000 rows are subsampled for ContingencySimilarity.
- Overall: the mean of the two properties.

So the table shows the default pair score with how many pairs it averages, and the pair score over
all pairs (both thresholds 0), which is what our 2-way TVD averages over.
"""
from __future__ import annotations

import argparse
import glob
import html
import json
import math
import os
import re
import sys

CELL = re.compile(r"^(?P<model>.+)-eps(?P<eps>[0-9.e+-]+)-s(?P<seed>\d+)\.csv$")
PAIRS = "Column Pair Trends"


def read_table(path, metadata):
    """A CSV with categorical/boolean columns read as text, so real and synthetic levels compare equal."""
    import pandas as pd

    discrete = [c for c, m in metadata["columns"].items() if m["sdtype"] in ("categorical", "boolean")]
    frame = pd.read_csv(path, dtype={c: str for c in discrete})
    missing = sorted(set(metadata["columns"]) - set(frame.columns))
    if missing:
        raise ValueError(f"{path}: columns missing from the CSV: {', '.join(missing)}")
    return frame[list(metadata["columns"])]


def quality(real, synth, metadata, *, all_pairs: bool) -> dict:
    """Column Shapes, Column Pair Trends (and how many pairs it averages) and the overall score."""
    import warnings

    from sdmetrics.reports import QualityReport

    report = QualityReport()
    if all_pairs:
        report.real_correlation_threshold = report.real_association_threshold = 0
    with warnings.catch_warnings():  # constant columns, pandas dtype notes: not ours to fix here
        warnings.simplefilter("ignore")
        report.generate({"t": real}, {"t": synth}, {"tables": {"t": metadata}}, verbose=False)
    props = dict(zip(*[report.get_properties()[k] for k in ("Property", "Score")]))
    details = report.get_details(PAIRS, table_name="t")
    counted = int(details["Meets Threshold?"].fillna(False).sum()) if "Meets Threshold?" in details else 0
    return {"shapes": float(props["Column Shapes"]), "pairs": float(props[PAIRS]), "pairs_counted": counted,
            "pairs_total": len(details), "overall": float(report.get_score())}


def cells(directory):
    """(dataset, label, ε, seed, path) for each synthetic CSV plus the 'real test' reference rows."""
    datasets = sorted(os.path.basename(p)[len("metadata-"):-len(".json")]
                      for p in glob.glob(os.path.join(directory, "metadata-*.json")))
    out = []
    for data in datasets:
        out.append((data, "real test", None, None, os.path.join(directory, f"{data}-test.csv")))
        for path in sorted(glob.glob(os.path.join(directory, glob.escape(data) + "-*.csv"))):
            m = CELL.match(os.path.basename(path)[len(data) + 1:])
            longer = [d for d in datasets if len(d) > len(data) and os.path.basename(path).startswith(d + "-")]
            if m and not longer:
                out.append((data, m["model"], float(m["eps"]), int(m["seed"]), path))
    return out


def score_dir(directory) -> list[dict]:
    rows, loaded = [], {}
    for data, label, eps, seed, path in cells(directory):
        if data not in loaded:
            with open(os.path.join(directory, f"metadata-{data}.json"), encoding="utf-8") as fh:
                meta = json.load(fh)
            loaded[data] = (meta, read_table(os.path.join(directory, f"{data}-train.csv"), meta))
        meta, train = loaded[data]
        synth = read_table(path, meta)
        default, every = quality(train, synth, meta, all_pairs=False), quality(train, synth, meta, all_pairs=True)
        rows.append({"dataset": data, "model": label, "epsilon_target": eps, "seed": seed,
                     "column_shapes": default["shapes"], "pair_trends": default["pairs"],
                     "pairs_counted": default["pairs_counted"], "pairs_total": default["pairs_total"],
                     "overall": default["overall"], "pair_trends_all": every["pairs"], "overall_all": every["overall"]})
        print(f"{data} {label}: overall {default['overall']:.4f}", file=sys.stderr, flush=True)
    return rows


def cell(v) -> str:
    """A markdown cell: file-derived text escaped, floats to 4 places, missing as a dash."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, float):
        return f"{v:.4f}"
    return html.escape(str(v)).replace("|", "\\|")


def table(rows) -> str:
    lines = ["| dataset | model | ε target | seed | Column Shapes | Column Pair Trends (default) | pairs counted | "
             "Column Pair Trends (all pairs) | overall (default) | overall (all pairs) |", "|" + "---|" * 10]
    for r in rows:
        eps = None if r["epsilon_target"] is None else f"{r['epsilon_target']:g}"
        lines.append("| " + " | ".join(cell(v) for v in (
            r["dataset"], r["model"], eps, r["seed"], r["column_shapes"], r["pair_trends"],
            f"{r['pairs_counted']}/{r['pairs_total']}", r["pair_trends_all"], r["overall"], r["overall_all"])) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("directory", help="the DIR bench/tabular.py --save-synthetic wrote")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON instead of a table")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.directory):
        ap.error(f"directory: {args.directory!r} is not a directory")
    if not glob.glob(os.path.join(args.directory, "metadata-*.json")):
        ap.error(f"directory: no metadata-<dataset>.json in {args.directory!r} (write it with --save-synthetic)")
    try:
        import sdmetrics
    except ImportError:
        print("sdmetrics is not installed in this Python: see this script's docstring", file=sys.stderr)
        return 2
    print(f"sdmetrics {sdmetrics.__version__}", file=sys.stderr)
    rows = score_dir(args.directory)
    print(json.dumps(rows, indent=1) if args.json else table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
