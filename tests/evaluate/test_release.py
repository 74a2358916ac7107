"""The two exports of a run: the shareable release holds only what ε covers, the private report is marked."""
import re

import pandas as pd
import pytest


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from dpcore.jobs import train_run
    from dpcore.runs import RunConfig

    params = {"epochs": 1, "hidden": 32, "warmup_steps": 10, "pca_dim": 10, "batch_size": 200, "epsilon": 2.0}
    return train_run(RunConfig(model="p3gm", params=params, data={"dataset": "digits", "test_size": 0.2}),
                     tmp_path_factory.mktemp("runs"))


class _Untouchable:
    """Stands in for the real splits: the shareable release must not read a single real row."""

    preprocessing_private = True

    def __getattr__(self, name):
        raise AssertionError(f"the shareable release read the real data ({name})")


def test_shareable_release_reads_no_real_data_and_lists_what_it_omits(run):
    from dpcore.privacy import coverage
    from dpcore.release import PRIVATE_MARK
    from dpcore.report import load_bundle, run_report

    b = load_bundle(run.path, n_samples=10)
    b.train = b.test = _Untouchable()
    text = run_report(run.path, bundle=b)  # the default kind is the shareable one
    h2 = re.findall(r"<h2>([^<]*)</h2>", text)
    assert "Synthetic samples" in h2 and "Privacy ledger" in h2 and "What ε covers" in h2
    for private_part in ("Real training rows", "Training losses", "Membership inference", "Utility", "2-way"):
        assert not any(private_part in h for h in h2), (private_part, h2)
    for number in ("reference: mean", "membership attack AUC", "training rows</th>", "test rows</th>"):
        assert number not in text, number
    assert f"{run.epsilon:.4g}" in text and PRIVATE_MARK not in text
    assert coverage.NEIGHBOURING in text
    omitted = text[text.index("Deliberately omitted"):]
    assert all(o.label in omitted for o in coverage.not_covered())


def test_private_report_marks_every_section(run):
    from dpcore.release import PRIVATE_MARK
    from dpcore.report import load_bundle, run_report

    text = run_report(run.path, kind="private", n_targets=100, bundle=load_bundle(run.path, n_samples=300))
    sections = re.findall(r"<h2>([^<]*)</h2>", text)
    assert "Real training rows" in sections and "Membership inference" in sections
    assert text.count(PRIVATE_MARK) >= len(sections) + 1  # every section, and the print banner
    before = text.split("<h2>")
    assert all(PRIVATE_MARK in chunk[-300:] for chunk in before[:-1])
    assert "ε is the accountant's number" not in text


def test_report_kind_is_checked(run):
    from dpcore.errors import InvalidParameter
    from dpcore.report import run_report

    with pytest.raises(InvalidParameter, match="shareable"):
        run_report(run.path, kind="public")


def test_data_labels_are_escaped_in_release_tables():
    from dpcore.release import rows_table

    text = rows_table(pd.DataFrame({"<b>col</b>": ["<script>x</script>"]}))
    assert "<script>" not in text and "<b>" not in text and "&lt;script&gt;" in text


@pytest.fixture(scope="module")
def table_run(tmp_path_factory):
    """A tiny P3GM run on a CSV whose incomes are written in cents."""
    import numpy as np

    from dpcore.jobs import train_run
    from dpcore.runs import RunConfig

    root = tmp_path_factory.mktemp("table")
    rng = np.random.default_rng(0)
    inc = np.round(rng.lognormal(7.5, 0.5, 600), 2)
    frame = pd.DataFrame({"age": rng.integers(18, 80, 600), "income": inc,
                          "approved": np.where(inc > 1800, "yes", "no")})
    frame.to_csv(root / "incomes.csv", index=False)
    params = {"epochs": 1, "hidden": 32, "warmup_steps": 10, "batch_size": 200, "epsilon": 2.0}
    return train_run(RunConfig(model="p3gm", params=params, data={"csv": str(root / "incomes.csv"),
                                                                   "target": "approved", "test_size": 0.2}), root)


