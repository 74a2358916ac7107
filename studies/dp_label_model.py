"""Study: could a DP classifier for the target carry the links instead of noisy counts? (issue 29;
findings in docs/tabular.md#a-dp-classifier-for-the-target-instead-of-counts-issue-29-fifth-pass)

The star (studies/target_link_noise.py) showed that no model learning the target's links from noisy
pair counts gets AIM within 0.10 of the real rows' TSTR AUC at ε = 1 on `wide`. The other route a
synthesizer could take: spend part of ρ on a DP logistic regression for the target, generate the
features with the rest, and label the synthetic rows with the model's probabilities. This measures
the route's ceiling, before building anything:

- **own scores**: the AUC of the DP model's linear scores on the real test rows, what any table
  labelled by it can at best pass on;
- **real rows relabelled**: the *real* training features, each labelled by a draw from the DP
  model's probability, scored by TSTR as bench/tabular.py scores (utility_scores on the real test
  rows): optimistic, since a synthesizer's features are noisy too and it has less ρ for them.

The DP model: full-batch gradient descent on the encoded features (numeric in [0, 1] by the
declared bounds, one-hot categories, a bias), each example's gradient clipped to C, Gaussian noise
σC on the sum; T steps are T Gaussian mechanisms of sensitivity C, ρ = T / (2σ²). ρ is the
accountant's calibration of ε after the noisy row count (as AIM's), times `--shares`. T and C were
chosen on `wide-choose` in a scratch scan of T 5–40 × C 0.5–2, 12 draws each (T = 10, C = 1: the
best at the whole ρ, 0.824; at half of ρ 0.797, one standard error under the best, 0.807). The noise comes from a public numpy generator: a measurement, never a release.

    PYTHONPATH=$PWD:$PWD/bench .venv/bin/python studies/dp_label_model.py --datasets wide-choose,wide --draws 16
"""
from __future__ import annotations

import argparse
import json
import math
import sys

import numpy as np
import tabular  # bench/tabular.py: run with bench/ on PYTHONPATH (studies/README.md)
from target_link_noise import CLASSIFIERS, tstr

STEPS, CLIP, RATE = 10, 1.0, 4.0
COLUMNS = ("own scores AUC", "drawn labels AUC LR", "drawn labels AUC GB", "cut labels AUC LR", "cut labels AUC GB")


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))  # no overflow for large |z|


def with_bias(x: np.ndarray) -> np.ndarray:
    return np.hstack([x.astype(np.float64), np.ones((len(x), 1))])


def dp_logistic(x: np.ndarray, y: np.ndarray, rho: float, rng: np.random.Generator, steps: int = STEPS,
                clip: float = CLIP, rate: float = RATE) -> np.ndarray:
    """Weights of a logistic regression by noisy clipped full-batch gradient descent; zCDP ρ in all
    (each step a Gaussian mechanism of L2 sensitivity `clip`: ρ_step = 1 / (2σ²), ρ = steps · ρ_step)."""
    n, d = x.shape
    sigma = math.sqrt(steps / (2.0 * rho))
    w = np.zeros(d)
    for _ in range(steps):
        grad = (sigmoid(x @ w) - y)[:, None] * x
        grad /= np.maximum(1.0, np.linalg.norm(grad, axis=1, keepdims=True) / clip)
        w -= rate * (grad.sum(axis=0) + rng.normal(0.0, sigma * clip, d)) / n
    return w


def auc(y: np.ndarray, score: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, score))


def measure(train, test, rho: float, draws: int) -> dict:
    """Means and standard errors over `draws` noise draws: own-score AUC and relabelled TSTR."""
    x, xt = with_bias(train.features), with_bias(test.features)
    y, yt = train.labels.astype(np.float64), test.labels
    got = []
    for r in range(draws):
        rng = np.random.default_rng(r)
        w = dp_logistic(x, y, rho, rng)
        score = x @ w
        drawn = (rng.random(len(x)) < sigmoid(score)).astype(np.int64)
        cut = (score > np.quantile(score, 1.0 - y.mean())).astype(np.int64)
        row = [auc(yt, xt @ w)]
        for labels in (drawn, cut):
            got_r = tstr(train.with_features(train.features, labels), test, r) if labels.min() < labels.max() \
                else dict.fromkeys(CLASSIFIERS, 0.5)
            row += [got_r[c] for c in CLASSIFIERS]
        got.append(row)
    a = np.array(got)
    return {"means": dict(zip(COLUMNS, a.mean(axis=0).tolist())),
            "se": dict(zip(COLUMNS, (a.std(axis=0, ddof=1) / math.sqrt(draws)).tolist()))}


def main(argv=None) -> int:
    from dpcore.evaluate import utility_scores
    from dpcore.privacy.accountants.zcdp import calibrate_rho
    from dpcore.privacy.dataset_size import with_count

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--datasets", default="wide-choose", help="comma-separated: wide-choose, wide")
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument("--shares", default="0.5,1", help="shares of ρ spent on the label model")
    p.add_argument("--draws", type=int, default=12, help="noise draws per share (public numpy generator, seeds 0..)")
    p.add_argument("--split-seed", type=int, default=0)
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    rho = calibrate_rho(a.epsilon, a.delta, spent=with_count())
    rows = []
    for data in a.datasets.split(","):
        train, test = tabular.load(data, a.split_seed)
        real = utility_scores(train, test, classifiers=list(CLASSIFIERS), seed=0)
        rows.append({"dataset": data, "what": "real train", "se": None, "means": {
            "drawn labels AUC LR": float(real.rows[CLASSIFIERS[0]]["auroc"]),
            "drawn labels AUC GB": float(real.rows[CLASSIFIERS[1]]["auroc"])}})
        for share in (float(s) for s in a.shares.split(",")):
            row = {"dataset": data, "what": f"{share:g} of ρ {rho:.4f} (ε = {a.epsilon:g})", "rho": share * rho,
                   **measure(train, test, share * rho, a.draws)}
            rows.append(row)
            print(f"{data:12s} {row['what']:28s} " + ", ".join(f"{k} {v:.3f}" for k, v in row["means"].items()),
                  file=sys.stderr, flush=True)
    if a.json:
        print(json.dumps(rows, indent=1))
        return 0
    print("| dataset | label model | " + " | ".join(COLUMNS) + " |\n|---|---|" + "---|" * len(COLUMNS))
    for r in rows:
        cells = []
        for k in COLUMNS:
            v, se = r["means"].get(k), (r["se"] or {}).get(k)
            cells.append("–" if v is None else f"{v:.3f}" + (f" ± {se:.3f}" if se is not None else ""))
        print(f"| {r['dataset']} | {r['what']} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
