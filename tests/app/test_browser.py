"""The workbench in a real browser: three journeys on the app's defaults (a lecturer's Story pair, a
stakeholder's Train → Compare → Privacy, a CSV user's table → model → utility), then Data → Train
(live curve) → Compare → Privacy → Runs on digits.

Starts `streamlit run app.py` on a free localhost port with a temporary runs folder and drives
Debian's chromium through Playwright. Screenshots go to $DPCORE_SCREENSHOTS (e.g.
`DPCORE_SCREENSHOTS=docs/screenshots`), else to the test's tmp folder. Skips, with the reason, when
chromium or playwright is missing.
"""
from __future__ import annotations

import re
import time

import pytest
from browser_kit import (  # tests/app/conftest.py puts it on the path
    MEMBERSHIP_PLOT,
    _clean,
    _data_page,
    _fashion_installed,
    _goto,
    _idle,
    _loss_points,
    _need_browser,
    _no_exception,
    _set_number,
    _slide,
    _streamlit,
    _upload,
    _wait_text,
)

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def first_start(tmp_path_factory):
    """The app's first start on an empty runs folder, as a presenter gets it: the Story trains. On a
    machine without Fashion-MNIST (its folder pointed at an empty one), so on digits: the whole
    default Story on Fashion-MNIST takes 2–3 min of the suite's budget, and its numbers are
    `bench/story_defaults.py`'s (docs/benchmarks.md); what this test checks is the page."""
    _need_browser()
    runs = tmp_path_factory.mktemp("runs")
    no_fashion = tmp_path_factory.mktemp("no-fashion-mnist")
    with _streamlit(runs, DPCORE_STORY_AUTOSTART="1", DPCORE_FASHION_MNIST_DIR=str(no_fashion)) as url:
        yield url, runs





LEGEND_NAMES = """() => [...document.querySelectorAll('.js-plotly-plot')].filter(gd => gd.layout && gd.layout.title
    && gd.layout.title.text.includes('Membership')).flatMap(gd => gd.data.filter(t => t.showlegend !== false)
    .map(t => t.name))"""
LESSON_NAMES = """() => [...document.querySelectorAll('.js-plotly-plot')].filter(gd => gd.layout && gd.layout.title
    && gd.layout.title.text.includes('trained on')).flatMap(gd => gd.data.map(t => t.name))"""


