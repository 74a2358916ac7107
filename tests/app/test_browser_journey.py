"""The data owner's journey in a real browser, with no edit outside the app (issue: "The data
owner's journey without dead ends"): a generated patients table with an admission date, an income
that is exactly zero for a quarter of the people, a 0/1 target and gaps is uploaded, used, trained
with AIM and P3GM at ε = 1, the page reloaded (the table stays: no fallback to the demo data),
compared, and the AIM run given a usefulness score covered by ε and released. AIM's rounds and
P3GM's epochs are set lower on the Train page, as a user in a hurry would: what is checked is the
journey, and the models' defaults have their own tests (tests/models/test_quality_floor.py).

Checks what a person would: the synthetic dates parse back in the file's format, AIM's share of
income == 0 is within 0.05 of the real one, the shareable release carries the noisy score and its
ledger record, and no money or age is printed in scientific notation.
"""
from __future__ import annotations

import base64
import io
import json
import re
import time

import numpy as np
import pandas as pd
import pytest
from browser_kit import _clean, _data_page, _goto, _idle, _rerun_ended, _runs_ended, _set_number, _slide, _upload

from dpcore.evaluate.released_score import SCORE_RECORD

pytestmark = pytest.mark.browser

ROWS = 3000  # the table: AIM's share of zeros within 0.05 (1 500 rows missed it by 0.015 once)
SCIENTIFIC = re.compile(r"\d\.\d+e[+-]?\d+", re.I)


def patients_frame(n: int = ROWS, seed: int = 0) -> pd.DataFrame:
    """What a hospital's export looks like: ages, an income that is 0 for the unemployed, regions,
    education, smoking, a bmi, visits, an admission date, readmitted 0/1, and ~3 % gaps."""
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 91, n)
    employed = rng.random(n) > 0.25
    income = np.where(employed, np.round(rng.lognormal(10.2, 0.6, n), -1), 0).astype(int)
    smoker = rng.choice(["yes", "no"], n, p=[0.2, 0.8])
    visits = rng.poisson(2 + (age > 60) * 2)
    logit = -2.0 + 0.04 * (age - 50) + 0.9 * (smoker == "yes") + 0.3 * visits - 0.6 * employed
    frame = pd.DataFrame({
        "age": age, "income": income,
        "region": rng.choice(["north", "south", "east", "west"], n, p=[0.4, 0.3, 0.2, 0.1]),
        "education": rng.choice(["school", "college", "university"], n, p=[0.5, 0.3, 0.2]),
        "smoker": smoker, "bmi": np.round(rng.normal(26, 4, n).clip(15, 45), 1), "visits": visits,
        "admit_date": (np.datetime64("2023-01-01") + rng.integers(0, 700, n)).astype(str),
        "readmitted": (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)})
    for column in ("bmi", "region", "visits"):
        frame[column] = frame[column].astype(object).where(rng.random(n) > 0.03, None)
    return frame


def _active(page) -> str:
    return page.locator("h3", has_text="Active dataset").first.inner_text().replace("\u2060", "")


def _pick(page, label: str, option: str) -> None:
    """Choose `option` in the selectbox labelled `label`."""
    box = page.get_by_role("combobox", name=label, exact=True)
    box.click()
    box.fill(option)  # typing filters the options; the first match is taken
    page.get_by_role("option").first.click()
    _idle(page)


SCHEMA_ROW_PX = 35  # the schema editor's header and row height
LOWER_X, UPPER_X, PUBLIC_X = 205, 282, 467  # the middle of its "lower", "upper" and "public" cells
GRID_WAIT = 10_000  # ms one step in the grid may take on a loaded machine before it is tried again
SELECTED = """() => { const c = document.querySelector('[id^="glide-cell-"][aria-selected="true"]');
    return c ? c.id : null; }"""
EDITOR_OPEN = "() => !!document.activeElement && document.activeElement.classList.contains('gdg-input')"
HOLDS = "v => !!document.activeElement && document.activeElement.value === v"
RENDERED = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"  # two frames
CELL_IS = "([id, v]) => { const c = document.getElementById(id); return !!c && c.textContent === v; }"
# after Enter in the editor: closed, and the cell shows the value or the selection moved on without it
COMMITTED = """([id, v]) => { const a = document.activeElement;
    if (a && a.classList.contains('gdg-input')) return false;
    const c = document.getElementById(id);
    if (c && c.textContent === v) return true;
    const s = document.querySelector('[id^="glide-cell-"][aria-selected="true"]');
    return !!s && s.id !== id; }"""


