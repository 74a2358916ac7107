"""A data owner's upload under AppTest: a date column is a date (not a stop), the chosen table
survives a reload through the address, a gone table is refused (never swapped for the demo data),
and bad files are named by the user's file name."""
from __future__ import annotations

import html
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
TIMEOUT = 120


def _csv(n=600) -> bytes:
    rng = np.random.default_rng(0)
    days = rng.integers(0, 700, n)
    lines = ["age,income,region,admit_date,target"] + [
        f"{rng.integers(18, 90)},{0 if rng.random() < 0.25 else round(rng.lognormal(10, 0.5))},"
        f"{rng.choice(['north', 'south'])},{np.datetime64('2023-01-01') + d},{rng.choice(['0', '1'])}"
        for d in days]
    return "\n".join(lines).encode()


def _app(**query):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    return at


def _upload(at, name: str, data: bytes):
    at.segmented_control(key="data.source").set_value("Upload a CSV").run()
    at.file_uploader(key="data.upload").set_value((name, data, "text/csv")).run()


def test_a_date_column_is_a_date_and_the_table_survives_a_reload(runs_dir):
    at = _app(dataset="digits")
    _upload(at, "patients.csv", _csv())
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.selectbox(key="data.target").value == "target"
    at.button(key="data.use_csv").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    choice = at.session_state["dpcore.data"]
    assert "drop" not in choice and choice["name"] == "patients.csv"
    # the date column is a date: learnt as day numbers, shown as written in the file
    previews = [d.value for d in at.dataframe if "admit_date" in d.value.columns and "age" in d.value.columns]
    assert previews and all(str(v)[:4] in ("2023", "2024", "2025") for v in previews[-1]["admit_date"])
    assert html.unescape(at.subheader[0].value) == "Active dataset: patients.csv"
    token = at.query_params["table"][0] if isinstance(at.query_params["table"], list) else at.query_params["table"]
    assert "dataset" not in at.query_params and token not in choice["csv"]

    again = _app(table=token)                 # a reload, or the same address in a new tab
    assert not again.exception and not again.error, [e.value for e in again.error]
    assert html.unescape(again.subheader[0].value) == "Active dataset: patients.csv"
    assert again.session_state["dpcore.data"] == choice

    fresh = _app(dataset="digits")            # the Data page lists it to pick again
    fresh.segmented_control(key="data.source").set_value("Upload a CSV").run()
    assert "patients.csv" in fresh.selectbox(key="data.stored").format_func(token)
    fresh.button(key="data.use_stored").click().run()
    assert html.unescape(fresh.subheader[0].value) == "Active dataset: patients.csv"

    Path(choice["csv"]).unlink()              # deleted with its last run
    gone = _app(table=token)
    assert not gone.exception
    errors = [html.unescape(e.value) for e in gone.error]
    assert any("patients.csv is no longer stored" in e for e in errors), errors
    assert "digits" not in "".join(s.value for s in gone.subheader) and "fashion" not in str(gone.session_state["dpcore.data"])
    gone.switch_page("app_pages/train.py").run()  # no page trains on data nobody chose
    assert any("no longer stored" in html.unescape(e.value) for e in gone.error)
    assert "train.start" not in [b.key for b in gone.button]


@pytest.mark.parametrize("data, message", [
    (b"\x89PNG\x00\x01binary", "patients.bin.csv is not UTF-8 text"),
    (b"x\n1.5\n2.25\n3.125\n", "patients.bin.csv has one column"),
    (("id,bmi\n" + "".join(f"{i},{18 + i / 7:.2f}\n" for i in range(80))).encode(), None),
])
def test_bad_files_are_named_by_the_users_file(runs_dir, data, message):
    at = _app(dataset="digits")
    _upload(at, "patients.bin.csv", data)
    assert not at.exception
    if message is None:  # no column can be a target: proposed "(none)", nothing refused
        assert at.selectbox(key="data.target").value == "(none)" and not at.error
        return
    errors = [html.unescape(e.value) for e in at.error]
    assert len(errors) == 1 and message in errors[0], errors
    assert "tmp" not in errors[0]
    assert at.subheader[0].value == "Active dataset: digits"