@pytest.mark.timeout(900)  # the default Story on digits: ~30 s on two quiet cores, minutes under load
def test_story_is_ready_when_opened(first_start, shots):
    """A presenter starts the app and opens the Story page: the first start already trains the pair
    in the background (one job, also shown on Runs); the page shows its progress with the time left
    and nothing stale, then the verdict — privacy costs some utility and buys protection — with a
    legend that names side, attack and AUC in under 40 characters, at 1400×900."""
    from dpcore.report import headline, load_evaluation

    url, runs = first_start
    with _data_page(url, height=900, width=1400, failure_shot=shots / "failure-story.png") as page:
        _idle(page)
        page.get_by_text("The Story is being prepared").wait_for(timeout=60_000)  # the first page says so
        page.wait_for_selector("[data-testid='stProgress']", timeout=60_000)
        _goto(page, "Story")
        page.wait_for_selector("[data-testid='stProgress']", timeout=120_000)
        page.get_by_text(re.compile(r"about \d+( min \d+)? s left")).first.wait_for(timeout=300_000)
        assert not page.get_by_text("Train the Story above").count()  # no stale box under the bar
        _no_exception(page)
        page.screenshot(path=str(shots / "story_progress.png"))
        _goto(page, "Runs")
        bars = page.locator("[data-testid='stProgress']")
        bars.first.wait_for(timeout=60_000)
        assert bars.first.inner_text().replace("\u2060", "").startswith("Story job: ") and bars.count() == 1
        _goto(page, "Story")
        _wait_text(page, r"Privacy costs some utility|This pair does not show the lesson", timeout=1_800_000)
        _clean(page)
        verdict = page.locator("[data-testid='stAlertContentSuccess']").first.inner_text()
        assert "Privacy costs some utility" in verdict and "It buys protection" in verdict, verdict
        tiles = page.locator("[data-testid='stMetric']", has_text="canary audit proves")
        assert tiles.count() == 2 and all("ε ≥" in t for t in tiles.all_inner_texts())  # the headline: the audit
        lesson = page.evaluate(LESSON_NAMES)  # one chart, one curve a side
        assert sum(n.startswith(("with privacy", "without privacy")) for n in lesson) == 2, lesson
        page.get_by_text(re.compile(r"Every attack on both sides")).click()  # the other curves, behind it
        _idle(page)
        names = page.evaluate(LEGEND_NAMES)
        assert any(n.startswith("non-private · ") and "AUC" in n for n in names), names
        assert all(len(n) < 40 for n in names), max(names, key=len)
        heads = {d.name.split("-")[0]: headline(load_evaluation(d)) for d in runs.iterdir()
                 if (d / "evaluation.json").exists()}
        assert heads["pgm"]["utility"] >= heads["p3gm"]["utility"], heads  # the run folders agree
        shares = [int(x) for x in re.findall(r"keeps (\d+) %", verdict)]
        assert shares == [round(100 * heads[m]["utility"] / heads[m]["reference"]) for m in ("p3gm", "pgm")], verdict
        page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')].find(gd =>
            gd.layout.title.text.includes('Membership')).scrollIntoView({block: 'center'})""")
        page.screenshot(path=str(shots / "story_attacks.png"))
        page.get_by_text(re.compile(r"Every attack on both sides")).click()  # closed again for the headline shot
        _idle(page)
        page.locator("[data-testid='stMetric']", has_text="canary audit proves").first.scroll_into_view_if_needed()
        page.screenshot(path=str(shots / "story.png"))


def test_three_journeys_on_the_defaults(server, shots):
    """(a) A lecturer opens the app on its default data (the Story: `test_story_is_ready_when_opened`).
    (b) A stakeholder trains with the Train page's defaults, then opens Compare and Privacy.
    The CSV user's journey (upload, schema, train, compare, release) is the data owner's
    (test_browser_journey.py); a table's utility on Compare is `test_compare_on_a_table_...`'s, and the
    model recommended for an upload is test_recommend_page.py's."""
    if not _fashion_installed():
        pytest.skip("Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist): the "
                    "journeys check the defaults' numbers on it")

    url, _ = server
    with _data_page(url, height=1400, failure_shot=shots / "failure-journeys.png") as page:
        # (a) the lecturer's first page: the default data
        _idle(page)
        page.wait_for_selector("h3:has-text('Active dataset: fashion-mnist')")
        page.wait_for_selector("[data-testid='stPlotlyChart']")
        _clean(page)
        assert "20,000" in page.locator("[data-testid='stMetric']").first.inner_text()
        assert page.get_by_text("Why Fashion-MNIST").count()
        page.screenshot(path=str(shots / "data.png"))

        # (b) the stakeholder: Train with the defaults, then Compare and Privacy
        _goto(page, "Train")
        page.wait_for_selector("text=Noise preview")
        _clean(page)
        page.get_by_role("button", name="Start training").click()
        page.get_by_text("Training finished").wait_for(timeout=600_000)
        _idle(page)
        _clean(page)
        page.screenshot(path=str(shots / "train.png"))
        _goto(page, "Compare")
        page.wait_for_selector("[data-testid='stPlotlyChart']")
        _clean(page)
        page.screenshot(path=str(shots / "compare.png"))
        _goto(page, "Privacy")
        run_attacks = page.get_by_role("button", name=re.compile("Run the attacks"))
        if run_attacks.count():  # a long estimate waits for a click
            run_attacks.click()
        page.wait_for_function(MEMBERSHIP_PLOT, timeout=600_000)
        _idle(page)
        _clean(page)
        page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')].find(gd =>
            gd.layout.title.text.includes('Membership')).scrollIntoView({block: 'center'})""")
        page.screenshot(path=str(shots / "privacy.png"))


def test_walkthrough(server, shots):
    url, runs = server
    with _data_page(url, height=1200, failure_shot=shots / "failure.png", query="?dataset=digits") as page:
        _idle(page)
        page.wait_for_selector("[data-testid='stPlotlyChart']")
        _no_exception(page)
        assert "1,438" in page.locator("[data-testid='stMetric']").first.inner_text()

        # Train a small P3GM on digits and watch it live.
        _goto(page, "Train")
        page.wait_for_selector("text=Noise preview")
        _slide(page, "Epochs", 2)  # small epochs: arrow keys move the slider
        page.get_by_text("Advanced settings").click()
        _set_number(page, "hidden", 512)  # slow enough on a quiet machine for two polls
        _set_number(page, "warmup steps", 1500)  # a few seconds of live curve on a quiet machine
        page.get_by_role("button", name="Start training").click()
        page.wait_for_selector("[data-testid='stProgress']")
        seen: list[int] = []  # points in the live chart at each poll
        deadline = time.time() + 240
        while time.time() < deadline and not page.get_by_text("Training finished").count():
            n = _loss_points(page)
            if n and (not seen or n != seen[-1]):
                seen.append(n)
                if len(seen) == 2:
                    # the run may end between two polls: its panel is then titled "Last run"
                    page.get_by_text(re.compile(r"^(Live|Last) run$")).first.scroll_into_view_if_needed()
                    page.screenshot(path=str(shots / "train_live.png"))
            page.wait_for_timeout(200)
        assert seen, "the live loss curve never appeared"
        assert len(seen) >= 2 and seen == sorted(seen), f"the live loss curve did not grow: {seen}"
        page.get_by_text("Training finished").wait_for(timeout=180_000)
        _idle(page)
        _no_exception(page)
        live = page.get_by_text(re.compile(r"p3gm-digits-eps10-epochs2-s0-")).first  # name: what differs
        assert live.count(), "the run name does not say which settings differ from the defaults"

        _goto(page, "Compare")
        page.wait_for_selector("[data-testid='stPlotlyChart']")
        _no_exception(page)
        assert page.locator("[data-testid='stPlotlyChart']").count() >= 2

        # the Privacy page's attacks on a finished run: test_three_journeys_on_the_defaults

        _goto(page, "Runs")
        _no_exception(page)
        page.screenshot(path=str(shots / "runs.png"))


PAYLOAD_URL = "127.0.0.1:9"
COLUMN = f"![t](http://{PAYLOAD_URL}/track.png)"
CATEGORY = f"<a href='http://{PAYLOAD_URL}/c'>c</a>"
STYLED = "<span style='color:red'>red</span>"
INJECTED = f"""() => [...document.querySelectorAll(
    "img[src*='{PAYLOAD_URL}'], a[href*='{PAYLOAD_URL}'], [*|href*='{PAYLOAD_URL}'], [style*='color:red'], "
    + "[style*='color: red']")].map(e => (e.parentElement || e).outerHTML.slice(0, 300))"""


def test_markup_from_data_is_never_rendered(server, tmp_path):
    """Column names and category values that are Markdown/HTML: shown as text on the Data page and in
    the Compare page's plots, and the browser never requests the payload URL."""
    from dpcore.jobs import train_run
    from dpcore.runs import RunConfig

    url, runs = server
    rows = "".join(f"{i % 9},{[CATEGORY, STYLED, 'x'][i % 3]},{i % 2}\n" for i in range(300))
    csv = tmp_path / "markup.csv"
    csv.write_text(f'"{COLUMN}",{CATEGORY.replace(",", "")},y\n' + rows)
    train_run(RunConfig("pgm", {"pca_dim": 2, "hidden": 8, "epochs": 1, "batch_size": 50, "warmup_steps": 0},
                        {"csv": str(csv), "target": "y"}), runs, name="markup")
    hits: list[str] = []
    with _data_page(url, height=1200, on_request=lambda r: hits.append(r.url) if PAYLOAD_URL in r.url else None) as page:
        _idle(page)
        _upload(page, csv)
        page.get_by_text("read from the rows (not covered by ε)").click()  # the column's name in the warning
        _idle(page)
        page.get_by_role("button", name="Use this table").click()
        page.wait_for_selector("h3:has-text('Active dataset: markup.csv')")
        _idle(page)
        _no_exception(page)
        assert page.get_by_text("Preprocessing not covered by ε").count()
        shown = page.locator("[data-testid='stAlert']").first.inner_text().replace("\u2060", "")
        assert COLUMN in shown and CATEGORY in shown  # shown as text
        assert page.evaluate(INJECTED) == []

        _goto(page, "Compare")
        page.wait_for_selector("[data-testid='stPlotlyChart']", state="attached")  # in hidden tabs
        _idle(page)
        page.wait_for_function("""() => [...document.querySelectorAll('.js-plotly-plot')].some(
            gd => gd.layout && gd.layout.title && gd.layout.title.text.includes('TVD'))""")
        _no_exception(page)
        assert page.evaluate(INJECTED) == []
        labels = page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot text')]"
                               ".map(t => t.textContent).join(' ')")
        assert "<a href=" in labels or "<span style=" in labels  # shown literally
    assert hits == [], hits