def _downloaded_csv(text):
    import base64
    import io

    m = re.search(r"download='([^']*)' href='data:text/csv;base64,([^']*)'", text)
    assert m, "no synthetic CSV download in the report"
    return m.group(1), pd.read_csv(io.BytesIO(base64.b64decode(m.group(2))))


def test_private_report_opens_with_a_summary_then_the_details(table_run):
    from dpcore.privacy import coverage
    from dpcore.report import load_bundle, run_report

    text = run_report(table_run.path, kind="private", n_targets=100, bundle=load_bundle(table_run.path))
    h2 = re.findall(r"<h2>([^<]*)</h2>", text)
    assert h2[:2] == ["Summary", "Details"], h2
    summary = text[text.index("<h2>Summary"):text.index("<h2>Details")]
    for part in ("Model:", "Data:", "ε:", "What ε covers:", "Utility:", "real held-out rows",
                 "Strongest membership attack:", "AUC", "Covered: "):
        assert part in summary, part
    assert coverage.covered()[0].label in text  # the full catalogue, further down
    assert "param:" not in text and text.count("<th>setting</th><th>name</th><th>value</th>") == 1
    utility = text[text.index("<h2>Utility"):].split("<h2>")[1]
    assert "(synthetic → real)</th>" in utility and "plotly-graph-div" not in utility  # an HTML table
    assert '"automargin":true' in text  # axis labels are never clipped


def test_report_rows_are_the_users_choice_and_keep_the_inputs_precision(table_run):
    from dpcore.errors import InvalidParameter
    from dpcore.release import REPORT_ROWS
    from dpcore.report import load_bundle, run_report

    b = load_bundle(table_run.path)
    name, frame = _downloaded_csv(run_report(table_run.path, bundle=b, rows=37))
    assert len(frame) == 37 and name.endswith("-37.csv")
    assert (frame["income"].round(2) == frame["income"]).all()  # cents, not 12 decimals
    assert (frame["income"].round(1) != frame["income"]).any()
    _, frame = _downloaded_csv(run_report(table_run.path, kind="private", n_targets=100, bundle=b, rows=50))
    assert len(frame) == 50 and (frame["income"].round(2) == frame["income"]).all()
    assert len(_downloaded_csv(run_report(table_run.path, bundle=b))[1]) == REPORT_ROWS == 1000
    with pytest.raises(InvalidParameter, match="rows"):
        run_report(table_run.path, bundle=b, rows=0)


def test_report_attack_curves_are_coloured_per_run_with_their_own_bound(run):
    from dpcore.report import attack_figure, load_bundle, run_curves

    b = load_bundle(run.path, n_samples=300)
    from types import SimpleNamespace

    import numpy as np

    a = np.linspace(0, 1, 5)
    res = [SimpleNamespace(name="distance", auc=0.6, alpha=a, beta=1 - a)]
    curves = run_curves(b, res, "p3gm, ε = 2")
    assert curves.hover == run.name and any(")-DP" in lbl for lbl, _, _ in curves.bounds)
    fig = attack_figure([curves])
    roc = [t for t in fig.data if t.xaxis == "x" and t.name != "random guess"]
    assert len({t.line.color for t in roc}) == 1 and {t.line.dash for t in roc} >= {"solid", "dash", "dot"}


def test_private_report_lists_the_synthetic_sets_warnings_escaped(table_run, monkeypatch):
    """A class never generated or a collapsed column is said in the report, not only on the page;
    a label from the data is text, never markup."""
    from dpcore.evaluate import checks
    from dpcore.report import load_bundle, run_report

    monkeypatch.setattr(checks, "synthetic_warnings",
                        lambda *a, **k: ["1 of 2 classes never appear in the synthetic data (<b>yes</b>)"])
    text = run_report(table_run.path, kind="private", n_targets=100, bundle=load_bundle(table_run.path))
    notes = text[text.index("<h2>Notes"):].split("<h2>")[1]
    assert "Warning: 1 of 2 classes never appear in the synthetic data (&lt;b&gt;yes&lt;/b&gt;)" in notes
    assert "<b>yes</b>" not in text


