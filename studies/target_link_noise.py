"""How well can synthetic rows predict the target when the target's links are known only through
noisy grouped pairs? An idealised AIM, to tell a weak model from a small budget (a study of issue 29;
findings in docs/tabular.md#what-limits-aim-at-ε--1-on-the-wide-table-issue-29-fourth-pass).

The star model: each column's levels in `--groups` groups of equal true mass
(`target_pairs.level_groups_by_mass`, as AIM cuts them from its noisy 1-ways), one count per
(group, class) with Gaussian noise σ — AIM's grouped target pairs — and nothing else noisy: the
class shares and every column's level shape inside a group are the training rows' own. Rows are
drawn class first, then each column's group given the class (from the noisy table, clipped at 0),
then a level inside the group from the true 1-way; columns are independent given the class.
Scored like `bench/tabular.py` (dpcore.evaluate.utility_scores: TSTR AUC on the real test rows).

Everything but the links is exact, so this is optimistic: an AIM whose target pairs carry noise σ
does no better (its 1-ways are noisy too). The σ rows: 0 (no noise: what a star can do at all),
the σ AIM's defaults give the grouped pairs at each ε (ρ from the accountant's calibration after
the noisy row count; T and target_budget from AIMConfig), and the σ they would get if the whole ρ
went to them (no 1-ways, no rounds) — a floor for any design that measures all of them alike.

    PYTHONPATH=$PWD:$PWD/bench .venv/bin/python studies/target_link_noise.py --datasets wide-choose,wide --epsilons 1,4 --draws 16 --sigmas 15,10
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np
import tabular  # bench/tabular.py: run with bench/ on PYTHONPATH (studies/README.md)

CLASSIFIERS = ("logistic_regression", "gradient_boosting")


def default_sigmas(epsilon: float, delta: float, columns: int) -> dict[str, float]:
    """σ of the grouped target pairs under AIM's defaults, and with the whole ρ on them."""
    from dpcore.models.aim import ALPHA, AIMConfig, planned_rounds
    from dpcore.privacy.accountants.zcdp import calibrate_rho
    from dpcore.privacy.dataset_size import with_count

    cfg = AIMConfig(epsilon=epsilon, delta=delta)
    rho = calibrate_rho(epsilon, delta, spent=with_count())
    T = planned_rounds(cfg, columns)
    first = math.sqrt(T / (2.0 * ALPHA * rho)) / math.sqrt(cfg.target_budget)
    return {"rho": rho, "defaults": first, "all of rho": math.sqrt((columns - 1) / (2.0 * rho))}


class Star:
    """The training rows' grouped (column, class) tables and what drawing from them needs."""

    def __init__(self, train, groups: int):
        from dpcore.models.marginal_data import LABEL, Discretizer
        from dpcore.models.target_pairs import level_groups_by_mass

        self.train, self.disc = train, Discretizer.for_dataset(train, 100, "aim")
        codes = self.disc.encode(train)
        self.y = codes[LABEL]
        self.classes = int(train.n_classes)
        self.label = LABEL
        self.cols = []  # (name, level → group, true 1-way, true grouped table groups × classes)
        for a in self.disc.attrs:
            if a.name == LABEL:
                continue
            one = np.bincount(codes[a.name], minlength=a.size).astype(np.float64)
            g = level_groups_by_mass(one, a.kind in ("bins", "int"), groups)
            table = np.zeros((int(g.max()) + 1, self.classes))
            np.add.at(table, (g[codes[a.name]], self.y), 1.0)
            self.cols.append((a.name, g, one, table))

    def draw(self, sigma: float, rng: np.random.Generator):
        """A synthetic Dataset of the training rows' size from the star with link noise σ."""
        n = self.train.n
        share = np.bincount(self.y, minlength=self.classes) / self.y.size
        ys = rng.choice(self.classes, n, p=share)
        codes = {self.label: ys}
        for name, g, one, table in self.cols:
            noisy = np.clip(table + rng.normal(0.0, sigma, table.shape), 1e-9, None)
            given = noisy / noisy.sum(axis=0, keepdims=True)  # P(group | class)
            grp = np.empty(n, np.int64)
            for c in range(self.classes):
                m = ys == c
                grp[m] = rng.choice(given.shape[0], int(m.sum()), p=given[:, c])
            level = np.empty(n, np.int64)
            for k in range(given.shape[0]):
                m = grp == k
                members = np.flatnonzero(g == k)
                w = one[members] + 1e-12
                level[m] = rng.choice(members, int(m.sum()), p=w / w.sum())
            codes[name] = level
        X, labels = self.disc.decode(codes, n, rng)
        return self.train.with_features(X, labels)


