"""`python -m dpcore evaluate runs/NAME [--json] [--report FILE.html [--report-kind shareable|private]
[--report-rows N]]`.

Scores a saved run (utility on the real test split, 1-/2-way marginals, the attack ladder: the best
attack's AUC and ε lower bound, checked against the accountant's ε), writes the summary into the run's evaluation.json and prints it — these scores are not
covered by ε, and the JSON says which outputs are. `--report` also writes a one-file HTML export:
by default the shareable release (only what ε covers); `--report-kind private` the data owner's
full report. Both open with a summary and embed `--report-rows` synthetic rows (default 1000) as CSV.
"""
from __future__ import annotations

from dpcore.cli.args import integer

import time
from pathlib import Path


def register(sub) -> None:
    p = sub.add_parser("evaluate", help="score a saved run: utility, marginals, membership attacks")
    p.add_argument("run", help="run folder (e.g. runs/NAME)")
    p.add_argument("--n-targets", type=integer, default=1000,
                   help="members and non-members each used as attack targets (default 1000)")
    p.add_argument("--n-samples", type=integer, default=None,
                   help="synthetic rows to draw (default: as many as training rows, capped)")
    p.add_argument("--seed", type=integer, default=0)
    p.add_argument("--report", default=None, help="also write a self-contained HTML report here")
    p.add_argument("--report-kind", choices=("shareable", "private"), default="shareable",
                   help="shareable (default): only outputs covered by ε; private: everything, incl. real "
                        "rows and attack statistics, for the data owner only")
    p.add_argument("--report-rows", type=integer, default=None,
                   help="synthetic rows in the report's CSV download (default 1000; numbers rounded to the "
                        "input's precision)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def _summary(evaluation: dict) -> dict:
    util = evaluation.get("utility")
    out: dict = {}
    if util:
        out["utility"] = {**util.get("classifiers", {}), "mean": util.get("mean", {}),
                          "reference": (util.get("reference") or {}).get("mean")}
    marg = evaluation.get("marginals", {})
    out["marginals"] = {"tvd_1way": marg.get("tvd_1way"), "tvd_2way": marg.get("tvd_2way")}
    ladder = evaluation.get("attacks", {})
    out["attacks"] = {"best": ladder.get("best"), "skipped": ladder.get("skipped", {}),
                      "attacks": [{k: a.get(k) for k in ("name", "auc", "epsilon_lower_bound", "consistent_with_epsilon")
                                   if k in a} for a in ladder.get("attacks", [])]}
    return out


def run(args) -> int:
    from dpcore.cli import print_json
    from dpcore.errors import InvalidParameter, RunError
    from dpcore.privacy.coverage import run_coverage
    from dpcore.report import evaluate_run, load_bundle, run_report

    if args.n_targets < 10:
        raise InvalidParameter(f"--n-targets must be >= 10, got {args.n_targets}")
    from dpcore.cli.paths import check_out_file
    from dpcore.errors import check_int
    from dpcore.limits import check_samples
    from dpcore.runs import Run

    from dpcore.limits import check_seed, check_targets

    check_seed(args.seed)
    check_targets(args.n_targets)
    if args.n_samples is not None:
        check_samples(check_int("--n-samples", args.n_samples, minimum=1), "--n-samples")
    if args.n_targets > 1_000_000:
        raise InvalidParameter(f"--n-targets must be at most 1000000, got {args.n_targets}")
    if args.report_rows is not None:
        check_samples(check_int("--report-rows", args.report_rows, minimum=1), "--report-rows")
        if not args.report:
            raise InvalidParameter("--report-rows applies to --report FILE.html only")
    if args.report is not None:
        check_out_file(args.report, (".html", ".htm"), "--report")
    if not Path(args.run).is_dir():
        raise RunError(f"no run folder at {args.run}")
    if not Run(args.run).has_model():
        raise RunError(f"run {args.run!r} has no saved model (status: {Run(args.run).status()['status']})")
    start = time.perf_counter()
    bundle = load_bundle(args.run, n_samples=args.n_samples, seed=args.seed)
    if args.report and args.report_kind == "private":
        html = run_report(args.run, kind="private", n_targets=args.n_targets, seed=args.seed, bundle=bundle,
                          rows=args.report_rows)
        from dpcore.report import load_evaluation
        evaluation = load_evaluation(args.run)
    else:
        evaluation = evaluate_run(bundle, n_targets=args.n_targets, seed=args.seed)["summary"]
        html = run_report(args.run, kind="shareable", seed=args.seed, bundle=bundle,
                          rows=args.report_rows) if args.report else None
    if html is not None:
        from dpcore.io import atomic_write_bytes

        atomic_write_bytes(args.report, html.encode("utf-8"))  # a full disk leaves no half a report
    out = {"run": str(args.run), "epsilon": bundle.run.epsilon, **_summary(evaluation),
           "test": evaluation.get("test", "held-out split"), "warnings": list(evaluation.get("warnings", [])),
           **run_coverage(bundle.private, bundle.train.preprocessing_private, bundle.seeded_noise),
           "seconds": round(time.perf_counter() - start, 2)}
    if args.report:
        out["report"] = str(args.report)
        out["report_kind"] = args.report_kind
    if args.json:
        print_json(out)
    else:
        util = out.get("utility", {}).get("mean", {})
        print(f"run {out['run']}  ε = {out['epsilon']}")
        if bundle.test is None:
            print(f"test split: {out['test']}")
        if util:
            print("utility (mean): " + ", ".join(f"{k} {v:.3f}" for k, v in util.items()
                                                 if isinstance(v, float)))
        print(f"marginal TVD: 1-way {out['marginals']['tvd_1way']:.3f}, "
              f"2-way {out['marginals']['tvd_2way']:.3f}")
        best = out["attacks"]["best"]
        if best:
            ok = best.get("consistent_with_epsilon")
            print(f"best membership attack {best['name']}: AUC {best['auc']:.3f}, empirical ε lower bound "
                  f"{best['epsilon_lower_bound']:.2f}"
                  + ("" if ok is None else f", consistent with the accountant's ε: {'yes' if ok else 'NO'}"))
        for w in out["warnings"]:
            print(f"warning: {w}")
        print(f"{out['seconds']} s")
    return 0
