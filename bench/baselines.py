"""Benchmark (not a test): the L-VAE outlier experiment and GS-WGAN's CPU configuration on
Fashion-MNIST (docs/references.md#l-vae, #gs-wgan).

Regenerates: docs/benchmarks.md#baselines-vae-and-l-vae-the-outlier-experiment and #gs-wgan, with
their rows in the "Latest" table.

1. Outlier: 9 999 training images + one all-white image. A vanilla VAE, the spectral L-VAE
   (certified) and the gradient-penalty L-VAE (not certified) are trained on them; for each:
   the outlier's distance to its nearest synthetic sample (next to the distance from the outlier
   to the nearest real test image, i.e. what "not reproduced" looks like), its reconstruction
   error, its Monte Carlo MIA score rank among 2 000 targets (rank 1 = most exposed), the MIA
   AUC, and sample quality (MLP trained on synthetic, tested on the real test split) — once for
   prior samples (z ~ N(0, I)) and once (`resample_*`) for posterior re-sampling, one synthetic
   row per training record (dpcore.models.posterior, `--mcmc-steps` Metropolis–Hastings steps):
   the release the L-VAE certificate is about, and where memorisation shows.
2. GS-WGAN with a CPU configuration for 60k rows (200 critics, 1 600 generator steps of 40 rows,
   3 critic updates per step, 300 warm-up updates, the model's 2×2-pooled generator) at ε = 10 on
   the 60 000 training images: ε (accountant), classifier accuracy and time, next to the paper's
   ε = 10 number (MLP accuracy 0.65). Why 200 critics: every critic is updated at every critic step
   (the route-independent schedule), so the cost grows with the critics — 1 000 of them took over
   two CPU-hours — while fewer critics raise the sampling rate 1/ndis and with it the noise
   (docs/benchmarks.md#gs-wgan: 50, 100 and 200 critics in ~8–12 CPU-minutes each; with 200, more
   generator steps of fewer rows and fewer critic updates, for the same queries and σ, did better).
   `--part gswgan-digits`: accuracy against ε (∞, 1000, 100, 10) on digits.

Wall and process CPU seconds are both reported (on an oversubscribed machine wall time says
little). Run with OMP_WAIT_POLICY=PASSIVE on a shared machine.

    .venv/bin/python bench/baselines.py [--json] [--quick] [--part outlier|gswgan|gswgan-digits|all]
                                        [--ndis 200] [--steps 1600] [--batch 40] [--critic-steps 3] [--pool 2] [--threads 2] [--epochs 20] [--mcmc-steps 20]
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

PAPER = {"gs-wgan": {"epsilon": 10.0, "delta": 1e-5, "mlp_accuracy": 0.65, "inception_score": 5.32,
                     "steps": 20_000, "n_discriminators": 1000, "hardware": "GPU (about 22 GB)"}}


class Clock:
    def __enter__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu


def accuracy(synthetic, test, seed: int = 0) -> float:
    """MLP (784 → 256 → 10) trained on synthetic rows, accuracy on the real test split."""
    import torch

    from dpcore.evaluate.utility import _predict, train_image_classifier

    net = train_image_classifier(synthetic.features, synthetic.labels, 10, kind="mlp", seed=seed,
                                 device="cpu")
    pred = _predict(net, torch.as_tensor(test.features)).argmax(1)
    return float((pred == test.labels).mean())


def ladder_outlier_ranks(model, synthetic, train, test) -> dict:
    """Each attack of the ladder (the reference model included) on 1 000 targets per side, the
    injected outlier always a member target: its AUC and the outlier's rank among all 2 000 targets
    (1 = the target the attack is surest was a member)."""
    from dpcore.evaluate.attacks import run_attacks

    names = ["dcr", "monte-carlo", "gan-leaks", "domias", "loss", "loss-reference"]
    results, _, targets, _ = run_attacks(synthetic, train, test, model, names, n_targets=1000, seed=0,
                                         device="cpu")
    return {r.name: {"auc": round(r.auc, 4), "outlier_rank": r.outlier_rank, "targets": 2 * r.n_targets,
                     "epsilon_lower_bound": round(r.eps_lower_bound, 3)} for r in results}


def monte_carlo_attack(synthetic, train, test):
    """The ladder's Monte Carlo attack (1 000 targets per side, the outlier a member target;
    distances on a PCA-40 of the reference rows for Fashion's 784 features)."""
    from dpcore.evaluate.attacks import run_attacks

    (result,), _, _, _ = run_attacks(synthetic, train, test, attacks=["monte-carlo"], n_targets=1000, seed=0,
                                     delta=1e-5, device="cpu")
    return result


