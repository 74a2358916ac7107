"""`python -m dpcore recommend (--data FILE.csv [--schema S.json] | --dataset NAME) [--time-budget S]
[--json]`: the model to start with and why (dpcore.models.recommend; the Train page preselects the
same one). Only the file's column names and the declared schema enter it, never a value or the
row count; the file is still checked whole, as `train` would read it, so a broken file fails here."""
from __future__ import annotations

import argparse


def register(sub) -> None:
    p = sub.add_parser("recommend", help="which model to start with for a table or an image set, and why",
                       description="Recommend a model from public facts only (image or table, number of "
                                   "columns): P3GM for images, AIM for tables, MST when AIM would be too "
                                   "slow. Prints {\"model\", \"reason\"} with --json.")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--data", metavar="FILE.csv", help="a CSV file (only its column names enter the recommendation)")
    src.add_argument("--dataset", help="a built-in dataset (python -m dpcore datasets)")
    p.add_argument("--schema", metavar="SCHEMA.json", help="the public schema of --data, as for `train` "
                   "(its \"target\" is not counted as a column)")
    p.add_argument("--time-budget", type=float, default=None, metavar="SECONDS",
                   help="seconds a fit may take on two CPU cores (default: no limit)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_recommend)


def _recommend(args: argparse.Namespace) -> int:
    from dpcore.cli import print_json
    from dpcore.limits import check_name
    from dpcore.models.recommend import recommend

    for flag in ("data", "dataset", "schema"):
        if getattr(args, flag) is not None:
            check_name(getattr(args, flag), "--" + flag)
    if args.dataset is not None:
        from dpcore.errors import InvalidParameter

        if args.schema is not None:
            raise InvalidParameter("--schema applies to --data FILE.csv only")
        rec = recommend(args.dataset, time_budget=args.time_budget)
    else:
        from dpcore.cli.paths import check_readable
        from dpcore.cli.train import _declared

        check_readable(args.data, "--data")
        rec = recommend(_header(args.data), schema=_declared(args.schema, args.data), time_budget=args.time_budget)
    if args.json:
        print_json(rec.to_dict())
    else:
        print(f"{rec.model}: {rec.reason}")
    return 0


def _header(path: str):
    """The CSV's columns as an empty DataFrame, after parse_csv's structural checks (one-line errors)."""
    from dpcore.data.csv import parse_csv

    return parse_csv(path).iloc[:0]