def test_runs_page_shows_a_finished_sweep(server, shots):
    """A real (tiny) grid sweep, then the Runs page in the browser: the Pareto front and the
    encoder share × PCA dimension heatmap are drawn, without an exception box."""
    from dpcore.jobs.sweep import SweepSpec, run_sweep

    url, runs = server
    spec = SweepSpec(model="p3gm", grid={"epsilon": [2.0], "encoder_share": [0.2, 0.4], "pca_dim": [4, 8]},
                     name="browser", data={"dataset": "digits", "test_size": 0.2},
                     params={"epochs": 1, "hidden": 16, "em_iters": 2, "warmup_steps": 0})
    summary = run_sweep(spec, runs, backend="in-process")
    assert [r["status"] for r in summary["runs"]] == ["done"] * 4
    with _data_page(url, height=1600) as page:
        _idle(page)
        _goto(page, "Runs")
        titles = """() => [...document.querySelectorAll('.js-plotly-plot')]
            .map(gd => (gd.layout && gd.layout.title && gd.layout.title.text) || '')"""
        page.wait_for_function(f"() => ({titles})().some(t => t.includes('Pareto front'))")
        page.wait_for_function(f"() => ({titles})().some(t => t.includes(' at ε = '))")
        _no_exception(page)
        page.get_by_text("Privacy–utility Pareto front").first.scroll_into_view_if_needed()
        page.screenshot(path=str(shots / "sweep.png"))


