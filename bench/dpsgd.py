"""Benchmark: one DP-SGD step of the workbench engine vs a plain step vs Opacus (hooks, ghost).

Regenerates: docs/benchmarks.md#dp-sgd-step, the DP-SGD rows of its "Latest" table and the README's
DP-SGD ratio ("Results").

Run:  .venv/bin/python bench/dpsgd.py [--repeats 15] [--warmup 3] [--json] [--threads 2]
      [--clock cpu]   (process CPU time instead of wall time, for a machine shared with others)

Models (docs/references.md#p3gm, #dp-sgd): the P3GM decoder (30→1000→ReLU→794, squared error) and the DP-VAE
(794→1000→(30 mean, 30 log-var)→1000→794, reparameterised, squared error + KL), batch 300,
Adam 1e-3, C = 1, σ = 1.2. Every variant has its own copy of the model and optimiser; the variants
are timed interleaved (one step each per repeat) so drift hits all alike; medians are reported.
`dp_ms` is the engine's step on a fixed batch of 300 (forward + per-example loss + dp.step) with
its secret noise (what a user's run draws); the Poisson sampling of indices (n = 63 000) is timed
separately as `poisson_ms`, and drawing the step's Gaussian noise alone as `noise_ms` (torch's
mt19937, ~2.7 ns a number: a floor no engine built on torch's CPU generator goes under), so
`dp_without_noise_over_plain` is what the engine itself adds.

A ratio on a shared machine means little without the load it was taken under, so every row carries
the load average (1 min) before and after its model, the CPU count, and how many CPUs the whole
machine kept busy meanwhile (from /proc/stat; `busy_cpus`, of which `own_cpus` were this process):
the table prints them beside the ratios, --json has them as fields.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import time
import warnings

# dpcore first, as in every workbench process: importing it sets OMP_WAIT_POLICY=PASSIVE before torch
# loads OpenMP, so with --threads 2 the idle thread sleeps while the single-threaded noise is drawn
# instead of spinning on the CPU clock (1.23-1.48x for both networks when torch came first)
# isort: off
import dpcore  # noqa: F401
import torch
from torch import nn
# isort: on

from dpcore.privacy.dpsgd import DPSGD
from dpcore.privacy.ledger import PrivacyLedger

BATCH, N, SIGMA, C, LR = 300, 63_000, 1.2, 1.0, 1e-3


class VAE(nn.Module):
    """The DP-VAE baseline's MLP (docs/references.md#dp-sgd)."""

    def __init__(self, d: int = 794, h: int = 1000, z: int = 30):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(d, h), nn.ReLU())
        self.mu, self.logvar = nn.Linear(h, z), nn.Linear(h, z)
        self.dec = nn.Sequential(nn.Linear(z, h), nn.ReLU(), nn.Linear(h, d))

    def forward(self, x):
        h = self.enc(x)
        mu, lv = self.mu(h), self.logvar(h)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * lv)
        return self.dec(z), mu, lv


def vae_loss(model, x, y):
    xh, mu, lv = model(x)
    kl = -0.5 * (1 + lv - mu.pow(2) - lv.exp()).sum(1)
    return (xh - y).pow(2).sum(1) + kl


def decoder_loss(model, x, y):
    return (model(x) - y).pow(2).sum(1)


def make_models():
    dec = nn.Sequential(nn.Linear(30, 1000), nn.ReLU(), nn.Linear(1000, 794))
    return [("p3gm_decoder", dec, decoder_loss, (BATCH, 30), (BATCH, 794)),
            ("dp_vae", VAE(), vae_loss, (BATCH, 794), (BATCH, 794))]