GREEN = "every output in this file is listed as covered by ε"


def _badge(text):
    m = re.search(r"<div class='(shareable|partial|private page)'>(.*?)</div>", text)
    assert m, "no badge"
    return m.group(1), m.group(2)


def test_the_badge_is_green_only_when_the_whole_run_is_covered(run):
    from dpcore.report import load_bundle, run_report

    kind, badge = _badge(run_report(run.path, bundle=load_bundle(run.path, n_samples=10)))
    assert kind == "shareable" and GREEN in badge


def test_an_inferred_schema_release_names_it_and_never_calls_its_rows_covered(table_run):
    """The schema of `table_run` was read from its rows (no declared bounds): the exact min/max and
    every category, even one seen once, reach the synthetic rows outside the ledger."""
    from dpcore.report import load_bundle, run_report

    b = load_bundle(table_run.path, n_samples=10)
    assert not b.model.template.preprocessing_private
    text = run_report(table_run.path, bundle=b)
    kind, badge = _badge(text)
    assert kind == "partial" and GREEN not in text and "inferred schema" in badge
    table = text[text.index("<h2>What ε covers"):].split("<h2>")[1]
    for label in ("Synthetic rows drawn from the trained generator", "The trained generator&#x27;s weights"):
        row = table[table.index(label):].split("</tr>")[0]
        assert "<td>not covered</td>" in row and "one row" in row, row
    omitted = text[text.index("<h2>Deliberately omitted"):]
    assert "Scaling bounds or categories read from the raw data —" not in omitted
    assert "Included although not covered" in omitted


@pytest.fixture(scope="module")
def uncovered_runs(tmp_path_factory):
    """A private run trained with seeded noise (a debugging mode) and a VAE (ε = ∞)."""
    from dpcore.jobs import train_run
    from dpcore.runs import RunConfig

    root = tmp_path_factory.mktemp("uncovered")
    data = {"dataset": "digits", "n": 400}
    seeded = train_run(RunConfig("p3gm", {"epochs": 1, "hidden": 16, "warmup_steps": 5, "pca_dim": 8,
                                          "batch_size": 100, "reproducible_noise": True}, data), root, name="seeded")
    plain = train_run(RunConfig("vae", {"epochs": 1, "hidden": 16, "latent_dim": 2}, data), root, name="vae")
    return seeded, plain


@pytest.mark.parametrize("which, words", [(0, "seeded noise"), (1, "ε = ∞")])
def test_seeded_noise_and_non_private_releases_say_so_in_the_badge(uncovered_runs, which, words):
    from dpcore.report import load_bundle, run_report

    run = uncovered_runs[which]
    kind, badge = _badge(run_report(run.path, bundle=load_bundle(run.path, n_samples=10)))
    assert kind == "partial" and GREEN not in badge and words in badge, badge


def test_the_shareable_release_reads_for_people(table_run):
    """Numbers in the column's precision (never 1.728e+04), settings in words, the ledger folded,
    one bar per mechanism, and what ε covers in three short sentences."""
    from dpcore.report import load_bundle, run_report

    text = run_report(table_run.path, bundle=load_bundle(table_run.path))
    rows = text[text.index("<h2>Synthetic rows"):].split("<h2>")[1]
    cells = re.findall(r"<td>([^<]*)</td>", rows)
    assert cells and not any(re.search(r"\de[+-]\d", c) for c in cells), cells[:12]
    incomes = cells[1::3]
    assert all(re.fullmatch(r"\d+\.\d\d", c) for c in incomes if c), incomes[:5]  # cents, as written
    assert "<details><summary>Every noisy step of the training" in text
    assert "<details><summary>The " in text and "settings this model was trained with" in text
    import dataclasses
    import html

    from dpcore.models import config_class

    helps = [f.metadata["help"] for f in dataclasses.fields(config_class("p3gm")) if f.metadata.get("help")]
    assert sum(html.escape(h) in text for h in helps) >= len(helps) - 2  # each setting says what it is
    summary = text[text.index("<h2>Summary"):text.index("<h2>Details")]
    covers = summary[summary.index("What ε covers:"):]
    assert covers.count(". ") <= 3 and "Adding or removing any one person" in covers


