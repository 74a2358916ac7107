"""`python -m dpcore sweep …`: a grid × seeds of runs, on Ray or in-process, resumable.

    python -m dpcore sweep --model p3gm --dataset digits --grid epsilon=0.5,1,2,4 \\
        --grid encoder_share=0.1,0.3,0.5 --seeds 2 [--backend ray|in-process] [--address ADDR] --json
    python -m dpcore sweep --file sweep.toml --json

Run it again and it skips the finished runs. Ctrl-C stops it (the next call resumes). `--select`
releases one run by private selection (Papernot & Steinke 2022) with the selection in its ε.
"""
from __future__ import annotations

import math
import sys
import threading

from dpcore.cli.args import integer, number

_SELECT = {"negative-binomial": "negative_binomial", "poisson": "poisson"}


def register(sub) -> None:
    p = sub.add_parser("sweep", help="train a grid of runs (× seeds) on Ray or in-process",
                       description="Train and score every point of a parameter grid (× seeds) as normal "
                                   "runs; a rerun skips finished runs. See docs/sweeps.md.")
    p.add_argument("--file", metavar="SWEEP.toml", help="the sweep as a TOML file (flags override it)")
    p.add_argument("--name", help="sweep name (default: model-data-<hash of the grid>)")
    p.add_argument("--model", help="which synthesizer")
    p.add_argument("--dataset", help="a built-in dataset")
    p.add_argument("--data", metavar="FILE.csv", help="a CSV file instead of --dataset")
    p.add_argument("--target", help="label column of --data")
    p.add_argument("--rows", type=integer, default=None, help="keep a seeded subset of at most ROWS rows")
    p.add_argument("--grid", action="append", default=[], metavar="NAME=V1,V2,…",
                   help="one axis of the grid (repeat for more axes)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="a fixed parameter of every run (repeat)")
    p.add_argument("--seeds", type=integer, default=None, help="seeds per point (default 1)")
    p.add_argument("--scores", default=None, help="comma list among utility,marginals,mia "
                                                 "(default utility,marginals)")
    p.add_argument("--backend", choices=("auto", "ray", "in-process"), default="auto",
                   help="ray: one run per Ray worker (in-process when Ray is missing or unreachable)")
    p.add_argument("--address", help="an existing Ray cluster (default: start a local one)")
    p.add_argument("--num-cpus", type=integer, default=None, help="local Ray: workers (default: all cores)")
    p.add_argument("--root", default=None, help="runs root (default $DPCORE_RUNS_DIR or runs/); on a "
                   "cluster a shared path every worker reaches")
    sel = p.add_argument_group("private selection (Papernot & Steinke 2022)")
    sel.add_argument("--select", choices=tuple(_SELECT), help="release the best of K random trials, "
                     "K ~ truncated negative binomial or Poisson, with the selection's cost in its ε")
    sel.add_argument("--mean-trials", type=number, default=10.0, help="E[K] (negative binomial; default 10)")
    sel.add_argument("--eta", type=number, default=1.0, help="η of the negative binomial (1 = geometric)")
    sel.add_argument("--mu", type=number, default=10.0, help="μ of the Poisson (default 10)")
    sel.add_argument("--metric", default="utility", choices=("utility", "tvd_2way", "mia_auc"),
                     help="score to select on (default utility)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_sweep)


def _pairs(items, flag: str) -> dict:
    from dpcore.errors import InvalidParameter

    out = {}
    for item in items:
        k, sep, v = item.partition("=")
        if not sep or not k.strip():
            raise InvalidParameter(f"{flag} must look like NAME=VALUE, got {item!r}")
        out[k.strip().replace("-", "_")] = v.strip()
    return out


def build_spec(args):
    """A SweepSpec from the flags and --file (flags win); every problem a one-line error."""
    from pathlib import Path

    from dpcore.errors import InvalidParameter
    from dpcore.jobs.sweep import SweepSpec, load_toml, parse_grid
    from dpcore.limits import check_name, check_params, check_seed, check_sweep_size

    doc = load_toml(args.file) if args.file else {}
    model = args.model or doc.get("model")
    if not model:
        raise InvalidParameter("give --model (or model = … in --file)")
    dataset = args.dataset or (None if args.data else doc.get("dataset"))
    csv = args.data or (None if args.dataset else doc.get("csv"))
    if (dataset is None) == (csv is None):
        raise InvalidParameter("give exactly one of --dataset NAME or --data FILE.csv")
    data = {"dataset": dataset} if dataset else {"csv": str(Path(csv).resolve()),
                                                 "target": args.target or doc.get("target")}
    rows = args.rows if args.rows is not None else doc.get("rows")
    if rows is not None:
        data["n"] = rows
    grid = {k: v if isinstance(v, list) else [v] for k, v in doc.get("grid", {}).items()}
    grid.update(parse_grid(args.grid))
    if not grid:
        raise InvalidParameter("give at least one --grid NAME=V1,V2,… (or a [grid] table in --file)")
    params = {**doc.get("params", {}), **_pairs(args.set, "--set")}
    seeds = args.seeds if args.seeds is not None else doc.get("seeds", 1)
    if isinstance(seeds, int) and seeds < 1:
        raise InvalidParameter(f"--seeds must be >= 1, got {seeds}")
    check_sweep_size(math.prod(len(v) for v in grid.values()), seeds if isinstance(seeds, int) else len(seeds))
    name = args.name if args.name is not None else doc.get("name")
    if name is not None:
        check_name(name, "--name")
    if args.scores is not None and any(not x.strip() for x in args.scores.split(",")):
        raise InvalidParameter(f"--scores must be a comma-separated list with no empty item, got {args.scores!r}")
    scores = tuple(s.strip() for s in args.scores.split(",")) if args.scores else tuple(
        doc.get("scores", ("utility", "marginals")))
    spec = SweepSpec(model=model, grid=grid, data=data, params=params, seeds=seeds, name=name, scores=scores)
    check_params(spec.params, "--set ")
    for k, values in spec.grid.items():
        for v in values:
            check_params({k: v}, "--grid ")
    for seed in spec.seeds:
        check_seed(seed, "a sweep's seed")
    return spec


def _progress_bar(args, total_hint=None):
    if args.json or args.no_progress or not sys.stderr.isatty():
        return None, None
    from tqdm import tqdm

    bar = tqdm(total=total_hint, unit="run", file=sys.stderr, dynamic_ncols=True)

    def update(p: dict) -> None:
        bar.total = p["total"]
        bar.n = p["done"]
        left = p.get("seconds_left")
        bar.set_postfix_str(f"skipped {p['skipped']}" + (f", ~{left:.0f} s left" if left is not None else ""),
                            refresh=False)
        bar.refresh()
    return bar, update


def cmd_sweep(args) -> int:
    from dpcore.cli import print_json
    from dpcore.cli.train import _stop_on_signals
    from dpcore.errors import InvalidParameter
    from dpcore.jobs.sweep import best_on_private_data, run_sweep

    spec = build_spec(args)
    if args.num_cpus is not None and args.num_cpus < 1:
        raise InvalidParameter(f"--num-cpus must be >= 1, got {args.num_cpus}")
    root = _root(args.root)
    bar, update = _progress_bar(args)
    stop = threading.Event()
    with _stop_on_signals(stop):
        try:
            if args.select:
                from dpcore.jobs.selection import select_private

                dist = _SELECT[args.select]
                sel = select_private(spec, root, distribution=dist, eta=args.eta, mean_trials=args.mean_trials,
                                     mu=args.mu, metric=args.metric, backend=args.backend,
                                     address=args.address, num_cpus=args.num_cpus, stop=stop, progress=update)
                from dpcore.jobs.sweep import load_summary

                summary = load_summary(root, spec.name)
            else:
                summary = run_sweep(spec, root, backend=args.backend, address=args.address,
                                    num_cpus=args.num_cpus, stop=stop, progress=update)
                sel = None
        finally:
            if bar is not None:
                bar.close()
    out = {"backend": summary["backend"], "sweep": spec.name,
           "runs": [{k: r.get(k) for k in ("run", "params", "epsilon", "utility", "status")} for r in summary["runs"]],
           "stopped": summary["stopped"]}
    if summary.get("note"):
        out["note"] = summary["note"]
    best = best_on_private_data(summary, args.metric)
    if best is not None:
        out["best"] = {k: best.get(k) for k in ("run", "params", "epsilon", args.metric, "label")}
    if sel is not None:
        out["backend"] = sel.get("backend", out["backend"])
        out["selection"] = {k: sel.get(k) for k in ("distribution", "expected_trials", "epsilon", "epsilon_single",
                                                    "epsilon_base")}
        out["selection"]["trials"] = [t["run"] for t in sel["trials"]]
        rel = sel.get("released")
        out["released"] = None if rel is None else {k: rel.get(k) for k in ("run", "params", "epsilon", args.metric)}
    if args.json:
        print_json(out)
    else:
        for r in out["runs"]:
            eps = "∞" if math.isinf(r["epsilon"]) else f"{r['epsilon']:.3g}"
            u = "—" if r["utility"] is None else f"{r['utility']:.3f}"
            print(f"{r['status']:<8} ε={eps:<6} utility={u:<6} {r['run']}")
        print(f"backend: {out['backend']}" + (f" ({out['note']})" if out.get("note") else ""))
        if best is not None:
            print(f"{best['label']}: {best['run']}")
        if sel is not None and out["released"]:
            print(f"released by private selection: {out['released']['run']} (ε = {out['released']['epsilon']:.4g} "
                  f"with the selection; one run: {sel['epsilon_single']:.4g})")
    return 130 if summary["stopped"] else 0


def _root(root):
    import os
    from pathlib import Path

    from dpcore.cli.paths import _writable_dir

    path = Path(root or os.environ.get("DPCORE_RUNS_DIR") or "runs")
    _writable_dir(path, "the runs root")
    return path