def variants(model, loss_fn):
    """name -> zero-argument closure doing one full optimiser step on (x, y) set by the caller."""
    from opacus import GradSampleModule
    from opacus.grad_sample import GradSampleModuleFastGradientClipping
    from opacus.optimizers import DPOptimizer, DPOptimizerFastGradientClipping
    from opacus.utils.fast_gradient_clipping_utils import DPTensorFastGradientClipping

    data = {}
    out = {}

    m = copy.deepcopy(model)
    opt = torch.optim.Adam(m.parameters(), lr=LR)

    def plain():
        opt.zero_grad(set_to_none=True)
        loss_fn(m, data["x"], data["y"]).mean().backward()
        opt.step()
    out["plain"] = plain

    m2 = copy.deepcopy(model)
    dp = DPSGD(m2, torch.optim.Adam(m2.parameters(), lr=LR), noise_multiplier=SIGMA,
               max_grad_norm=C, n=N, expected_batch_size=BATCH, ledger=PrivacyLedger())
    out["dp"] = lambda: dp.step(loss_fn(m2, data["x"], data["y"]))
    out["poisson"] = dp.poisson_batch
    # the Gaussian draw alone, as the step makes it (same buffer, same std): the part of the DP
    # overhead no engine can avoid with torch's generator; what is left is the engine's own cost
    out["noise"] = lambda: dp._noise(SIGMA * C / BATCH)

    m3 = GradSampleModule(copy.deepcopy(model), batch_first=True, loss_reduction="mean")
    o3 = DPOptimizer(torch.optim.Adam(m3.parameters(), lr=LR), noise_multiplier=SIGMA,
                     max_grad_norm=C, expected_batch_size=BATCH, loss_reduction="mean")

    def hooks():
        loss_fn(m3, data["x"], data["y"]).mean().backward()
        o3.step()
        o3.zero_grad(set_to_none=True)
    out["opacus_hooks"] = hooks

    m4 = GradSampleModuleFastGradientClipping(copy.deepcopy(model), batch_first=True,
                                              loss_reduction="mean", max_grad_norm=C,
                                              use_ghost_clipping=True)
    o4 = DPOptimizerFastGradientClipping(torch.optim.Adam(m4.parameters(), lr=LR),
                                         noise_multiplier=SIGMA, max_grad_norm=C,
                                         expected_batch_size=BATCH, loss_reduction="mean")

    def ghost():
        per = loss_fn(m4, data["x"], data["y"])
        DPTensorFastGradientClipping(m4, o4, per, "mean").backward()
        o4.step()
        o4.zero_grad(set_to_none=True)
    out["opacus_ghost"] = ghost
    return out, data


def _cpu_jiffies() -> tuple[int, int] | None:
    """(busy, total) jiffies of all CPUs since boot from /proc/stat; None off Linux."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)      # idle + iowait
    return sum(fields[:8]) - idle, sum(fields[:8])


class MachineLoad:
    """Load average before/after and the machine's busy CPUs over a `with` block."""

    def __enter__(self):
        self.load_before = os.getloadavg()[0]
        self.jiffies = _cpu_jiffies()
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.load_after = os.getloadavg()[0]
        wall = time.perf_counter() - self.wall
        self.own_cpus = (time.process_time() - self.cpu) / wall
        end, cpus = _cpu_jiffies(), os.cpu_count() or 1
        self.busy_cpus = None
        if self.jiffies is not None and end is not None and end[1] > self.jiffies[1]:
            self.busy_cpus = cpus * (end[0] - self.jiffies[0]) / (end[1] - self.jiffies[1])
        self.cpus = cpus

    def fields(self) -> dict:
        return {"load_avg_1min_before": self.load_before, "load_avg_1min_after": self.load_after,
                "cpus": self.cpus, "busy_cpus": self.busy_cpus, "own_cpus": self.own_cpus}


def bench_model(name, model, loss_fn, xs, ys, repeats, warmup, clock=time.perf_counter):
    with MachineLoad() as load:
        row = _bench_model(name, model, loss_fn, xs, ys, repeats, warmup, clock)
    row.update(load.fields())
    return row