@pytest.fixture
def arrow_log():
    """What Streamlit logs when a frame it draws is not Arrow-compatible (mixed types in a column)."""
    import io
    import logging

    import streamlit.dataframe_util as du

    buffer, level = io.StringIO(), du._LOGGER.level
    handler = logging.StreamHandler(buffer)
    du._LOGGER.addHandler(handler)
    du._LOGGER.setLevel(logging.INFO)
    yield buffer
    du._LOGGER.removeHandler(handler)
    du._LOGGER.setLevel(level)


def test_a_fresh_upload_estimates_its_bounds_with_dp_and_the_run_counts_them(runs_dir, arrow_log):
    from dpcore.jobs import train_run
    from dpcore.privacy import accountant as acc
    from dpcore.privacy.ledger import PrivacyLedger
    from dpcore.runs import RunConfig

    at = _app(dataset="digits")
    _upload(at, "patients.csv", _csv())
    assert not at.exception and not at.error, [e.value for e in at.error]
    editor = next(d for d in at.dataframe if (d.key or "").startswith("data.schema."))
    rows = editor.value.set_index("column")
    assert editor.proto.placeholder == "—"  # an empty bound reads "—", never a greyed "None"
    assert rows["lower"].isna().all() and rows.loc["age", "note"].endswith("in the rows")
    assert rows.loc["target", "kind"] == "categorical" and rows.loc["target", "categories"] == "0, 1"
    mode = next(r for r in at.radio if r.key.startswith("data.bounds_mode."))
    assert mode.value == "dp"  # the default, covered by ε; 600 rows for three columns is enough (no warning)
    assert not [w.value for w in at.warning if "too few for DP bounds" in w.value]
    share = next(c.value for c in at.caption if c.value.startswith("DP bounds for"))
    assert "age, income, admit_date: ε ≈ 0.38 of the run's budget" in html.unescape(share)
    at.button(key="data.use_csv").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    choice = at.session_state["dpcore.data"]
    assert choice["dp_bounds_noise"] == 10.0 and "bounds" not in choice
    assert choice["types"] == {"age": "integer", "income": "integer", "admit_date": "date"}
    assert choice["date_formats"] == {"admit_date": "%Y-%m-%d"}  # the format cell's, never the rows'
    assert "ArrowInvalid" not in arrow_log.getvalue() and "unsuccessful" not in arrow_log.getvalue()

    # a run on that choice: its bounds are noisy (origin "dp"), one ledger record, inside its ε
    tiny = {"epsilon": 1.0, "epochs": 1, "hidden": 8, "latent_dim": 2, "batch_size": 50}
    run = train_run(RunConfig("dp-vae", tiny, choice), runs_dir, name="dp-vae-dp-bounds")
    model = run.load_model()
    assert {c.name: c.origin for c in model.template.schema.feature_columns if c.is_continuous} == \
        {"age": "dp", "income": "dp", "admit_date": "dp"}
    assert model.template.schema.data_derived == ["region", "target"]  # category lists not ticked public
    ledger = run.ledger()
    bounds = [r for r in ledger if r.name == "preprocessing: noisy bounds"]
    assert len(bounds) == 1 and bounds[0].noise == "secret" and bounds[0].noise_multiplier == 10.0
    without = PrivacyLedger([r for r in ledger if r.name != "preprocessing: noisy bounds"])
    assert run.epsilon == pytest.approx(acc.epsilon(ledger, run.delta)) == pytest.approx(1.0, rel=0.02)
    assert acc.epsilon(without, run.delta) < run.epsilon - 0.05  # the bounds' share is part of ε = 1
