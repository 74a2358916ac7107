"""Benchmark: time each evaluation at Fashion-MNIST scale (60k synthetic × 784, 10k test, 2k MIA targets).

Regenerates: docs/benchmarks.md#evaluation and the two evaluation rows of its "Latest" table.

Target: the full evaluation (`evaluate_all`) within 2 minutes on 2 CPU cores. Wall and process
CPU seconds are both reported: on a shared, oversubscribed machine wall time says little, and CPU
seconds (all threads) bound what an idle 2-core machine needs from above. Run with
OMP_WAIT_POLICY=PASSIVE on a shared machine (spinning OpenMP threads stall under contention).
Data: the Fashion-MNIST IDX files under /usr/share/datasets/fashion-mnist when present (the
"synthetic" set is the training images plus Gaussian pixel noise, so utility is meaningful),
else uniform random pixels with random labels (`--random` forces that).

    .venv/bin/python bench/evaluate.py [--json] [--random] [--threads 2] [--attacks-only]
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import time
from pathlib import Path

import numpy as np

FASHION = Path("/usr/share/datasets/fashion-mnist")


def _idx(path: Path) -> np.ndarray:
    """Parse a gzipped IDX file (magic: 0, 0, dtype code, ndim; then big-endian int32 dims)."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = np.frombuffer(raw, dtype=">i4", count=ndim, offset=4)
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(tuple(int(d) for d in dims))


def load(random: bool, seed: int = 0):
    from dpcore.data.dataset import Dataset

    rng = np.random.default_rng(seed)
    if not random and FASHION.is_dir():
        xtr = _idx(FASHION / "train-images-idx3-ubyte.gz").reshape(-1, 784) / np.float32(255)
        ytr = _idx(FASHION / "train-labels-idx1-ubyte.gz").astype(np.int64)
        xte = _idx(FASHION / "t10k-images-idx3-ubyte.gz").reshape(-1, 784) / np.float32(255)
        yte = _idx(FASHION / "t10k-labels-idx1-ubyte.gz").astype(np.int64)
        source = "fashion-mnist"
    else:
        xtr, ytr = rng.random((60_000, 784), dtype=np.float32), rng.integers(0, 10, 60_000)
        xte, yte = rng.random((10_000, 784), dtype=np.float32), rng.integers(0, 10, 10_000)
        source = "random"
    noisy = np.clip(xtr + rng.normal(0, 0.2, xtr.shape).astype(np.float32), 0, 1)
    kw = dict(label_names=list(range(10)), image_shape=(28, 28))
    train = Dataset("fashion", xtr.astype(np.float32), ytr, **kw)
    test = Dataset("fashion", xte.astype(np.float32), yte, **kw)
    synth = Dataset("fashion-synthetic", noisy, ytr.copy(), **kw)
    return source, train, test, synth


def _tabular(n: int, d: int = 30, seed: int = 0):
    """A Credit-shaped table (30 numeric columns in [0, 1], minority positive class ~14%)."""
    from dpcore.data.dataset import Dataset

    rng = np.random.default_rng(seed)
    x = rng.random((n, d), dtype=np.float32)
    logit = 6 * (x[:, :5].mean(1) - 0.5) * 4 - 4
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(np.int64)
    return Dataset("tabular", x, y, label_names=[0, 1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--random", action="store_true", help="random pixels instead of Fashion-MNIST")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--targets", type=int, default=1000, help="MIA targets per side (2k in total)")
    ap.add_argument("--tabular", action="store_true", help="also time a Credit-shaped table")
    ap.add_argument("--attacks-only", action="store_true",
                    help="time only the black-box attack ladder (dcr, monte-carlo, gan-leaks, domias)")
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    from dpcore.evaluate.scoring import evaluate_all, score_attacks, score_marginals, score_utility
    from dpcore.figures import class_mean_images_figure, image_grid_figure

    t = time.perf_counter()
    source, train, test, synth = load(args.random)
    if not args.json:
        print(f"source={source} threads={args.threads} load_avg={os.getloadavg()[0]:.1f}", flush=True)
    times: dict[str, float] = {"load": time.perf_counter() - t}
    numbers: dict = {}
    cpu_times: dict[str, float] = {}

    def timed(name, fn):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        times[name] = time.perf_counter() - t0
        cpu_times[name] = time.process_time() - c0
        if not args.json:
            print(f"{name:45s} {times[name]:8.2f} s wall {cpu_times[name]:8.2f} s cpu", flush=True)
        return out

    if args.attacks_only:
        res = timed("black-box attacks (60k synthetic × 2k targets)",
                    lambda: score_attacks(synth, train, test, None, "black-box", n_targets=args.targets).results)
        numbers.update({f"{r.name}_seconds": round(r.seconds, 2) for r in res})
        numbers.update({f"{r.name}_auc": r.auc for r in res})
        print(json.dumps({"seconds": times, "cpu_seconds": cpu_times, "numbers": numbers,
                          "load_average": os.getloadavg(), "threads": args.threads,
                          "target_met": times["black-box attacks (60k synthetic × 2k targets)"] <= 120}, indent=2))
        return 0
    u = timed("utility (mlp, synthetic + real reference)",
              lambda: score_utility(synth, train, test))
    numbers["utility_accuracy"] = u.mean["accuracy"]
    numbers["utility_reference_accuracy"] = u.reference["mean"]["accuracy"]
    m = timed("tvd 1-way (785 columns) + 2-way (20 columns, 190 pairs)", lambda: score_marginals(synth, train))
    numbers["tvd_1way_mean"] = m["tvd_1way"]
    numbers["tvd_2way"] = m["tvd_2way"]
    ladder = timed("black-box attack ladder (60k × 2k)",
                   lambda: score_attacks(synth, train, test, None, "black-box", n_targets=args.targets))
    numbers.update({f"attack_auc_{r.name}": r.auc for r in ladder.results})
    numbers["attack_best"] = ladder.summary()["best"]
    timed("figures (grid + class means)", lambda: (image_grid_figure(synth), class_mean_images_figure(synth)))
    full = timed("evaluate_all (full)", lambda: evaluate_all(synth, train, test, n_targets=args.targets))
    numbers["evaluate_all_timings"] = full["timings"]
    if args.tabular:
        tab_train, tab_test = _tabular(60_000), _tabular(10_000, seed=1)
        tab_syn = _tabular(100_000, seed=2)
        t_u = timed("utility tabular (100k×30 → 50k, 4 classifiers, + real ref)",
                    lambda: score_utility(tab_syn, tab_train, tab_test))
        numbers["tabular_auroc"] = t_u.mean["auroc"]
        timed("evaluate_all tabular", lambda: evaluate_all(tab_syn, tab_train, tab_test, n_targets=args.targets))

    cpu = time.process_time()
    report = {"source": source, "threads": args.threads, "cpus": os.cpu_count(),
              "load_average": os.getloadavg(), "process_cpu_seconds": cpu,
              "n_synthetic": synth.n, "n_test": test.n, "mia_targets": 2 * args.targets,
              "seconds": times, "cpu_seconds": cpu_times, "numbers": numbers,
              "target_met": times["evaluate_all (full)"] <= 120}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for k, v in numbers.items():
            print(f"{k:45s} {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