def nearest(x: np.ndarray, rows: np.ndarray) -> float:
    return float(np.sqrt(((rows - x[None]) ** 2).sum(1).min()))


OUTLIER_MODELS = ("vae", "vae-large", "lvae-spectral", "lvae-penalty")


def outlier_experiment(quick: bool, names=OUTLIER_MODELS, epochs: int | None = None,
                       mcmc_steps: int = 20) -> dict:
    from dpcore.data import load_split
    from dpcore.models.lvae import LVAE, LVAEConfig
    from dpcore.models.posterior import posterior_resample
    from dpcore.models.vae import VAE, VAEConfig

    full, test = load_split("fashion-mnist", seed=0)
    keep = np.sort(np.random.default_rng(0).choice(full.n, 9_999, replace=False))
    from dpcore.data import add_outlier

    train = add_outlier(full.subset(keep))
    out_row = train.features[train.outlier_index]
    epochs = epochs or (4 if quick else 20)
    n_syn = 10_000 if quick else 20_000
    common = dict(latent_dim=8, hidden=256, epochs=epochs, batch_size=64)
    makers = {
        "vae": lambda: VAE(VAEConfig(**common)),
        # the P3GM paper's VAE size (latent 30, hidden 1000): more room to memorise the outlier
        "vae-large": lambda: VAE(VAEConfig(epochs=epochs, batch_size=64)),
        "lvae-spectral": lambda: LVAE(LVAEConfig(variant="spectral", lipschitz=2.0, **common)),
        "lvae-penalty": lambda: LVAE(LVAEConfig(variant="penalty", lipschitz=2.0, **common)),
    }
    models = {name: makers[name]() for name in names}
    result = {"setup": {"train_rows": train.n, "outlier_index": train.outlier_index, "epochs": epochs,
                        "synthetic": n_syn, "outlier_to_nearest_test_image": nearest(out_row, test.features),
                        "member_median_nearest_test": float(np.median(
                            [nearest(train.features[i], test.features[:2000]) for i in range(0, 200)]))},
              "models": {}}
    for name, model in models.items():
        with Clock() as c:
            model.fit(train)
        syn = model.sample(n_syn, seed=1)
        mia = monte_carlo_attack(syn, train, test)
        z = model.encode(train.subset(np.array([train.outlier_index])))
        recon = model.decode(z)[0, :train.n_features]
        # the release the L-VAE certificate is about: every record re-sampled from its posterior
        res, info = posterior_resample(model, train, mcmc_steps=mcmc_steps, seed=1)
        res_mia = monte_carlo_attack(res, train, test)
        row = {"fit_wall_s": round(c.wall, 1), "fit_cpu_s": round(c.cpu, 1),
               "outlier_nearest_synthetic": nearest(out_row, syn.features),
               "outlier_reconstruction_error": float(np.linalg.norm(np.clip(recon, 0, 1) - out_row)),
               "outlier_mia_rank": mia.outlier_rank, "outlier_mia_score": mia.outlier_score,
               "mia_auc": mia.auc, "mia_eps_lower_bound": mia.eps_lower_bound,
               "accuracy": accuracy(syn, test),
               "resample_outlier_distance": float(np.linalg.norm(
                   res.features[train.outlier_index] - out_row)),
               "resample_outlier_nearest": nearest(out_row, res.features),
               # < 1: the release holds a copy closer to the outlier than any real image is
               "resample_outlier_ratio": float(np.linalg.norm(res.features[train.outlier_index] - out_row))
               / result["setup"]["outlier_to_nearest_test_image"],
               "resample_mia_rank": res_mia.outlier_rank, "resample_mia_auc": res_mia.auc,
               "resample_mia_eps_lower_bound": res_mia.eps_lower_bound,
               "resample_accuracy": accuracy(res, test), "mcmc_acceptance": info["acceptance"],
               "ladder": ladder_outlier_ranks(model, syn, train, test)}
        claim = model.privacy_claim()  # L-VAE's certificate; None for the VAE
        if claim is not None:
            row["claim"] = {k: claim[k] for k in ("certified", "epsilon", "delta", "lipschitz_bound",
                                                  "empirical_lipschitz", "layer_product_bound")}
        result["models"][name] = row
    return result


