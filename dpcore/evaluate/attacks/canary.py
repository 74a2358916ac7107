"""One-run canary audit of a training algorithm (Steinke, Nasr & Jagielski, NeurIPS 2023).

Plant m crafted canaries (random binary images / rows with random labels: far from real data, so a
model that memorises them shows it), include each independently with probability ½ (secret coins
from OS entropy, never the run's seed), train once, score every canary with the loss attack, guess
"in" for the k highest scores and "out" for the k lowest, abstain on the rest. Under (ε, δ)-DP the
number of correct guesses V among r = 2k guesses satisfies (their Thm. 3 / Prop. 5.2)

    P[V ≥ v] ≤ P[Binomial(r, e^ε/(1+e^ε)) ≥ v] + 2mδ · max_{i ≥ 1} P[v−i ≤ Binomial(r, ·) < v] / i,

so every ε whose right-hand side is below 1 − confidence is rejected; the largest rejected ε is the
audit's lower bound. A few k are tried with a Bonferroni split of the confidence.

What makes it loose: the attack sees the trained model's losses, not its gradients (a black-box-ish
audit of a white-box guarantee); m is small (the bound saturates at log(q/(1−q)) with q = (1 −
confidence)^(1/r)); and canaries compete with each other within one run.
"""
from __future__ import annotations

import math
import secrets
import time
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import binom

from dpcore.errors import InvalidParameter


def audit_p_value(m: int, r: int, v: int, eps: float, delta: float) -> float:
    """Upper bound on P[V ≥ v] for an (ε, δ)-DP algorithm (Steinke et al., Prop. 5.2)."""
    if not (0 <= v <= r <= m):
        raise InvalidParameter(f"need 0 <= v <= r <= m, got v={v}, r={r}, m={m}")
    q = 1.0 / (1.0 + math.exp(-eps))
    tail = float(binom.sf(v - 1, r, q))
    if delta > 0 and v > 0:
        i = np.arange(1, v + 1)
        window = np.cumsum(binom.pmf(v - i, r, q))  # P[v−i ≤ B < v]
        tail += 2 * m * delta * float((window / i).max())
    return min(1.0, tail)


def audit_epsilon(m: int, r: int, v: int, delta: float = 0.0, confidence: float = 0.95) -> float:
    """Largest ε rejected at level 1 − confidence by `audit_p_value` (0 when none is)."""
    p = 1.0 - confidence
    if r == 0 or audit_p_value(m, r, v, 0.0, delta) >= p:
        return 0.0
    lo, hi = 0.0, 1.0
    while audit_p_value(m, r, v, hi, delta) < p:
        lo, hi = hi, hi * 2
        if hi > 1e3:
            return math.inf
    for _ in range(40):
        mid = (lo + hi) / 2
        if audit_p_value(m, r, v, mid, delta) < p:
            lo = mid
        else:
            hi = mid
    return lo


