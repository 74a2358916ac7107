"""Study (issue 40; findings in docs/tabular.md#what-the-neural-models-csv-keeps-issue-40): does
P3GM's CSV keep each column's missing share, level shares and precision?

The journey's complaint: P3GM at ε = 1 on a mortgage table (2 380 rows, `deny` 12 % yes, a money
column 61.8 % exact zeros, a 12-row category, gaps in 4 of 16 columns) wrote blanks in all 16, the
rare category 6× too common and money with 12 decimals. This fits P3GM on such a generated table
(every type, bound and level declared, so every column is nullable, as the Data page makes them)
or on a built-in, and samples each fit twice: **before** (missing flags as the decoder draws them,
numbers rounded only to a schema `decimals`) and **after** (missing flags bounded by DP-PCA's noisy
mean, `label_shares.level_shares`; numbers rounded by `encoder.value_decimals`). Both are
post-processing of one fitted model, so the two rows of a seed differ by the decoding alone.
Prints per fit: mean 1-way TVD (training rows vs as many synthetic rows), the summed
|missing share gap| over columns, the columns with blanks, the rare level's and the target's share,
the TSTR AUROC (logistic regression / gradient boosting on the 20 % held-out rows) and one money value.

    PYTHONPATH=$PWD .venv/bin/python studies/column_shares.py [--data mortgage|credit] [--seeds 0,1,2,3] [--json]
"""
from __future__ import annotations

import argparse
import json

import numpy as np
import pandas as pd

TYPES = dict(income="numeric", pirat="numeric", hirat="numeric", lvrat="numeric", chist="integer",
             mhist="integer", phist="categorical", unemp="numeric", selfemp="categorical",
             insurance="categorical", condomin="categorical", afam="categorical", single="categorical",
             property_type="categorical", debt="numeric", deny="categorical")
BOUNDS = dict(income=(0, 20000), pirat=(0, 1.5), hirat=(0, 1.5), lvrat=(0, 2), chist=(1, 6), mhist=(1, 4),
              unemp=(0, 15), debt=(0, 100000), app_date=(18262, 19357))  # days: 2020-01-01 … 2022-12-31
YES_NO = ["no", "yes"]
CATEGORIES = dict(phist=YES_NO, selfemp=YES_NO, insurance=YES_NO, condomin=YES_NO, afam=YES_NO, single=YES_NO,
                  property_type=["single", "multi", "condo", "manufactured", "coop"], deny=YES_NO)


def mortgage_frame(n: int = 2380, seed: int = 0) -> pd.DataFrame:
    """Mortgage applications as the issue describes them: 16 columns and `deny` (~12 % yes), debt
    exactly 0 in ~61 % of the rows, property_type 'coop' in ~10 rows, gaps in income (4 %), unemp
    (2 %), property_type (6 %) and app_date (1 %)."""
    rng = np.random.default_rng(seed)
    choice = lambda levels, p: rng.choice(levels, n, p=p)  # noqa: E731
    pirat = np.round(rng.beta(4, 10, n), 3)
    lvrat = np.round(rng.beta(8, 3, n), 3)
    chist = choice([1, 2, 3, 4, 5, 6], [.55, .2, .07, .04, .04, .10])
    phist, insurance = choice(YES_NO, [.93, .07]), choice(YES_NO, [.98, .02])
    selfemp, afam = choice(YES_NO, [.88, .12]), choice(YES_NO, [.86, .14])
    ptype = choice(["single", "multi", "condo", "manufactured"], [.7, .18, .112, .008])
    ptype[rng.permutation(n)[:12]] = "coop"
    logit = (-3.2 + 5 * (pirat - .3) + 3 * (lvrat - .7) + 0.45 * (chist - 1) + 1.5 * (phist == "yes")
             + 1.8 * (insurance == "yes") + 0.6 * (afam == "yes") + 0.4 * (selfemp == "yes"))
    frame = pd.DataFrame(dict(
        income=np.round(rng.lognormal(8.3, 0.5, n), 2), pirat=pirat,
        hirat=np.round(pirat * rng.uniform(0.6, 0.95, n), 3), lvrat=lvrat, chist=chist,
        mhist=choice([1, 2, 3, 4], [.3, .6, .07, .03]), phist=phist, unemp=np.round(rng.uniform(1.8, 10.6, n), 1),
        selfemp=selfemp, insurance=insurance, condomin=choice(YES_NO, [.71, .29]), afam=afam,
        single=choice(YES_NO, [.6, .4]), property_type=ptype,
        debt=np.where(rng.random(n) < 0.618, 0.0, np.round(rng.lognormal(9, 1, n), 2)),
        app_date=(np.datetime64("2020-01-01") + rng.integers(0, 900, n)).astype(str),
        deny=np.where(rng.random(n) < 1 / (1 + np.exp(-logit)), "yes", "no")))
    for column, share in (("income", .04), ("unemp", .02), ("property_type", .06), ("app_date", .01)):
        frame[column] = frame[column].astype(object).where(rng.random(n) > share, None)
    return frame