# the CPU configuration on Fashion-MNIST (docstring, 2.): critics, generator steps, rows a step, critic updates
FASHION_CRITICS, FASHION_STEPS, FASHION_BATCH, FASHION_CRITIC_STEPS = 200, 1600, 40, 3


def gswgan_run(dataset: str, epsilon_target: float, quick: bool, **overrides) -> dict:
    """One GS-WGAN fit with the CPU configuration (plus `overrides`), scored by MLP accuracy."""
    from dpcore.data import load_split
    from dpcore.models.gswgan import GSWGAN, GSWGANConfig
    from dpcore.models.protocol import PrivacyBudget
    from dpcore.privacy.accountant import epsilon

    train, test = load_split(dataset, seed=0)
    cfg = GSWGANConfig(**{"steps": 200 if quick else 1000, **overrides})
    model = GSWGAN(cfg)
    with Clock() as c:
        res = model.fit(train, PrivacyBudget(epsilon_target, 1e-5))
    syn = model.sample(min(10_000 if quick else 60_000, 10 * train.n), seed=1)
    return {"dataset": dataset, "target_epsilon": epsilon_target,
            "config": {k: getattr(cfg, k) for k in ("steps", "batch_size", "n_discriminators",
                                                     "critic_steps", "critic_batch", "warmup_steps",
                                                     "gen_hidden", "critic_hidden", "pool")},
            "noise_multiplier_sigma": model.calibration["noise_multiplier"],
            "epsilon": epsilon(model.privacy_ledger(), 1e-5) if len(model.privacy_ledger()) else math.inf,
            "fit_result_epsilon": res.epsilon, "ledger": model.privacy_ledger().to_list(),
            "accuracy": accuracy(syn, test), "sample_pixel_std": float(syn.features.std(0).mean()),
            "real_pixel_std": float(train.features.std(0).mean()),
            "fit_wall_s": round(c.wall, 1), "fit_cpu_s": round(c.cpu, 1), "synthetic": syn.n}


def gswgan_experiment(quick: bool, ndis: int, pool: int | None = None, steps: int = FASHION_STEPS,
                      batch: int = FASHION_BATCH, critic_steps: int = FASHION_CRITIC_STEPS) -> dict:
    row = gswgan_run("fashion-mnist", 10.0, quick, n_discriminators=ndis, pool=pool,
                     **({} if quick else {"steps": steps, "batch_size": batch, "critic_steps": critic_steps,
                                          "warmup_steps": 300}))
    row["paper"] = PAPER["gs-wgan"]
    row["gap_to_paper_accuracy"] = round(PAPER["gs-wgan"]["mlp_accuracy"] - row["accuracy"], 3)
    return row


