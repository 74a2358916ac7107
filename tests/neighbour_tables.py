"""The neighbouring files D and D + one extreme row, their declared schema and the pinned noisy
count, shared by the attacker's tests of what a run publishes (tests/privacy/test_published_*.py).

Why pinned: both runs must release the same ñ (the event that both draws land on one value), so
that everything computed from public facts and ñ is byte-equal; the count's ledger record is still
written as a run writes it."""
from __future__ import annotations

import numpy as np

ROWS = 103  # D: 103 training rows (n//4 = 25), D + 1: 104 (26) — an exact-n batch tells them apart
RELEASED_N = 97  # the ñ both runs release (pinned)
TABLE_STEPS = 40  # the neural models' auto-epochs target, lowered (a constant) to keep the suite fast
SCHEMA = {"target": "y", "types": {"x": "numeric", "k": "integer", "c": "categorical"},
          "bounds": {"x": [-5, 5], "k": [0, 9]}, "categories": {"c": ["a", "b", "c"], "y": ["no", "yes"]}}
EXTREME_ROW = "4.999,9,c,yes"


def write_pair(tmp):
    """D and D + the extreme row as tmp/d/data.csv and tmp/d1/data.csv (one file name for both:
    the name is the user's, not a function of the rows)."""
    rng = np.random.default_rng(0)
    rows = [f"{rng.normal(0, 1):.3f},{rng.integers(0, 9)},{rng.choice(['a', 'b', 'c'])},{rng.choice(['no', 'yes'])}"
            for _ in range(ROWS)]
    paths = []
    for tag, body in (("d", rows), ("d1", rows[:40] + [EXTREME_ROW] + rows[40:])):
        path = tmp / tag / "data.csv"
        path.parent.mkdir(parents=True)
        path.write_text("x,k,c,y\n" + "\n".join(body) + "\n")
        paths.append(path)
    return tuple(paths)


def pin_released_count(mp) -> None:
    """With a MonkeyPatch `mp`: every run releases RELEASED_N (its record as a run makes it), and
    the neural models' auto-epochs target is TABLE_STEPS."""
    import dpcore.models.neural as neural
    import dpcore.privacy.dataset_size as size

    mp.setattr(neural, "TABLE_STEPS", TABLE_STEPS)
    real = size.noisy_count

    def pinned(n, rng, *, ledger, noise_multiplier=size.COUNT_SIGMA):
        real(n, rng, ledger=ledger, noise_multiplier=noise_multiplier)  # the record, as a run makes it
        return RELEASED_N

    mp.setattr(size, "noisy_count", pinned)
