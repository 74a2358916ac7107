"""`python -m dpcore attack RUN [--json] [--attacks …] [--canaries M]`.

Runs the attack ladder on a saved run (members = its training rows, non-members and reference
rows = its held-out rows) and, with --canaries, the one-run canary audit of its training algorithm
(which retrains the model once). Prints the attacks' AUC, TPR at low FPR and empirical ε lower
bound next to the accountant's ε, and saves them (with the best attack) in the run's evaluation.json,
where the Runs table and the private report read them. These numbers are measured against real data: not covered by ε —
data owner only.
"""
from __future__ import annotations

import math
import time
from pathlib import Path

from dpcore.cli.args import integer, number


def register(sub) -> None:
    p = sub.add_parser("attack", help="membership attacks and a canary audit against a saved run",
                       description=__doc__.splitlines()[0])
    p.add_argument("run", help="run folder (e.g. runs/NAME)")
    p.add_argument("--attacks", default="default",
                   help="comma-separated: dcr, monte-carlo, gan-leaks, domias, loss, loss-reference "
                        "(or all, black-box, default = black-box + loss)")
    p.add_argument("--canaries", type=integer, default=None, metavar="M",
                   help="also run the one-run canary audit with M canaries (retrains the model once)")
    p.add_argument("--n-targets", type=integer, default=1000, help="members and non-members each (default 1000)")
    p.add_argument("--confidence", type=number, default=0.95, help="confidence of the ε lower bounds")
    p.add_argument("--seed", type=integer, default=0, help="seed of the target choice and synthetic sample")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args) -> int:
    from dpcore.cli import print_json
    from dpcore.errors import InvalidParameter, RunError, check_probability
    from dpcore.evaluate.attacks import parse_attacks
    from dpcore.limits import check_canaries, check_seed, check_targets

    if any(not a.strip() for a in args.attacks.split(",")):
        raise InvalidParameter(f"--attacks must be a comma-separated list of names, with no empty item; "
                               f"got {args.attacks!r}")
    names = parse_attacks(args.attacks)
    check_probability("--confidence", args.confidence)
    if args.n_targets < 10:
        raise InvalidParameter(f"--n-targets must be >= 10, got {args.n_targets}")
    check_targets(args.n_targets)
    check_seed(args.seed)
    if args.canaries is not None and args.canaries < 4:
        raise InvalidParameter(f"--canaries must be >= 4, got {args.canaries}")
    if args.canaries is not None:
        check_canaries(args.canaries)
    if not Path(args.run).is_dir():
        raise RunError(f"no run folder at {args.run}")
    from dpcore.report import attack_run, audit_run, load_bundle

    t0 = time.perf_counter()
    bundle = load_bundle(args.run, seed=args.seed)
    out = attack_run(bundle, names, n_targets=args.n_targets, seed=args.seed, confidence=args.confidence)
    out["run"] = str(args.run)
    out["audit"] = None
    if args.canaries is not None:
        out["audit"] = audit_run(bundle, args.canaries, confidence=args.confidence)
    out["seconds"] = round(time.perf_counter() - t0, 2)
    if args.json:
        print_json(out)
        return 0
    eps = float(out["epsilon"])
    print(f"run {out['run']}  ε = {'∞' if math.isinf(eps) else f'{eps:.3g}'} (accountant)  "
          "— attack numbers: not covered by ε, data owner only")
    for a in out["attacks"]:
        t = a["tpr_at_fpr"]
        print(f"  {a['name']:<15} AUC {a['auc']:.3f}  TPR@0.1% {t['0.001']:.3f}  @1% {t['0.01']:.3f}  "
              f"@10% {t['0.1']:.3f}  ε ≥ {a['epsilon_lower_bound']:.2f}   sees: {a['sees']}")
    for name, why in out["skipped"].items():
        print(f"  {name:<15} not run: {why}")
    if out["audit"]:
        au = out["audit"]
        print(f"  canary audit: ε ≥ {au['epsilon_lower_bound']:.2f} at {au['confidence']:.0%} "
              f"({au['correct']}/{au['guesses']} correct guesses, {au['canaries']} canaries, {au['seconds']} s)")
    print(f"{out['seconds']} s")
    return 0