def gswgan_digits_sweep(quick: bool) -> list[dict]:
    """Accuracy against ε on digits (is it the noise or the model?): ε = ∞, 1000, 100, 10."""
    return [gswgan_run("digits", eps, quick) for eps in (math.inf, 1000.0, 100.0, 10.0)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true", help="fewer epochs/steps (a smoke run)")
    ap.add_argument("--part", choices=("outlier", "gswgan", "gswgan-digits", "all"), default="all",
                    help="all = outlier + gswgan (Fashion-MNIST); gswgan-digits = ε sweep on digits")
    ap.add_argument("--ndis", type=int, default=FASHION_CRITICS, help="critics for the Fashion-MNIST GS-WGAN run")
    ap.add_argument("--steps", type=int, default=FASHION_STEPS,
                    help="generator steps of the Fashion-MNIST GS-WGAN run")
    ap.add_argument("--batch", type=int, default=FASHION_BATCH,
                    help="generated rows per generator step of the Fashion-MNIST GS-WGAN run")
    ap.add_argument("--critic-steps", type=int, default=FASHION_CRITIC_STEPS,
                    help="critic updates per generator step of the Fashion-MNIST GS-WGAN run")
    ap.add_argument("--pool", type=int, default=None,
                    help="GS-WGAN pooling (default: the model's, 2 for 28×28; 1 = full resolution)")
    ap.add_argument("--models", default=",".join(OUTLIER_MODELS),
                    help="outlier experiment models, comma-separated: " + ", ".join(OUTLIER_MODELS))
    ap.add_argument("--epochs", type=int, default=None, help="outlier experiment epochs (default 20)")
    ap.add_argument("--mcmc-steps", type=int, default=20,
                    help="Metropolis–Hastings steps of the posterior re-sampling (0: encoder draws)")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    out: dict = {"quick": args.quick, "threads": args.threads}
    if args.part in ("outlier", "all"):
        with Clock() as c:
            out["outlier"] = outlier_experiment(args.quick, [m for m in args.models.split(",") if m],
                                                epochs=args.epochs, mcmc_steps=args.mcmc_steps)
        out["outlier"]["wall_s"] = round(c.wall, 1)
    if args.part in ("gswgan", "all"):
        with Clock() as c:
            out["gswgan"] = gswgan_experiment(args.quick, args.ndis, args.pool, args.steps, args.batch,
                                              args.critic_steps)
        out["gswgan"]["wall_s"] = round(c.wall, 1)
    if args.part == "gswgan-digits":
        out["gswgan_digits"] = gswgan_digits_sweep(args.quick)
    if args.json:
        from dpcore.cli import print_json

        print_json(out)
    else:
        _report(out)
    return 0


def _fmt(v) -> str:
    if isinstance(v, float):
        return "inf" if math.isinf(v) else f"{v:.4g}"
    return str(v)


def _report(out: dict) -> None:
    if "outlier" in out:
        o = out["outlier"]
        print("L-VAE outlier experiment (Fashion-MNIST, 9 999 images + 1 all-white)")
        print("  " + ", ".join(f"{k}={_fmt(v)}" for k, v in o["setup"].items()))
        for name, row in o["models"].items():
            print(f"  {name:14s} " + ", ".join(f"{k}={_fmt(v)}" for k, v in row.items()
                                               if k not in ("claim", "ladder")))
            for attack, r in row.get("ladder", {}).items():
                print(" " * 17 + f"{attack}: AUC {r['auc']}, outlier rank {r['outlier_rank']} / {r['targets']}")
            if "claim" in row:
                print(" " * 17 + "claim: " + ", ".join(f"{k}={_fmt(v)}" for k, v in row["claim"].items()))
    if "gswgan" in out:
        g = out["gswgan"]
        print("GS-WGAN, CPU configuration, Fashion-MNIST (60 000 training images), target ε = 10")
        print(f"  ε = {_fmt(g['epsilon'])}, σ = {_fmt(g['noise_multiplier_sigma'])}, "
              f"MLP accuracy = {_fmt(g['accuracy'])} (paper at ε = 10: 0.65; gap "
              f"{_fmt(g['gap_to_paper_accuracy'])}), fit {g['fit_wall_s']} s wall / {g['fit_cpu_s']} s CPU")
        print(f"  config: {g['config']}; sample pixel std {_fmt(g['sample_pixel_std'])} "
              f"(real {_fmt(g['real_pixel_std'])})")
    for g in out.get("gswgan_digits", []):
        print(f"GS-WGAN digits, target ε = {_fmt(g['target_epsilon'])}: ε = {_fmt(g['epsilon'])}, "
              f"σ = {_fmt(g['noise_multiplier_sigma'])}, accuracy = {_fmt(g['accuracy'])}, sample std "
              f"{_fmt(g['sample_pixel_std'])} (real {_fmt(g['real_pixel_std'])}), fit {g['fit_wall_s']} s "
              f"wall / {g['fit_cpu_s']} s CPU")


if __name__ == "__main__":
    raise SystemExit(main())