def _split(data: str):
    from dpcore.data import dataset_from_frame, load_split, train_test_split

    if data != "mortgage":
        return load_split(data, seed=0)
    ds = dataset_from_frame(mortgage_frame(), target="deny", types=TYPES, bounds=BOUNDS, categories=CATEGORIES,
                            date_formats={"app_date": "%Y-%m-%d"})
    return train_test_split(ds, 0.2, seed=0)


def _score(train, test, syn) -> dict:
    from dpcore.evaluate.marginals import one_way_tvd
    from dpcore.evaluate.utility import utility_scores

    real, fake = train.to_frame(), syn.to_frame()
    gaps = {c: float(fake[c].isna().mean() - real[c].isna().mean()) for c in real.columns}
    auc = utility_scores(syn, test, classifiers=["logistic_regression", "gradient_boosting"]).rows
    rare = real.columns[real.columns.isin(["property_type"])]
    money = next((c for c in ("debt", "Debt") if c in fake.columns), None)
    return {"tvd_1way": float(np.mean(list(one_way_tvd(train, syn).values()))),
            "missing_gap_sum": float(np.sum(np.abs(list(gaps.values())))),
            "columns_with_blanks": int(fake.isna().any().sum()), "real_columns_with_blanks": int(real.isna().any().sum()),
            "rare_level": [float((f[c] == "coop").mean()) for c in rare for f in (real, fake)],
            "target_shares": [float(np.mean(s.labels == 1)) for s in (train, syn)],
            "auroc": {k: v["auroc"] for k, v in auc.items()},
            "money_example": str(fake[money].dropna().iloc[-1]) if money else None}


def main() -> None:
    import dpcore.data.encoder as encoder
    import dpcore.models.p3gm as p3gm
    from dpcore import fit
    from dpcore.models import label_shares

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="mortgage")
    ap.add_argument("--seeds", default="0,1,2,3")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    train, test = _split(args.data)
    after_levels, after_decimals = label_shares.level_shares, encoder.value_decimals

    def no_flags(heads, *a, **k):  # the decoding before issue 40: missing flags as the decoder draws them
        return {i: b for i, b in after_levels(heads, *a, **k).items() if not heads.heads[i].flag}

    rows = []
    for seed in map(int, args.seeds.split(",")):
        model = fit(train, model="p3gm", epsilon=args.epsilon, seed=seed)
        for when in ("before", "after"):
            p3gm.level_shares = no_flags if when == "before" else after_levels
            encoder.value_decimals = (lambda spec: spec.decimals) if when == "before" else after_decimals
            model._offsets = None  # recomputed under this decoding
            rows.append({"data": args.data, "seed": seed, "decoding": when,
                         **_score(train, test, model.sample(train.n, seed=seed))})
            if not args.json:
                print(json.dumps(rows[-1]), flush=True)
    p3gm.level_shares, encoder.value_decimals = after_levels, after_decimals
    if args.json:
        print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