def _bench_model(name, model, loss_fn, xs, ys, repeats, warmup, clock):
    steps, data = variants(model, loss_fn)
    g = torch.Generator().manual_seed(1)
    times = {k: [] for k in steps}
    for r in range(warmup + repeats):
        data["x"], data["y"] = torch.rand(xs, generator=g), torch.rand(ys, generator=g)
        for k, f in steps.items():
            t0 = clock()
            f()
            dt = (clock() - t0) * 1e3
            if r >= warmup:
                times[k].append(dt)
    med = {k: statistics.median(v) for k, v in times.items()}
    best = {k: min(v) for k, v in times.items()}
    row = {"model": name, "batch": BATCH, "plain_ms": med["plain"], "dp_ms": med["dp"],
           "opacus_ghost_ms": med["opacus_ghost"], "opacus_hooks_ms": med["opacus_hooks"],
           "poisson_ms": med["poisson"], "noise_ms": med["noise"], "repeats": repeats,
           "threads": torch.get_num_threads()}
    for k in ("dp", "opacus_ghost", "opacus_hooks"):
        row[f"{k}_over_plain"] = med[k] / med["plain"]
    row["noise_over_plain"] = med["noise"] / med["plain"]
    row["dp_without_noise_over_plain"] = (med["dp"] - med["noise"]) / med["plain"]
    # minima: less sensitive to other processes on a shared machine (see the load fields)
    for k in ("plain", "dp", "opacus_ghost", "opacus_hooks"):
        row[f"{k}_min_ms"] = best[k]
    row["dp_over_plain_min"] = best["dp"] / best["plain"]
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", action="store_true", help="one JSON object per model")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="cpu: process CPU time (all threads), steadier on a shared machine")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    warnings.filterwarnings("ignore")       # Opacus warns about secure_mode etc.
    clock = time.perf_counter if args.clock == "wall" else time.process_time
    rows = [bench_model(*spec, args.repeats, args.warmup, clock) for spec in make_models()]
    for r in rows:
        r["clock"] = args.clock
    if args.json:
        for r in rows:
            print(json.dumps({k: round(v, 3) if isinstance(v, float) else v
                              for k, v in r.items()}))
        return 0
    hdr = f"{'model':14s} {'batch':>5s} {'plain':>8s} {'dp':>8s} {'ghost':>8s} {'hooks':>8s}" \
          f" {'dp/pl':>6s} {'gh/pl':>6s} {'hk/pl':>6s} {'poisson':>8s} {'noise':>6s} {'dp-n/pl':>7s}" \
          f"  {'load 1 min':>11s} {'busy/cpus':>10s}"
    print(hdr)
    for r in rows:
        busy = "n/a" if r["busy_cpus"] is None else f"{r['busy_cpus']:.1f}/{r['cpus']}"
        print(f"{r['model']:14s} {r['batch']:5d} {r['plain_ms']:8.1f} {r['dp_ms']:8.1f} "
              f"{r['opacus_ghost_ms']:8.1f} {r['opacus_hooks_ms']:8.1f} "
              f"{r['dp_over_plain']:6.2f} {r['opacus_ghost_over_plain']:6.2f} "
              f"{r['opacus_hooks_over_plain']:6.2f} {r['poisson_ms']:8.2f} {r['noise_ms']:6.1f} "
              f"{r['dp_without_noise_over_plain']:7.2f}  "
              f"{r['load_avg_1min_before']:5.1f}→{r['load_avg_1min_after']:<5.1f} {busy:>10s}")
    print(f"(ms per step, median of {args.repeats}, {args.threads} threads, {args.clock} clock; "
          f"best-case dp/plain: " + ", ".join(f"{r['model']} {r['dp_over_plain_min']:.2f}"
                                               for r in rows)
          + "; noise: drawing the Gaussian noise alone; dp-n/pl: (dp − noise) / plain, the engine's own "
          "overhead; load: the 1-min load average before→after each model; busy/cpus: CPUs the whole "
          "machine kept busy meanwhile, of all)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
