"""Hard caps on work a user can ask for, checked before the work starts (one-line errors).

Why: `sample --n 1e10`, `account --epochs 1e12`, `train --hidden 10000000`, `sweep --seeds 1e8` or
`attack --canaries 1e8` used to try to allocate gigabytes to terabytes, or ran for hours, before
failing. Every cap is generous for real use and documented here; each message says the cap and the
environment variable that changes it (`DPCORE_MAX_<NAME>`).

| cap                      | default     | what it bounds                                        |
|--------------------------|-------------|-------------------------------------------------------|
| DPCORE_MAX_STEPS         | 10 000 000  | optimisation steps of one training (epochs·rows/batch)|
| DPCORE_MAX_SAMPLES       | 2 000 000   | rows drawn in one call (sample, evaluate, reports)    |
| DPCORE_MAX_HIDDEN        | 16 384      | a network's hidden width (hidden, critic/gen_hidden)  |
| DPCORE_MAX_CANARIES      | 100 000     | canaries of one audit (`attack --canaries`)           |
| DPCORE_MAX_SEEDS         | 1 000       | seeds per point of a sweep                            |
| DPCORE_MAX_SWEEP_RUNS    | 2 000       | runs of one sweep (grid points × seeds)               |
| DPCORE_MAX_TARGETS       | 1 000 000   | attack targets (members and non-members each)         |
| DPCORE_MAX_WEIGHTS_BYTES | 1 GiB       | a saved model's weights.safetensors (before reading)  |
| DPCORE_MAX_ROWS / _COLUMNS | 2 000 000 / 10 000 | a CSV's shape (dpcore.data.csv; cells ≤ 50 M) |
| (fixed) noise multiplier | [0.1, 1e6]  | σ/Δ the CLI's `account` takes                         |
| (fixed) MAX_SEED         | 2**32 - 1   | any seed (torch and numpy both accept it)             |
| (fixed) MAX_NAME         | 128         | characters of a run, sweep or upload name             |

Model parameters other than the widths have their own caps in PARAM_CAPS (latent size, mixture
components, iterations, …), checked by `check_params` for the CLI's `train` and `sweep`.
"""
from __future__ import annotations

import math
import os

from dpcore.errors import InvalidParameter

MAX_SEED = 2**32 - 1
MAX_NAME = 128


def _env_int(name: str, default: int) -> int:
    try:
        return max(1, int(float(os.environ.get(name, default))))
    except (ValueError, OverflowError):
        return default


def max_steps() -> int:
    return _env_int("DPCORE_MAX_STEPS", 10_000_000)


def max_samples() -> int:
    return _env_int("DPCORE_MAX_SAMPLES", 2_000_000)


def max_hidden() -> int:
    return _env_int("DPCORE_MAX_HIDDEN", 16_384)


def max_canaries() -> int:
    return _env_int("DPCORE_MAX_CANARIES", 100_000)


def max_seeds() -> int:
    return _env_int("DPCORE_MAX_SEEDS", 1_000)


def max_sweep_runs() -> int:
    return _env_int("DPCORE_MAX_SWEEP_RUNS", 2_000)


def max_targets() -> int:
    return _env_int("DPCORE_MAX_TARGETS", 1_000_000)


def _cap(value, cap: int, what: str, env: str | None) -> None:
    if value > cap:
        how = f" (set {env} to change it)" if env else ""
        raise InvalidParameter(f"{what} must be at most {cap}, got {value}{how}")


def check_steps(epochs: float, n: int, batch: float, what: str = "training") -> int:
    """ceil(epochs · n / batch) optimisation steps, at most max_steps()."""
    try:
        steps = math.ceil(float(epochs) * float(n) / float(batch))
    except (OverflowError, ValueError, ZeroDivisionError):
        steps = math.inf
    cap = max_steps()
    if not steps <= cap:
        raise InvalidParameter(f"{what} would take {steps:.3g} steps (epochs × rows / batch); the cap is "
                               f"{cap} (set DPCORE_MAX_STEPS to change it)")
    return int(steps)