def tstr(synth, test, seed: int) -> dict[str, float]:
    from dpcore.evaluate.utility import utility_scores

    util = utility_scores(synth, test, classifiers=list(CLASSIFIERS), seed=seed)
    return {c: float(util.rows[c]["auroc"]) for c in CLASSIFIERS}


def main(argv=None) -> int:
    from dpcore.evaluate import utility_scores

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--datasets", default="wide-choose", help="comma-separated: wide-choose, wide")
    p.add_argument("--epsilons", default="1,4")
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument("--draws", type=int, default=12, help="noise draws per σ (public numpy generator, seeds 0..)")
    p.add_argument("--groups", type=int, default=4)
    p.add_argument("--sigmas", default="", help="extra σ values, comma-separated")
    p.add_argument("--split-seed", type=int, default=0)
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    rows = []
    for data in a.datasets.split(","):
        train, test = tabular.load(data, a.split_seed)
        star = Star(train, a.groups)
        real = utility_scores(train, test, classifiers=list(CLASSIFIERS), seed=0)
        rows.append({"dataset": data, "what": "real train", "sigma": None,
                     **{c: float(real.rows[c]["auroc"]) for c in CLASSIFIERS}, "se": None})
        plan = [("no noise", 0.0)]
        for eps in (float(e) for e in a.epsilons.split(",")):
            s = default_sigmas(eps, a.delta, len(star.cols) + 1)
            plan += [(f"ε = {eps:g}, AIM's defaults (ρ {s['rho']:.4f})", s["defaults"]),
                     (f"ε = {eps:g}, the whole ρ on the pairs", s["all of rho"])]
        plan += [(f"σ = {v}", float(v)) for v in a.sigmas.split(",") if v]
        for what, sigma in plan:
            t0 = time.perf_counter()
            got = np.array([[tstr(star.draw(sigma, np.random.default_rng(r)), test, r)[c] for c in CLASSIFIERS]
                            for r in range(a.draws)])
            row = {"dataset": data, "what": what, "sigma": sigma,
                   **dict(zip(CLASSIFIERS, got.mean(axis=0).tolist())),
                   "se": (got.std(axis=0, ddof=1) / math.sqrt(a.draws)).tolist(), "seconds": time.perf_counter() - t0}
            rows.append(row)
            print(f"{data:12s} {what:45s} σ {sigma:6.1f} AUC LR / GB "
                  f"{row[CLASSIFIERS[0]]:.3f} / {row[CLASSIFIERS[1]]:.3f}", file=sys.stderr, flush=True)
    if a.json:
        print(json.dumps(rows, indent=1))
    else:
        print("| dataset | link noise | σ per count | AUC LR | AUC GB |\n|---|---|---|---|---|")
        for r in rows:
            se = r["se"] or [None, None]
            cell = [f"{r[c]:.3f}" + (f" ± {s:.3f}" if s is not None else "") for c, s in zip(CLASSIFIERS, se)]
            sig = "–" if r["sigma"] is None else f"{r['sigma']:.1f}"
            print(f"| {r['dataset']} | {r['what']} | {sig} | {cell[0]} | {cell[1]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
