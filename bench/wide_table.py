"""A small, wide, HR-attrition-like table for the tabular bench (generated, no download): a module
bench/tabular.py and the issue-29 studies (studies/) load, not a benchmark of its own.

Why generated: issue 29's failure (no synthetic table predicted the target) showed on a table of
~1 200 rows × 31 columns a data owner brought, not on the built-ins. This is a table of that shape
with a known answer: 1 470 rows, 30 feature columns of every kind (skewed incomes, integers with
point masses at 0 and 1, uniform noise columns, categoricals of 2–9 levels, booleans) and a binary
target ("attrition", about 16 % yes) that depends on several columns through a logistic model.
Every bound and category list is declared, so the preprocessing is covered by ε.

Two tables from one recipe: `generator_seed` CHOOSE_SEED is the table settings are chosen on (with
credit), SCORE_SEED the one the bench reports (`wide-choose`, `wide`): a default is never tuned on
the rows it is scored on.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

ROWS = 1470
TEST_SIZE = 0.2  # 1 176 training rows, 294 test rows (the HR split)
CHOOSE_SEED, SCORE_SEED = 101, 202
ROLES = ["sales_exec", "research_sci", "lab_tech", "manufacturing_dir", "healthcare_rep", "manager",
         "sales_rep", "research_dir", "hr"]
FIELDS = ["life_sciences", "medical", "marketing", "technical", "other", "hr"]
BOUNDS = {"age": (18, 60), "income": (1000.0, 20000.0), "job_level": (1, 5), "years_at_company": (0, 40),
          "total_working_years": (0, 40), "distance": (1, 29), "num_companies": (0, 9),
          "years_since_promotion": (0, 15), "years_in_role": (0, 18), "years_with_manager": (0, 17),
          "education": (1, 5), "env_satisfaction": (1, 4), "job_satisfaction": (1, 4),
          "work_life_balance": (1, 4), "job_involvement": (1, 4),
          "performance_rating": (3, 4), "stock_level": (0, 3), "trainings": (0, 6), "salary_hike": (11, 25),
          "daily_rate": (100.0, 1500.0), "hourly_rate": (30, 100), "monthly_rate": (2000.0, 27000.0),
          "bonus": (0.0, 5000.0)}
NUMERIC = {"income", "daily_rate", "monthly_rate", "bonus"}
CATEGORIES = {"department": ["sales", "research", "hr"], "job_role": ROLES, "education_field": FIELDS,
              "marital": ["single", "married", "divorced"], "gender": ["female", "male"],
              "travel": ["rarely", "frequently", "non_travel"], "attrition": ["no", "yes"]}
BOOLEANS = ("overtime",)


def frame(generator_seed: int = SCORE_SEED, rows: int = ROWS) -> pd.DataFrame:
    """The rows (a DataFrame with the target last)."""
    g = np.random.default_rng(generator_seed)

    def ints(lo, hi, x):
        return np.clip(np.round(x), lo, hi).astype(int)

    age = ints(18, 60, g.normal(37, 9, rows))
    total = ints(0, 40, (age - 18) * g.beta(2, 1.5, rows))
    job_level = ints(1, 5, 1 + total / 8 + g.normal(0, 0.8, rows))
    income = np.clip(np.exp(np.log(1200 + 1700 * job_level) + g.normal(0, 0.35, rows)), 1000, 20000).round(0)
    at_company = np.minimum(total, ints(0, 40, g.exponential(7, rows)))
    in_role = ints(0, 18, at_company * g.beta(2, 2, rows))
    with_manager = ints(0, 17, at_company * g.beta(2, 2, rows))
    since_promo = np.where(g.random(rows) < 0.40, 0, ints(0, 15, at_company * g.beta(1.2, 2.5, rows)))
    distance = np.where(g.random(rows) < 0.15, 1, ints(1, 29, g.gamma(1.6, 6.0, rows)))
    companies = np.where(g.random(rows) < 0.13, 0, ints(1, 9, 1 + g.exponential(2.0, rows)))
    sat = {k: g.choice([1, 2, 3, 4], rows, p=[0.2, 0.2, 0.3, 0.3]) for k in
           ("env_satisfaction", "job_satisfaction", "job_involvement")}
    balance = g.choice([1, 2, 3, 4], rows, p=[0.06, 0.24, 0.6, 0.1])
    marital = g.choice(CATEGORIES["marital"], rows, p=[0.32, 0.46, 0.22])
    stock = np.where(marital == "single", 0, g.choice([0, 1, 2, 3], rows, p=[0.25, 0.45, 0.2, 0.1]))
    department = g.choice(CATEGORIES["department"], rows, p=[0.3, 0.65, 0.05])
    role = np.where(department == "sales", g.choice(ROLES[:1] + ROLES[6:7] + ROLES[5:6], rows, p=[0.6, 0.3, 0.1]),
                    np.where(department == "hr", "hr", g.choice(ROLES[1:6] + ROLES[7:8], rows)))
    travel = g.choice(CATEGORIES["travel"], rows, p=[0.71, 0.19, 0.10])
    overtime = g.random(rows) < 0.28
    bonus = np.where(g.random(rows) < 0.6, 0.0, np.clip(g.gamma(2, 600, rows) * job_level / 2, 0, 5000)).round(0)
    logit = (-3.1 + 1.6 * overtime - 0.45 * (sat["job_satisfaction"] - 2.7) - 0.4 * (sat["env_satisfaction"] - 2.7)
             - 0.35 * (sat["job_involvement"] - 2.7) + 0.9 * (marital == "single") - 0.05 * (age - 37)
             - 0.5 * (job_level - 2) + 0.9 * (travel == "frequently") + 0.04 * (distance - 9)
             - 0.06 * (at_company - 7) + 0.25 * (companies - 2.5) - 0.5 * (balance - 2.7)
             + 0.8 * (role == "sales_rep") + 0.6 * (role == "lab_tech"))
    attrition = g.random(rows) < 1 / (1 + np.exp(-logit))
    out = pd.DataFrame({
        "age": age, "income": income, "job_level": job_level, "years_at_company": at_company,
        "total_working_years": total, "distance": distance, "num_companies": companies,
        "years_since_promotion": since_promo, "years_in_role": in_role, "years_with_manager": with_manager,
        "education": g.choice([1, 2, 3, 4, 5], rows, p=[0.12, 0.19, 0.39, 0.27, 0.03]), **sat,
        "work_life_balance": balance, "performance_rating": np.where(g.random(rows) < 0.85, 3, 4),
        "stock_level": stock, "trainings": ints(0, 6, g.normal(2.8, 1.2, rows)),
        "salary_hike": ints(11, 25, 11 + g.exponential(4, rows)),
        "daily_rate": g.uniform(100, 1500, rows).round(0), "hourly_rate": g.integers(30, 101, rows),
        "monthly_rate": g.uniform(2000, 27000, rows).round(0), "bonus": bonus,
        "department": department, "job_role": role, "education_field": g.choice(FIELDS, rows),
        "marital": marital, "gender": g.choice(CATEGORIES["gender"], rows, p=[0.4, 0.6]),
        "travel": travel, "overtime": overtime,
        "attrition": np.where(attrition, "yes", "no")})
    return out


def schema():
    """The declared public schema (every bound and category list; the target)."""
    from dpcore.data.schema import ColumnSpec, Schema

    cols = []
    for name in frame(SCORE_SEED, 8).columns:
        if name in BOUNDS:
            kind = "numeric" if name in NUMERIC else "integer"
            cols.append(ColumnSpec(name, kind, *BOUNDS[name], decimals=0 if kind == "numeric" else None))
        elif name in BOOLEANS:
            cols.append(ColumnSpec(name, "boolean"))
        else:
            cols.append(ColumnSpec(name, "categorical", categories=CATEGORIES[name]))
    return Schema(cols, target="attrition")


def load(generator_seed: int = SCORE_SEED, split_seed: int = 0):
    """(train, test) Datasets of the table drawn with `generator_seed`, stratified 80/20 split."""
    from dpcore.data import dataset_from_frame
    from dpcore.data.split import train_test_split

    name = "wide" if generator_seed == SCORE_SEED else f"wide-{generator_seed}"
    ds = dataset_from_frame(frame(generator_seed), name=name, schema=schema())
    return train_test_split(ds, test_size=TEST_SIZE, seed=split_seed)
