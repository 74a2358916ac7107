"""`python -m dpcore evaluate runs/NAME [--json] [--report FILE.html [--report-kind shareable|private]
[--report-rows N]] [--release-score [--score-epsilon E]]`.

Scores a saved run (utility on the real test split, 1-/2-way marginals, the attack ladder: the best
attack's AUC and ε lower bound, checked against the accountant's ε), writes the summary into the run's evaluation.json and prints it — these scores are not
covered by ε, and the JSON says which outputs are. `--report` also writes a one-file HTML export:
by default the shareable release (only what ε covers); `--report-kind private` the data owner's
full report. Both open with a summary and embed `--report-rows` synthetic rows (default 1000) as CSV.
`--release-score` releases the accuracy on the held-out rows with its own Gaussian noise at
`--score-epsilon` (a ledger record: covered by ε, shown in the shareable release).
"""
from __future__ import annotations

import time
from pathlib import Path

from dpcore.cli.args import integer


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
    p.add_argument("--release-score", action="store_true",
                   help="release the held-out balanced accuracy of a classifier trained on the synthetic rows with its "
                        "own Gaussian noise (a ledger record; shown in the shareable release)")
    p.add_argument("--score-epsilon", type=float, default=None,
                   help="ε of the released score alone (default: on a file's keyed split, where it composes in "
                        "parallel with training, the largest that leaves the run's ε as it is; else 0.1)")
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
    from dpcore.limits import check_samples, check_seed, check_targets
    from dpcore.runs import Run

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
    if args.score_epsilon is not None and not args.release_score:
        raise InvalidParameter("--score-epsilon applies to --release-score only")
    if args.score_epsilon is not None and not (0 < args.score_epsilon < float("inf")):
        raise InvalidParameter(f"--score-epsilon must be a finite number > 0, got {args.score_epsilon}")
    if not Path(args.run).is_dir():
        raise RunError(f"no run folder at {args.run}")
    if not Run(args.run).has_model():
        raise RunError(f"run {args.run!r} has no saved model (status: {Run(args.run).status()['status']})")
    start = time.perf_counter()
    bundle = load_bundle(args.run, n_samples=args.n_samples, seed=args.seed)
    released = None
    if args.release_score:
        from dpcore.runs.run_score import default_score_epsilon, release_score

        score_eps = default_score_epsilon(bundle.run) if args.score_epsilon is None else args.score_epsilon
        released = release_score(args.run, score_eps, seed=args.seed, bundle=bundle)
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
    if released is not None:
        out["released_score"] = {k: released.get(k) for k in (
            "balanced_accuracy", "balanced_noise_sd", "balanced_sampling_sd", "accuracy", "noise_sd", "sampling_sd",
            "epsilon", "partition", "run_epsilon")}
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
        if released is not None:
            acc, bal = released["accuracy"], released.get("balanced_accuracy")
            print("released score: " + ("too few held-out rows for an accuracy at this ε" if acc is None else
                                        (f"balanced accuracy {bal:.3f} ± {released['balanced_noise_sd']:.3f} "
                                         "(noise), " if bal is not None else "")
                                        + f"accuracy {acc:.3f} ± {released['noise_sd']:.3f} (noise)")
                  + f", ε {released['epsilon']:.3g} ({'parallel' if released['partition'] else 'sequential'} "
                  f"composition; the run's ε is now {released['run_epsilon']:.4g})")
        for w in out["warnings"]:
            print(f"warning: {w}")
        print(f"{out['seconds']} s")
    return 0