def test_compare_on_a_table_shows_quality_and_point_masses(server, shots):
    """Two tiny runs on a table whose income is 0 in a quarter of the rows, side by side on Compare's
    Marginals tab: the quality summary beside TVD, income's "= 0" bar for real and synthetic, and
    both 2-way heatmaps on one colour scale, each with its colour bar (screenshot compare_table.png)."""
    import numpy as np

    from dpcore.jobs import train_run
    from dpcore.runs import RunConfig

    url, runs = server
    rng = np.random.default_rng(0)
    n = 600
    income = np.where(rng.random(n) < 0.25, 0, rng.integers(5_000, 90_000, n))
    rows = [f"{a},{i},{r},{s}" for a, i, r, s in zip(rng.integers(18, 80, n), income,
                                                      rng.choice(["north", "south", "east"], n),
                                                      rng.choice(["yes", "no"], n))]
    csv = runs.parent / "incomes.csv"
    csv.write_text("age,income,region,smoker\n" + "\n".join(rows) + "\n")
    data = {"csv": str(csv), "target": "smoker"}
    tiny = {"epochs": 3, "hidden": 64, "warmup_steps": 50, "pca_dim": 3}
    train_run(RunConfig("p3gm", {**tiny, "epsilon": 1.0}, data), runs, name="incomes-p3gm")
    train_run(RunConfig("mst", {"epsilon": 1.0}, data), runs, name="incomes-mst")
    with _data_page(url, height=2000, failure_shot=shots / "failure-compare-table.png") as page:
        _idle(page)
        _goto(page, "Compare")
        page.get_by_label("Run", exact=True).click()
        page.get_by_role("option", name=re.compile("incomes-p3gm")).click()
        _idle(page)
        page.get_by_label("Compare with (optional)").click()
        page.get_by_role("option", name=re.compile("incomes-mst")).click()
        _idle(page)
        page.get_by_role("tab", name="Marginals").click()
        page.get_by_text("Column pairs").first.wait_for()
        for i in range(2):
            page.get_by_label("Column (worst first)").nth(i).click()
            page.get_by_role("option", name=re.compile(r"^income")).click()
            _idle(page)
        _clean(page)
        assert page.locator("[data-testid='stMetric']", has_text="Quality").count() == 2
        plots = page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')].map(gd =>
            [String((gd.layout.title || {}).text || ''), gd.data.length && gd.data[0].x ? gd.data[0].x[0] : null])""")
        bars = [first for title, first in plots if "income: TVD" in title]
        assert bars == ["= 0", "= 0"], plots
        scales = page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')].flatMap(gd =>
            gd.data.filter(t => t.type === 'heatmap').map(t => [t.zmin, t.zmax, t.showscale !== false]))""")
        assert len(scales) == 2 and scales[0] == scales[1] and scales[0][2], scales
        page.mouse.move(5, 5)  # no tooltip over a title
        page.wait_for_timeout(500)
        page.screenshot(path=str(shots / "compare_table.png"))
        # the Utility tab on a table: a classifier trained on synthetic rows, scored on real held-out rows
        page.get_by_role("tab", name="Utility").click()
        page.get_by_text("synthetic → real").first.wait_for(timeout=300_000)
        _idle(page)
        value = page.locator("[data-testid='stMetric']", has_text="synthetic → real").first.inner_text()
        assert re.search(r"\d\.\d{2}", value), value
        page.screenshot(path=str(shots / "compare_table_utility.png"))
