"""`python -m dpcore datasets [--json] [--schema NAME]`: the built-in datasets, sizes, availability."""
from __future__ import annotations

import argparse


def register(sub) -> None:
    p = sub.add_parser("datasets", help="list built-in datasets (sizes, kinds, availability)",
                       description="List the built-in datasets: rows, feature columns, encoded width, "
                                   "kind, labels and whether they are installed (else how to install).")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--schema", metavar="NAME", help="print the public schema of a tabular built-in")
    p.set_defaults(func=_datasets)


def _datasets(args: argparse.Namespace) -> int:
    from dpcore.cli import print_json
    from dpcore.data.registry import list_datasets, load_table

    if args.schema is not None:
        from dpcore.limits import check_name

        check_name(args.schema, "--schema")
        from dpcore.data import builtin_schemas as bs
        from dpcore.data.registry import _canonical_name

        key = _canonical_name(args.schema)
        schema = {"caravan": bs.caravan_schema, "credit": bs.credit_schema, "cps1988": bs.cps1988_schema,
                  "two-gaussians": lambda: bs.two_gaussians_schema(10)}.get(key)
        if schema is None:
            load_table(key)  # raises: image sets have no table schema
        doc = schema().to_dict()
        if args.json:
            print_json(doc)
        else:
            for c in doc["columns"]:
                dom = c["categories"] if c["categories"] is not None else [c["lower"], c["upper"]]
                role = " (target)" if c["name"] == doc["target"] else ""
                print(f"{c['name']:<12} {c['kind']:<12} {'nullable' if c['nullable'] else '':<9}{dom}{role}")
        return 0
    infos = list_datasets()
    if args.json:
        print_json({"datasets": [i.to_dict() for i in infos]})
        return 0
    head = f"{'name':<14} {'kind':<8} {'rows':>7} {'columns':>8} {'features':>9} {'classes':>8}  available"
    print(head)
    print("-" * len(head))
    for i in infos:
        avail = "yes" if i.available else f"no: {i.hint}"
        classes = str(i.n_classes) if i.labelled else "-"
        print(f"{i.name:<14} {i.kind:<8} {i.rows:>7} {i.columns:>8} {i.features:>9} {classes:>8}  {avail}")
    return 0
