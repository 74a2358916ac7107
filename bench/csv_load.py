"""Benchmark: wide and long CSVs through `read_csv` (parse, schema inference, encoding).

Regenerates: the "schema inference, 5 000 columns × 2 000 rows" row of docs/benchmarks.md's "Latest"
table.

Why: the only limit on uploads used to be bytes; a 49 MB CSV of 4 900 columns spent 98 s and
1 GB in schema inference and 12.4 M short rows took 35 s. This times each stage on generated
files (written to a temporary folder, removed afterwards) and reports wall and CPU seconds.

    .venv/bin/python bench/csv_load.py [--columns 5000] [--rows 2000] [--long-rows 12400000] [--json]
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np


def _timed(fn):
    w, c = time.perf_counter(), time.process_time()
    try:
        out, err = fn(), None
    except Exception as exc:  # noqa: BLE001 - a cap refusing the file is a result, not a crash
        out, err = None, f"{type(exc).__name__}: {exc}"
    return out, round(time.perf_counter() - w, 3), round(time.process_time() - c, 3), err


def wide_csv(path: Path, columns: int, rows: int, seed: int = 0) -> None:
    """Integer, decimal and short-text columns in turn, about 5 bytes a cell, a few cells empty."""
    rng = np.random.default_rng(seed)
    cells = []
    for j in range(columns):
        kind = j % 3
        if kind == 0:
            col = rng.integers(0, 100, rows).astype(str)
        elif kind == 1:
            col = np.char.mod("%.2f", rng.normal(0, 10, rows))
        else:
            col = np.array(["a", "b", "c", "d"])[rng.integers(0, 4, rows)]
        col = np.where(rng.random(rows) < 0.01, "", col)
        cells.append(col)
    body = np.stack(cells, axis=1)
    with open(path, "w") as fh:
        fh.write(",".join(f"c{j}" for j in range(columns)) + "\n")
        fh.write("\n".join(",".join(r) for r in body) + "\n")


def long_csv(path: Path, rows: int) -> None:
    with open(path, "w") as fh:
        fh.write("a,b\n")
        fh.write("".join(f"{i % 7},{i % 5}\n" for i in range(min(rows, 1_000_000))) * max(1, rows // 1_000_000))


def main() -> int:
    from dpcore.data import read_csv
    from dpcore.data.csv import parse_csv
    from dpcore.data.infer import infer_schema

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--columns", type=int, default=5000)
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--long-rows", type=int, default=12_400_000)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    big = 10**9  # the benchmark measures the work, so every cap is lifted except where noted
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        wide = Path(tmp) / "wide.csv"
        wide_csv(wide, args.columns, args.rows)
        out["wide_mb"] = round(wide.stat().st_size / 2**20, 1)
        frame, *t = _timed(lambda: parse_csv(wide, max_bytes=big))
        out["wide_parse"] = t
        _, *t = _timed(lambda: infer_schema(frame))
        out["wide_infer_schema"] = t
        narrow = Path(tmp) / "narrow.csv"  # read_csv wants more rows than columns
        wide_csv(narrow, args.rows - 100, args.rows)
        _, *t = _timed(lambda: read_csv(narrow, max_bytes=big))
        out[f"read_csv_{args.rows - 100}_columns"] = t
        long = Path(tmp) / "long.csv"
        long_csv(long, args.long_rows)
        out["long_mb"] = round(long.stat().st_size / 2**20, 1)
        _, *t = _timed(lambda: read_csv(long, max_bytes=big))
        out["long_read_csv_default_caps"] = t
        _, *t = _timed(lambda: read_csv(long, max_bytes=big, max_rows=big))
        out["long_read_csv_no_row_cap"] = t
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for k, v in out.items():
            print(f"{k:<28} {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