def test_budget_bars_are_one_per_mechanism():
    from dpcore.figures.privacy import _grouped

    rows = [{"name": "aim: marginals", "share": 0.1, "steps": 1}] * 9 + [{"name": "dataset-size", "share": 0.1,
                                                                           "steps": 1}]
    out = _grouped(rows)
    assert [r["name"] for r in out] == ["aim: marginals (×9)", "dataset-size"]
    assert out[0]["share"] == pytest.approx(0.9) and out[0]["steps"] == 9


def test_numbers_without_a_written_precision_show_three_digits_of_their_public_range():
    """Declared or DP bounds carry no precision (it would be read off the rows): the release shows
    about three significant digits of the public range instead of 32.1933 or 1.728e+04."""
    import pandas as pd

    from dpcore.data.schema import ColumnSpec, Schema
    from dpcore.release import rows_table, shown_decimals

    schema = Schema([ColumnSpec("age", "numeric", 0, 120), ColumnSpec("bmi", "numeric", 10, 60),
                     ColumnSpec("income", "numeric", 0, 131072), ColumnSpec("rate", "numeric", 0, 0.05),
                     ColumnSpec("fee", "numeric", 0, 100, decimals=2), ColumnSpec("city", "categorical",
                                                                                   categories=["a"])])
    assert [shown_decimals(c) for c in schema.columns] == [0, 1, 0, 4, 2, None]
    frame = pd.DataFrame({"age": [32.1933], "bmi": [23.4567], "income": [17280.4], "rate": [0.012345],
                          "fee": [3.5], "city": ["a"]})
    cells = re.findall(r"<td>([^<]*)</td>", rows_table(frame, schema=schema))
    assert cells == ["32", "23.5", "17280", "0.0123", "3.50", "a"]


def test_the_release_names_what_was_read_from_the_rows_column_by_column(table_run):
    """With DP bounds (the app's default) only the categories come from the rows: "ranges and
    categories" overstated what ε leaves out. The words name each column, ranges only where read."""
    from dpcore.data.schema import ColumnSpec, Schema
    from dpcore.release_words import read_from_rows
    from dpcore.report import load_bundle, run_report

    dp_bounds = Schema([ColumnSpec("lvr", "numeric", 0.0, 1.0, origin="dp"),
                        ColumnSpec("lender", "categorical", categories=["a", "b"], origin="data"),
                        ColumnSpec("deny", "categorical", categories=["no", "yes"], origin="data")], target="deny")
    assert read_from_rows(dp_bounds) == "the categories of lender and deny"
    inferred = Schema([ColumnSpec("lvr", "numeric", 0.0, 1.0, origin="data"),
                       ColumnSpec("age", "integer", 18, 80, origin="declared"),
                       ColumnSpec("deny", "categorical", categories=["no", "yes"], origin="data")], target="deny")
    assert read_from_rows(inferred) == "the categories of deny and the range of lvr"
    assert read_from_rows(None) == "the columns' ranges and categories"

    b = load_bundle(table_run.path, n_samples=10)
    expected = read_from_rows(b.model.template.schema)
    assert "approved" in expected  # the target's levels were read from the rows
    _, badge = _badge(run_report(table_run.path, bundle=b))
    assert expected in badge
