"""`python -m dpcore sample RUN …`: draw synthetic rows from a saved run into a file."""
from __future__ import annotations

from dpcore.cli.args import integer


def register(sub) -> None:
    s = sub.add_parser("sample", help="draw synthetic rows from a trained run",
                       description="Sample rows from a saved run into .csv, .npz or .png (image grid).")
    s.add_argument("run", help="run folder")
    s.add_argument("--n", type=integer, default=1000, help="rows to draw (default 1000)")
    s.add_argument("--out", required=True, help="output file: .csv, .npz or .png")
    s.add_argument("--seed", type=integer, default=0, help="sampling seed (default 0)")
    s.add_argument("--raw", action="store_true",
                   help="CSV: keep cells that start with = + - @ as they are (by default they are "
                        "prefixed with ' so spreadsheets do not run them as formulas)")
    s.add_argument("--json", action="store_true", help="print one JSON object")
    s.set_defaults(func=cmd_sample)


def cmd_sample(args) -> int:
    from dpcore.cli import print_json
    from dpcore.cli.paths import check_out_file
    from dpcore.errors import check_int
    from dpcore.limits import check_samples, check_seed
    from dpcore.runs import Run
    from dpcore.runs.export import FORMATS, write_samples

    n = check_samples(check_int("--n", args.n, minimum=1), "--n")
    check_seed(args.seed)
    check_out_file(args.out, FORMATS)
    run = Run.load(args.run)
    model = run.load_model()
    data = model.sample(n, seed=args.seed)
    info = write_samples(data, args.out, raw=args.raw)
    info.update(run=str(run.path), model=run.config.model, seed=args.seed, epsilon=run.epsilon)
    if args.json:
        print_json(info)
    else:
        print(f"wrote {info['rows']} rows to {info['path']}")
    return 0
