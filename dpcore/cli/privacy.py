"""`python -m dpcore account|calibrate`: the accountant, headless.

account   — ε of the ledger a run with the given noise multipliers produces (tight RDP, the paper's
            sequential baseline and PLD), plus the ledger itself.
calibrate — noise multipliers for a total (ε, δ) (and, for P3GM, the encoder share of the budget).
            The planned ledger starts with the noisy row count ("dataset-size", σ_n = 50) that every
            private run releases first, so its ε is the run's; the run itself then uses that noisy
            count ñ instead of --n for q and the steps (docs/neighbouring-relation.md).
account   — `--with-count` prepends the same record (off by default: it reproduces the papers'
            ledgers, which treat N as public).
Defaults are the official P3GM MNIST configuration (docs/references.md#p3gm) and the DP-VAE baseline (docs/references.md#dp-sgd).
"""
from __future__ import annotations

import argparse

from dpcore.cli.args import integer, number
from dpcore.errors import InvalidParameter

MODELS = ("p3gm", "dp-vae")
P3GM_DEFAULTS = dict(n=63000, batch=300, epochs=4.0, sgd_sigma=1.4, pca_sigma=5.0, em_sigma=100.0,
                     em_iters=20, components=1)
DP_VAE_DEFAULTS = dict(n=63000, batch=300, epochs=10.0, sgd_sigma=1.2)
_ENCODER_ARGS = ("pca_sigma", "em_sigma", "em_iters", "components", "mean_sigma")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", choices=MODELS, default="p3gm")
    p.add_argument("--n", type=integer, help="training rows N (default 63000)")
    p.add_argument("--batch", type=integer, help="expected Poisson batch size B (q = B/N; default 300)")
    p.add_argument("--epochs", type=number, help="DP-SGD epochs (steps = ceil(E·N/B))")
    p.add_argument("--delta", type=number, default=1e-5)
    p.add_argument("--em-iters", type=integer, help="DP-EM iterations T (P3GM; default 20)")
    p.add_argument("--components", type=integer, help="MoG components K (P3GM; default 1)")
    p.add_argument("--center", choices=("noisy", "public", "none"), default="noisy",
                   help="DP-PCA centring; 'noisy' adds the private mean's record (P3GM)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def register(sub) -> None:
    acc = sub.add_parser("account", help="ε of a configuration's privacy ledger")
    _common(acc)
    acc.add_argument("--sgd-sigma", type=number, help="DP-SGD noise multiplier σ_s")
    acc.add_argument("--pca-sigma", type=number, help="DP-PCA noise multiplier σ_p (P3GM)")
    acc.add_argument("--mean-sigma", type=number,
                     help="noise multiplier of the PCA mean (default 2·σ_p; P3GM, --center noisy)")
    acc.add_argument("--em-sigma", type=number, help="DP-EM noise multiplier σ_e (P3GM)")
    acc.add_argument("--with-count", action="store_true",
                     help="start the ledger with the noisy row count a workbench run releases "
                          "(σ_n = 50); off: the papers' ledgers, where N is public")
    acc.set_defaults(func=run_account)

    cal = sub.add_parser("calibrate", help="noise multipliers for a total (ε, δ)",
                         description="Noise multipliers for a total (ε, δ). The planned ledger "
                         "includes the noisy row count every private run releases first; --n is "
                         "your exact row count, while the run itself uses the noisy count for its "
                         "sampling rate and steps (its σ's differ slightly, its ε is the same).")
    _common(cal)
    cal.add_argument("--epsilon", type=number, required=True, help="total ε budget")
    cal.add_argument("--encoder-share", type=number, default=0.3,
                     help="encoder (PCA+EM) share of the RDP budget at the optimal order (P3GM)")
    cal.add_argument("--em-fraction", type=number, default=None,
                     help="DP-EM's fraction of the encoder budget (default 0.13)")
    cal.set_defaults(func=run_calibrate)


def _fill(args, defaults: dict) -> dict:
    c = {k: (getattr(args, k, None) if getattr(args, k, None) is not None else v)
         for k, v in defaults.items()}
    if isinstance(c.get("batch"), int) and isinstance(c.get("n"), int) and c["batch"] > c["n"]:
        raise InvalidParameter(f"batch must be <= n, got batch={c['batch']} > n={c['n']}")
    return c


def _reject_encoder_args(args) -> None:
    for k in _ENCODER_ARGS:
        if getattr(args, k, None) is not None:
            raise InvalidParameter(f"--{k.replace('_', '-')} does not apply to --model dp-vae")


def _check_sizes(args, c: dict) -> None:
    """Positive sizes and at most DPCORE_MAX_STEPS steps, before any ledger is built."""
    from dpcore.errors import check_int, check_positive
    from dpcore.limits import check_steps

    check_int("--n", c["n"])
    check_positive("--batch", c["batch"])
    check_positive("--epochs", c["epochs"])
    check_steps(c["epochs"], c["n"], c["batch"], what="this configuration")
    if "em_iters" in c:
        check_int("--em-iters", c["em_iters"])
        check_int("--components", c["components"])
        if c["em_iters"] * c["components"] > 1_000_000:
            raise InvalidParameter("--em-iters × --components must be at most 1000000")


def _check_noise(args) -> None:
    """Noise multipliers and δ in the range the accountant computes in (dpcore/limits.py)."""
    from dpcore.limits import check_noise_multiplier, check_range

    for k in ("sgd_sigma", "pca_sigma", "mean_sigma", "em_sigma"):
        if getattr(args, k, None) is not None:
            check_noise_multiplier(getattr(args, k), f"--{k.replace('_', '-')}")
    if not 0 < args.delta < 1:
        raise InvalidParameter(f"--delta must lie in (0, 1), got {args.delta!r}")
    if getattr(args, "epsilon", None) is not None:
        from dpcore.limits import MAX_EPSILON, MIN_EPSILON

        check_range(args.epsilon, MIN_EPSILON, MAX_EPSILON, "--epsilon")


def run_account(args) -> int:
    from dpcore.privacy import accountant as A

    _check_noise(args)

    if args.model == "p3gm":
        c = _fill(args, P3GM_DEFAULTS)
        _check_sizes(args, c)
        own = A.p3gm_ledger(c["n"], c["batch"], c["epochs"], c["pca_sigma"], c["em_sigma"],
                            c["em_iters"], c["components"], c["sgd_sigma"], args.mean_sigma,
                            center=args.center)
    else:
        _reject_encoder_args(args)
        c = _fill(args, DP_VAE_DEFAULTS)
        _check_sizes(args, c)
        own = A.dp_vae_ledger(c["n"], c["batch"], c["epochs"], c["sgd_sigma"])
    led = own
    if args.with_count:
        from dpcore.privacy.dataset_size import with_count

        led = with_count()
        led.extend(own)
    eps, order = A.epsilon_and_order(led, args.delta)
    out = {"model": args.model, "epsilon": eps, "delta": args.delta, "order": order,
           "classic_epsilon": A.classic_epsilon(led, args.delta),
           "baseline_epsilon": A.baseline_epsilon(led, args.delta),
           "epsilon_pld": A.pld_epsilon(led, args.delta), "config": c, "ledger": led.to_list()}
    _emit(out, args.json)
    return 0


def run_calibrate(args) -> int:
    from dpcore.privacy import accountant as A
    from dpcore.privacy.dataset_size import with_count

    _check_noise(args)
    spent = with_count()  # the run's noisy row count comes first, as in Model.fit

    if args.model == "p3gm":
        c = _fill(args, {k: P3GM_DEFAULTS[k] for k in ("n", "batch", "epochs", "components",
                                                        "em_iters")})
        _check_sizes(args, c)
        extra = {} if args.em_fraction is None else {"em_fraction": args.em_fraction}
        cal = A.calibrate_p3gm(args.epsilon, args.delta, args.encoder_share, c["n"], c["batch"],
                               c["epochs"], c["components"], c["em_iters"], center=args.center,
                               spent=spent, **extra)
    else:
        _reject_encoder_args(args)
        c = _fill(args, {k: DP_VAE_DEFAULTS[k] for k in ("n", "batch", "epochs")})
        _check_sizes(args, c)
        cal = A.calibrate_dp_vae(args.epsilon, args.delta, c["n"], c["batch"], c["epochs"],
                                 spent=spent)
    out = {"model": args.model, "target_epsilon": args.epsilon, **cal.to_dict(), "config": c}
    out["epsilon_pld"] = A.pld_epsilon(cal.ledger, args.delta)
    _emit(out, args.json)
    return 0


def _emit(out: dict, as_json: bool) -> None:
    from dpcore.cli import print_json

    if as_json:
        print_json(out)
        return
    print(f"{'record':<18}{'mechanism':<21}{'sigma':>10}{'q':>10}{'steps':>8}")
    for r in out["ledger"]:
        print(f"{r['name']:<18}{r['mechanism']:<21}{r['noise_multiplier']:>10.4g}"
              f"{r['sampling_rate']:>10.4g}{r['steps']:>8d}")
    for key in ("pca_sigma", "mean_sigma", "em_sigma", "sgd_sigma"):
        if out.get(key) is not None:
            print(f"{key:<24}{out[key]:.4f}")
    print(f"epsilon (RDP, tight)    {out['epsilon']:.4f}  at delta={out['delta']:g}, "
          f"order {out['order']:g}")
    for key, label in (("classic_epsilon", "epsilon (RDP, classic)"),
                       ("baseline_epsilon", "epsilon (paper baseline)"),
                       ("epsilon_pld", "epsilon (PLD)")):
        if key in out:
            print(f"{label:<24}{out[key]:.4f}")
