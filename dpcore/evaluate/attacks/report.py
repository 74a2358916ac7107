"""A saved run's attacks and audit as JSON-able dicts (the CLI's output, the Privacy page's cache).

Members are the run's training rows; non-members and the reference set are its held-out rows. δ is
the run's δ for a private run and 0 for a non-private one; ε always comes from the accountant over
the run's ledger (∞ for a non-private run).
"""
from __future__ import annotations

import math


def attack_run(bundle, attacks=None, *, n_targets: int = 1000, seed: int = 0, confidence: float = 0.95,
               progress=None) -> dict:
    from dpcore.evaluate.attacks import run_attacks

    private = bundle.private
    delta = bundle.delta if private else 0.0
    results, skipped, targets, _ = run_attacks(bundle.synthetic, bundle.train, bundle.test, bundle.model, attacks,
                                               n_targets=n_targets, seed=seed, delta=delta,
                                               confidence=confidence, progress=progress)
    eps = float(bundle.run.epsilon) if private else math.inf
    out = {"epsilon": eps, "delta": delta, "label": "not covered by ε — data owner only",
           "attacks": [], "skipped": skipped, "n_targets": targets.n, "reference_rows": targets.reference.n}
    for r in results:
        d = r.to_dict()
        d.pop("curve")
        if private and math.isfinite(eps):
            d["consistent_with_epsilon"] = r.consistent_with(eps, delta)
        out["attacks"].append(d)
    return out


def audit_run(bundle, canaries: int, confidence: float = 0.95, callback=None) -> dict:
    """The canary audit of the run's training algorithm (its model and settings, its training rows)."""
    from dpcore.evaluate.attacks.canary import canary_audit

    res = canary_audit(bundle.run.config.model, dict(bundle.run.config.params), bundle.train, canaries,
                       confidence=confidence, callback=callback)
    return res.to_dict()