def check_samples(n: int, what: str = "n") -> int:
    _cap(n, max_samples(), f"{what} (rows per call)", "DPCORE_MAX_SAMPLES")
    return n


def check_canaries(m: int, what: str = "--canaries") -> int:
    _cap(m, max_canaries(), what, "DPCORE_MAX_CANARIES")
    return m


def check_targets(n: int, what: str = "--n-targets") -> int:
    _cap(n, max_targets(), what, "DPCORE_MAX_TARGETS")
    return n


def check_seed(seed: int, what: str = "--seed") -> int:
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= MAX_SEED:
        raise InvalidParameter(f"{what} must be an integer in [0, {MAX_SEED}], got {seed!r}")
    return seed


def check_name(name, what: str = "--name") -> str:
    """A name given by a user: not empty, not only spaces, at most MAX_NAME characters."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidParameter(f"{what} must not be empty")
    _cap(len(name), MAX_NAME, f"{what} (characters)", None)
    return name


def check_sweep_size(points: int, seeds: int) -> None:
    """Seeds per point ≤ max_seeds() and points × seeds ≤ max_sweep_runs()."""
    _cap(seeds, max_seeds(), "--seeds", "DPCORE_MAX_SEEDS")
    _cap(points * seeds, max_sweep_runs(), "a sweep's runs (grid points × seeds)", "DPCORE_MAX_SWEEP_RUNS")


# Model parameters: name → (cap, environment variable or None). Widths share DPCORE_MAX_HIDDEN.
_WIDTHS = ("hidden", "critic_hidden", "gen_hidden")
PARAM_CAPS: dict[str, int] = {
    "latent_dim": 4_096, "components": 1_000, "em_iters": 100_000, "pca_dim": 1_000_000,
    "pca_pool": 1_000, "pool": 1_000, "batch_size": 10_000_000, "critic_batch": 10_000_000,
    "warmup_steps": 10_000_000, "critic_steps": 10_000,  # epochs and steps: DPCORE_MAX_STEPS
    "n_discriminators": 10_000, "power_iterations": 1_000, "numeric_bins": 10_000, "bins": 100_000,
    "iters": 10_000_000, "rounds": 100_000, "round_iters": 10_000_000, "degree": 16, "seed": MAX_SEED,
}


def param_cap(name: str) -> int | None:
    return max_hidden() if name in _WIDTHS else PARAM_CAPS.get(name)


def check_params(params: dict, prefix: str = "--") -> dict:
    """Every integer model parameter within its cap (one-line InvalidParameter naming the flag)."""
    for name, value in params.items():
        cap = param_cap(name)
        if cap is None or isinstance(value, bool) or not isinstance(value, int):
            continue
        flag = prefix + name.replace("_", "-") if prefix == "--" else f"{prefix}{name}"
        if value > cap:
            env = " (set DPCORE_MAX_HIDDEN to change it)" if name in _WIDTHS else ""
            raise InvalidParameter(f"{flag} must be at most {cap}, got {value}{env}")
    return params


# Noise multipliers (σ/Δ) the CLI's accountant takes: below 0.1 the RDP orders overflow and the PLD
# grid explodes (ε is in the hundreds already); above 1e6 nothing changes any more.
MIN_NOISE_MULTIPLIER, MAX_NOISE_MULTIPLIER = 0.1, 1e6
MIN_EPSILON, MAX_EPSILON = 1e-3, 1e4  # a total budget calibrate can solve for


def check_range(value: float, low: float, high: float, what: str) -> float:
    if not (isinstance(value, (int, float)) and low <= value <= high):
        raise InvalidParameter(f"{what} must lie in [{low:g}, {high:g}], got {value!r}")
    return float(value)


def check_noise_multiplier(value: float, what: str) -> float:
    return check_range(value, MIN_NOISE_MULTIPLIER, MAX_NOISE_MULTIPLIER, what)