def guesses(scores: np.ndarray, included: np.ndarray, k: int) -> tuple[int, int]:
    """(r, v): top-k guessed in, bottom-k guessed out; v = number of correct guesses."""
    order = np.argsort(-np.asarray(scores), kind="stable")
    k = min(k, len(order) // 2)
    top, bottom = order[:k], order[len(order) - k:]
    return 2 * k, int(included[top].sum() + (~included[bottom]).sum())


def best_bound(scores, included, m: int, delta: float, confidence: float = 0.95,
               fractions=(0.05, 0.1, 0.25, 0.5)):
    """The audit bound maximised over k = fraction·m, Bonferroni over the k tried."""
    ks = sorted({max(1, int(round(f * m))) for f in fractions})
    level = 1 - (1 - confidence) / len(ks)
    rows = []
    for k in ks:
        r, v = guesses(scores, included, k)
        rows.append({"k": k, "guesses": r, "correct": v, "epsilon_lower_bound": audit_epsilon(m, r, v, delta, level)})
    return max(rows, key=lambda d: d["epsilon_lower_bound"]), rows


def craft_canaries(template, m: int, seed: int = 12345):
    """m random rows: each feature 0 or 1 with probability ½, a random label (public, seeded)."""
    rng = np.random.default_rng(seed)
    feats = (rng.random((m, template.n_features)) < 0.5).astype(np.float32)
    labels = None if template.labels is None else rng.integers(0, max(1, template.n_classes), m).astype(np.int64)
    return template.with_features(feats, labels)


def _concat(a, b):
    labels = None if a.labels is None else np.concatenate([a.labels, b.labels])
    out = a.with_features(np.concatenate([a.features, b.features]), labels)
    out.meta = dict(a.meta)
    return out


@dataclass
class AuditResult:
    epsilon_lower_bound: float
    confidence: float
    m: int
    included: int
    k: int
    guesses: int
    correct: int
    per_k: list[dict]
    attack: str
    accountant_epsilon: float
    delta: float
    seconds: float
    notes: list[str] = field(default_factory=list)
    auc: float | None = None  # canaries trained on vs not, ranked by the attack's score (0.5 = chance)
    top_in: int | None = None  # of the k canaries ranked first, how many were trained on
    roc: dict | None = None  # {"fpr", "tpr"} of the canaries (trained on = positive), to draw beside attacks

    def to_dict(self) -> dict:
        return {"epsilon_lower_bound": self.epsilon_lower_bound, "confidence": self.confidence,
                "canaries": self.m, "included": self.included, "k": self.k, "guesses": self.guesses,
                "correct": self.correct, "per_k": self.per_k, "attack": self.attack,
                "accountant_epsilon": self.accountant_epsilon, "delta": self.delta,
                "seconds": round(self.seconds, 2), "notes": list(self.notes), "auc": self.auc,
                "top_in": self.top_in, "roc": self.roc}


def canary_audit(model_name: str, params: dict, train, m: int = 256, *, confidence: float = 0.95,
                 callback=None) -> AuditResult:
    """Retrain `model_name` with `params` on `train` + the included canaries, score, bound ε.

    The accountant's ε is that of the audit run's own ledger (it trains on more rows than the run)."""
    from dpcore.evaluate.attacks.loss import record_loss
    from dpcore.models import make_model
    from dpcore.privacy.accountant import epsilon as accountant_epsilon

    if m < 4:
        raise InvalidParameter(f"canaries must be >= 4, got {m}")
    t0 = time.perf_counter()
    canaries = craft_canaries(train, m)
    coins = np.random.default_rng(secrets.randbits(128)).random(m) < 0.5  # secret: OS entropy
    model = make_model(model_name, **params)
    if not hasattr(model, "encode"):
        raise InvalidParameter(f"{model_name} has no encoder: the canary audit needs the loss attack")
    model.fit(_concat(train, canaries.subset(np.flatnonzero(coins))), callback=callback)
    scores = -record_loss(model, canaries)
    delta = float(getattr(model.config, "delta", 0.0)) if model.private else 0.0
    eps = float(accountant_epsilon(model.privacy_ledger(), delta)) if model.private else math.inf
    top, rows = best_bound(scores, coins, m, delta, confidence)
    from sklearn.metrics import roc_auc_score, roc_curve

    auc = float(roc_auc_score(coins, scores)) if 0 < coins.sum() < m else None
    roc = None
    if auc is not None:
        fpr, tpr, _ = roc_curve(coins, scores)
        roc = {"fpr": np.round(fpr, 4).tolist(), "tpr": np.round(tpr, 4).tolist()}
    top_in = int(coins[np.argsort(-scores, kind="stable")[:top["k"]]].sum())
    notes = ["loss attack on crafted canaries (random binary rows, random labels)",
             f"k chosen among {[r['k'] for r in rows]} with a Bonferroni split of {confidence:.0%}",
             "not covered by ε — data owner only"]
    return AuditResult(top["epsilon_lower_bound"], confidence, m, int(coins.sum()), top["k"], top["guesses"],
                       top["correct"], rows, "loss", eps, delta, time.perf_counter() - t0, notes, auc, top_in, roc)