def _selected_cell(page) -> tuple[int, int] | None:
    """(column, row) of the cell the grid marks selected in its accessible table, or None."""
    got = page.evaluate(SELECTED)
    if not got:
        return None
    col, row = got.split("-")[-2:]
    return int(col), int(row)


def _wait(page, condition: str, arg=None, timeout: float = GRID_WAIT) -> bool:
    """Whether `condition` held within `timeout` ms (the grid's answer to a click or a key)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(condition, arg=arg, timeout=timeout)
        return True
    except PlaywrightTimeout:
        return False


def _select(page, col: int, row: int, x: float) -> None:
    """Select the cell (col, row): a click on it, checked in the grid's accessible table; where the
    click landed elsewhere (the canvas can move under a click while the page reruns), the arrow keys
    from there. Each step waits for the grid to show its result, up to GRID_WAIT on a loaded
    machine; a retry starts with a click outside the grid, from the same state as the first try."""
    grid = page.locator("[data-testid='stDataFrame']").first
    target = f"glide-cell-{col}-{row}"
    is_target = f"() => ({SELECTED})() === '{target}'"
    for attempt in range(6):
        page.keyboard.press("Escape")
        if attempt:  # out of the grid, as on the first try
            page.get_by_text("Choose the private data").first.click()
        _idle(page)
        box = grid.bounding_box()
        page.mouse.click(box["x"] + x, box["y"] + SCHEMA_ROW_PX * (row + 1.5))
        if _wait(page, is_target, timeout=GRID_WAIT // 4):
            return
        at = _selected_cell(page)
        if at is None:
            continue
        for key, steps in (("ArrowDown" if row > at[1] else "ArrowUp", abs(row - at[1])),
                           ("ArrowRight" if col > at[0] else "ArrowLeft", abs(col - at[0]))):
            for _ in range(steps):
                page.keyboard.press(key)
        if _wait(page, is_target):
            return
    assert _selected_cell(page) == (col, row), (_selected_cell(page), (col, row))


FOCUSED = """() => { const a = document.activeElement;
    return a ? `${a.tagName}.${String(a.className).slice(0, 40)} value=${a.value}` : "nothing"; }"""


class DroppedEdit(AssertionError):
    """The grid kept refusing an edit (seen once in CI on a loaded machine, six tries alike)."""


def _declare(page, row: int, lower: int, upper: int) -> None:
    """Type public bounds into the schema editor's row `row` (a canvas grid: select the cell, Enter
    opens its editor, type, Enter), checked through the grid's accessible cells. Each step waits for
    what the grid needs next, never a fixed time: the editor open before the keys; the keys in the
    editor and drawn before Enter (the editor commits the value of its last render: an Enter right
    after the keys committed the cell's old value, half the edits even on a quiet machine); the cell
    showing the value; and the rerun that edit started ended before the next edit (an edit made
    while the page reruns can be dropped). A dropped edit is seen as soon as the editor closed, and
    tried again."""
    for col, x, value in ((2, LOWER_X, lower), (3, UPPER_X, upper)):
        cell_id, text = f"glide-cell-{col}-{row}", str(value)
        cell = page.locator(f"#{cell_id}")
        seen, ran = [], None  # what held the focus when an attempt failed: the message says which way it failed
        for attempt in range(6):
            if ran is not None and cell.text_content() == text:  # an earlier try's edit showed late
                break
            if attempt:
                page.get_by_text("Choose the private data").first.click()
            _select(page, col, row, x)
            page.keyboard.press("Enter")  # opens the cell's editor
            if not _wait(page, EDITOR_OPEN):
                seen.append(f"Enter opened no editor, focus on {page.evaluate(FOCUSED)}")
                continue
            page.keyboard.press("ControlOrMeta+A")  # an editor that holds text: the keys replace it
            page.keyboard.type(text)
            if not _wait(page, HOLDS, text):
                seen.append(f"typed into {page.evaluate(FOCUSED)}")  # the keys went elsewhere: try again
                continue
            page.evaluate(RENDERED)
            ran = _runs_ended(page)
            page.keyboard.press("Enter")
            if _wait(page, COMMITTED, [cell_id, text]) and cell.text_content() == text:
                break
            seen.append(f"committed, cell {cell.text_content()!r}")
        if cell.text_content() != text:
            raise DroppedEdit(f"row {row} column {col}: {cell.text_content()!r}, not {value}; tries: {seen}")
        if not _rerun_ended(page, ran, timeout=6 * GRID_WAIT):  # the next edit waits for this one's rerun
            raise DroppedEdit(f"row {row} column {col}: the cell shows {value} but the page did not rerun")


def _tick_public(page, row: int) -> None:
    """Tick the schema editor's "public" box of row `row` (its category list is public knowledge): a
    click on it, until the cell reads true and the rerun the tick started has ended."""
    grid = page.locator("[data-testid='stDataFrame']").first
    cell_id = f"glide-cell-5-{row}"
    cell = page.locator(f"#{cell_id}")
    for _ in range(4):
        if cell.text_content() == "true":  # a slow earlier click ticked it after all
            break
        box = grid.bounding_box()
        page.keyboard.press("Escape")
        ran = _runs_ended(page)
        page.mouse.click(box["x"] + PUBLIC_X, box["y"] + SCHEMA_ROW_PX * (row + 1.5))
        if _wait(page, CELL_IS, [cell_id, "true"]):
            _rerun_ended(page, ran, timeout=6 * GRID_WAIT)
        else:
            _idle(page)
    _idle(page)
    if cell.text_content() != "true":
        raise DroppedEdit(f"row {row}: public is {cell.text_content()!r}")


def _done_runs(runs) -> set[str]:
    return {d.name for d in runs.iterdir() if (d / "status.json").is_file()
            and '"done"' in (d / "status.json").read_text()}


def _upload_and_declare(page, csv, shots, tries: int = 3) -> None:
    """Upload `csv` and declare its public knowledge in the schema editor. When the grid keeps
    dropping an edit (DroppedEdit), the page is reloaded and the upload done again, as a person
    would: each failed round is kept as a screenshot with the reason in the log."""
    for attempt in range(tries):
        if attempt:
            page.reload()
            page.wait_for_selector("h1:has-text('Data')")
        _idle(page)
        _upload(page, csv)
        _clean(page)  # the date column is no stop: the editor is there, with no error
        assert not page.locator("[data-testid='stAlertContentError']").count()
        try:
            _declare(page, 0, 0, 120)         # age and income: public knowledge, no ε; the other
            _declare(page, 1, 0, 250_000)     # numbers and the date get DP bounds (the default)
            for row in (2, 3, 4, 8):          # region, education, smoker, readmitted: public lists
                _tick_public(page, row)
            return
        except DroppedEdit as exc:
            if attempt == tries - 1:
                raise
            page.screenshot(path=str(shots / f"failure-declare-{attempt}.png"))
            print(f"schema editor, round {attempt + 1}: {exc}; reloading")


def _train(page, runs, model_label: str, shots, name: str, numbers: dict | None = None,
           slides: dict | None = None) -> str:
    """Train `model_label` at ε = 1 from the Train page; the finished run's name."""
    _goto(page, "Train")
    _pick(page, "Model", model_label)
    page.wait_for_selector("text=Total ε")
    eps = page.get_by_role("slider", name="Total ε")
    eps.focus()
    for _ in range(12):  # the select slider moves by arrow keys
        now = float(eps.get_attribute("aria-valuetext") or eps.input_value())
        if now == 1.0:
            break
        page.keyboard.press("ArrowLeft" if now > 1 else "ArrowRight")
        _idle(page)
    assert float(eps.get_attribute("aria-valuetext") or eps.input_value()) == 1.0
    for label, value in (numbers or {}).items():
        _set_number(page, label, value)
    for label, value in (slides or {}).items():
        _slide(page, label, value)
    _clean(page)
    before = _done_runs(runs)
    page.get_by_role("button", name="Start training").click()
    deadline = time.time() + 600  # the last run's "Training finished" may still be on screen: ask the folder
    while time.time() < deadline and not _done_runs(runs) - before:
        page.wait_for_timeout(500)
    (run,) = _done_runs(runs) - before
    page.get_by_text(re.compile(re.escape(run) + r".*status done")).first.wait_for(timeout=60_000)
    _idle(page)
    _clean(page)
    page.screenshot(path=str(shots / f"journey_{name}.png"))
    return run


@pytest.mark.timeout(1500)
def test_a_data_owner_uploads_trains_reloads_compares_and_releases(server, shots, tmp_path):
    url, runs = server
    real = patients_frame()
    csv = tmp_path / "patients.csv"
    real.to_csv(csv, index=False)
    with _data_page(url, height=1400, failure_shot=shots / "failure-journey.png") as page:
        _upload_and_declare(page, csv, shots)
        page.get_by_text(re.compile(r"DP bounds for bmi, visits, admit_date")).first.wait_for()
        _clean(page)
        page.screenshot(path=str(shots / "journey_upload.png"))
        page.get_by_role("button", name="Use this table").click()
        page.wait_for_selector("h3:has-text('Active dataset: patients.csv')")
        _idle(page)
        _clean(page)
        assert "table=" in page.url

        aim = _train(page, runs, "AIM", shots, "aim", {"max time": 5})  # seconds of rounds: a short suite
        p3gm = _train(page, runs, "P3GM", shots, "p3gm", slides={"Epochs": 2})  # ~50 of its ~1 000 default steps
        assert json.loads((runs / p3gm / "config.json").read_text())["params"]["epochs"] == 2

        page.reload()  # the upload stays: same table, no fallback to the demo data
        page.wait_for_selector("h1")
        _idle(page)
        _goto(page, "Data")
        assert _active(page) == "Active dataset: patients.csv"

        _goto(page, "Compare")
        _pick(page, "Run", aim)
        _pick(page, "Compare with (optional)", p3gm)
        page.get_by_role("tab", name="Marginals").click()
        page.wait_for_selector("[data-testid='stPlotlyChart']")
        _idle(page)
        _clean(page)
        text = page.locator("[data-testid='stMain']").inner_text()
        assert "fashion" not in text.lower() and "digits" not in text.lower()
        page.screenshot(path=str(shots / "journey_compare.png"))

        _goto(page, "Runs")
        _pick(page, "Run", aim)
        # offered at the ε that leaves the run's as it is (the keyed split: parallel to the training)
        eps_before = json.loads((runs / aim / "ledger.json").read_text())["epsilon"]
        page.get_by_role("button", name=re.compile(r"Add a usefulness score covered by ε \(ε = 0\.\d+\)")).click()
        page.get_by_text("In the shareable release:").first.wait_for(timeout=300_000)
        _idle(page)
        _clean(page)
        assert not page.get_by_text("Preprocessing not covered by ε").count()  # declared or DP: all in ε
        page.get_by_role("button", name="Shareable release").click()
        _idle(page)
        with page.expect_download() as dl:
            page.get_by_role("button", name=re.compile("Download shareable release")).click()
        release = open(dl.value.path(), encoding="utf-8").read()
        page.get_by_text("In the shareable release:").first.scroll_into_view_if_needed()
        page.screenshot(path=str(shots / "journey_release.png"))

    # usefulness evidence covered by ε: the sentence, and its record in the release's ledger
    assert json.loads((runs / aim / "ledger.json").read_text())["epsilon"] <= eps_before * (1 + 1e-12)
    assert re.search(r"kept aside from training with balanced accuracy 0\.\d\d ± 0\.\d\d \(0\.50 = guessing\)",
                     release), re.findall(r"[^.]*kept aside[^.]*", release)[:2]
    assert "not extra spending" in release  # parallel: part of the run's ε
    assert SCORE_RECORD in release
    # the released rows: dates as written in the file, zeros kept, no scientific notation
    link = re.search(r"href='data:text/csv;base64,([^']+)'", release)
    assert link, "the shareable release has no synthetic rows"
    synth = pd.read_csv(io.BytesIO(base64.b64decode(link.group(1))), dtype=str)
    dates = pd.to_datetime(synth["admit_date"].dropna(), format="%Y-%m-%d", errors="coerce")
    assert len(dates) and dates.notna().all(), synth["admit_date"].head()
    income = pd.to_numeric(synth["income"], errors="coerce")
    assert abs((income == 0).mean() - (real["income"] == 0).mean()) <= 0.05, (income == 0).mean()
    for column in ("income", "age"):
        shown = synth[column].dropna()
        assert not shown.str.contains(SCIENTIFIC).any(), shown[shown.str.contains(SCIENTIFIC)].head()
    shown = re.sub(r"<(script|style)\b.*?</\1>", " ", release, flags=re.S | re.I)  # what a reader sees:
    body = re.sub(r"<[^>]+>", " ", shown)  # δ may read 1e-05; a count or an amount never 1.7e+04
    assert not re.search(r"\d(\.\d+)?e\+\d+", body, re.I), re.search(r"\d(\.\d+)?e\+\d+", body, re.I)
