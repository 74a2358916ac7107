"""Benchmark: issue 40's done-when in a real browser — the journey table uploaded, the preselected
target and model accepted, trained at ε = 1 on the defaults, and the one usefulness number read on
every page and report that shows it.

Regenerates: docs/tabular.md#the-journey-in-the-browser-issue-40 (its table) and the screenshots
docs/screenshots/journey-*.png.

What it does, as a data owner would, in headless Chromium (Playwright, /usr/bin/chromium) against
the app started with `make run`'s command (`streamlit run app.py --server.headless true …`, through
tests/app/browser_kit.py) on a free port with a temporary runs folder and the Story's first-start
training off (`DPCORE_STORY_AUTOSTART=0`, so the seconds below are the model's alone):

1. Data: *Upload a CSV*, the journey table (bench/journey_table.py: Ecdat::Hdma's 2 380 mortgage
   applications plus a date, a money column of 61.8 % zeros, a 12-row lender and gaps); the target
   the page guesses and the bounds mode it proposes (DP bounds) are kept: *Use this table*.
2. Train: the model the page preselects and ε = 1 (moved there only if the page's default differs);
   nothing else changed; *Start training*, timed from the click until the run's folder says done.
3. Compare (Utility tab), then Runs: the table's `utility`; *Add a usefulness score covered by ε* at
   the ε the page offers; the page's sentence and the table's `shared (with noise)`; the private
   report and the shareable release, built and downloaded from the page; Compare again (the shared
   value beside the exact one), the Privacy page's utility tile, and the Story when it has a pair.

Recorded: model and target preselected, seconds to train, the machine's 1-minute load before and
after, every page's and report's usefulness number (balanced accuracy, the one measure,
dpcore.evaluate.usefulness) with its real-rows reference, the released noisy value and its ±, and
the AUROCs of the private report's utility table (synthetic → real and real → real, logistic
regression: the usefulness classifier, and the mean of the four classifiers) with the gaps.
`same_number`: every exact number shown equals the run's saved one at the shown precision, and the
released value is within 2 × its ± of it. `auroc_within`: the logistic regression's AUROC gap ≤ 0.15
(issue 40's done-when).

    .venv/bin/python bench/journey_browser.py [--json] [--shots docs/screenshots] [--max-time S]

`--max-time S`: AIM's max time set on the Train page (a quick development run; the measurement
leaves it at the default). Screenshots are PNGs of the part of each page that shows the number.
"""
from __future__ import annotations

import argparse
import html as html_lib
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "app"))  # browser_kit: the app's start and the page waits the browser tests use
sys.path.insert(0, str(ROOT / "bench"))

GAP_GOAL = 0.15  # issue 40: the preselected model's AUROC within 0.15 of the real rows' at ε = 1
NUMBER = r"(\d\.\d+)"


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _combobox(page, label: str) -> str:
    """What a selectbox shows (its input's value)."""
    return page.get_by_role("combobox", name=label, exact=True).input_value()


def _pick(page, label: str, option: str) -> None:
    from browser_kit import _idle

    box = page.get_by_role("combobox", name=label, exact=True)
    box.click()
    box.fill(option)
    page.get_by_role("option").first.click()
    _idle(page)


def _metrics(page) -> dict[str, dict]:
    """{label: {"value", "delta"}} of every st.metric in the main area."""
    return page.evaluate("""() => Object.fromEntries([...document.querySelectorAll(
        "[data-testid='stMain'] [data-testid='stMetric']")].map(m => {
            const t = s => { const e = m.querySelector(s); return e ? e.innerText.trim() : null; };
            return [t("[data-testid='stMetricLabel']"),
                    {value: t("[data-testid='stMetricValue']"), delta: t("[data-testid='stMetricDelta']")}];
        }))""")


def _grid(page) -> list[dict]:
    """The first st.dataframe's rows as {column: text}, read from the grid's accessible table."""
    return page.evaluate("""() => {
        const grid = document.querySelector("[data-testid='stDataFrame'] table[role='grid']");
        if (!grid) return [];
        const head = [...grid.querySelectorAll("thead th")].map(th => th.innerText.trim());
        return [...grid.querySelectorAll("tbody tr")].map(tr => Object.fromEntries(
            [...tr.querySelectorAll("td")].map((td, i) => [head[i], td.innerText.trim()])));
    }""")


def _text(page) -> str:
    return page.locator("[data-testid='stMain']").inner_text()


def _done_runs(runs: Path) -> set[str]:
    return {d.name for d in runs.iterdir() if (d / "status.json").is_file()
            and '"done"' in (d / "status.json").read_text()}


def _download(page, button: str) -> str:
    with page.expect_download() as dl:
        page.get_by_role("button", name=re.compile(button)).click()
    return Path(dl.value.path()).read_text(encoding="utf-8")


def _shot(locator, path: Path) -> str:
    locator.scroll_into_view_if_needed()
    locator.screenshot(path=str(path))
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _report_numbers(report: str) -> dict[str, str]:
    """The report's numbers table: {row label: value} (HTML unescaped)."""
    return {html_lib.unescape(k): html_lib.unescape(v)
            for k, v in re.findall(r"<tr><th>([^<]+)</th><td>([^<]*)</td></tr>", report)}


def _utility_table(report: str) -> dict[str, dict[str, float]]:
    """The private report's utility table: {classifier: {column header: value}}."""
    start = report.find("<th>classifier</th>")
    if start < 0:
        return {}
    table = report[report.rfind("<table>", 0, start):report.find("</table>", start)]
    head = [html_lib.unescape(h) for h in re.findall(r"<th>([^<]+)</th>", table)]
    out = {}
    for row in re.findall(r"<tr><td>(.*?)</tr>", table, flags=re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", "<td>" + row)
        name = re.sub(r"<[^>]+>", "", cells[0])
        out[name] = {h: float(c) for h, c in zip(head[1:], cells[1:]) if re.fullmatch(r"-?\d+\.\d+", c)}
    return out


def _plain(report: str) -> str:
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", report, flags=re.S | re.I)
    return html_lib.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body)))


def _show_report(browser, report: str, path: Path) -> str:
    """Open a downloaded report in a tab of its own and screenshot its title and summary (where the
    usefulness sentence is)."""
    tab = browser.new_page(viewport={"width": 1000, "height": 900})
    try:
        tab.set_content(report, wait_until="load")
        bottom = tab.locator(".summary").first.evaluate("e => e.getBoundingClientRect().bottom + window.scrollY")
        tab.screenshot(path=str(path), clip={"x": 0, "y": 0, "width": 1000, "height": int(bottom) + 12}, full_page=True)
    finally:
        tab.close()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def journey(shots: Path, max_time: int | None = None) -> dict:
    import journey_table
    from browser_kit import ARGS, CHROMIUM, _clean, _goto, _idle, _streamlit, _upload
    from playwright.sync_api import sync_playwright

    shots.mkdir(parents=True, exist_ok=True)
    out: dict = {"date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count(), "load_start": _load(), "shots": {}}
    with tempfile.TemporaryDirectory(prefix="journey-") as tmp:
        tmp_path = Path(tmp)
        runs = tmp_path / "runs"
        runs.mkdir()
        csv = journey_table.write_csv(tmp_path / journey_table.NAME)
        with _streamlit(runs, DPCORE_STORY_AUTOSTART="0") as url, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.set_default_timeout(180_000)
            page.goto(url)
            page.wait_for_selector("h1:has-text('Data')")
            _idle(page)

            # 1. Data: the upload, its guessed target and the proposed bounds mode, kept as they are
            _upload(page, csv)
            out["target"] = _combobox(page, "Target column (the label to predict)")
            out["bounds_mode"] = page.locator("[data-testid='stRadio'] input:checked").first.evaluate(
                "e => e.closest('label').innerText.trim()")
            page.get_by_role("button", name="Use this table").click()
            page.wait_for_selector(f"h3:has-text('Active dataset: {journey_table.NAME}')")
            _idle(page)
            _clean(page)

            # 2. Train: the preselected model at ε = 1
            _goto(page, "Train")
            out["model"] = _combobox(page, "Model")
            out["recommendation"] = page.get_by_text(re.compile("Recommended for this data")).first.inner_text()
            eps = page.get_by_role("slider", name="Total ε")
            out["epsilon_default"] = float(eps.get_attribute("aria-valuetext") or eps.input_value())
            eps.focus()
            for _ in range(12):
                now = float(eps.get_attribute("aria-valuetext") or eps.input_value())
                if now == 1.0:
                    break
                page.keyboard.press("ArrowLeft" if now > 1 else "ArrowRight")
                _idle(page)
            if max_time is not None:
                box = page.get_by_label("max time", exact=True)
                box.fill(str(max_time))
                box.press("Enter")
                _idle(page)
            out["max_time"] = page.get_by_label("max time", exact=True).input_value() \
                if page.get_by_label("max time", exact=True).count() else None
            _clean(page)
            page.set_viewport_size({"width": 1280, "height": 620})
            out["shots"]["train"] = _shot(page.locator("[data-testid='stMain']"), shots / "journey-train.png")
            page.set_viewport_size({"width": 1280, "height": 1000})
            before = _done_runs(runs)
            out["load_before_training"] = _load()
            t0 = time.perf_counter()
            page.get_by_role("button", name="Start training").click()
            while not _done_runs(runs) - before:
                if time.perf_counter() - t0 > 1800:
                    raise TimeoutError("the run did not finish in 30 minutes")
                page.wait_for_timeout(250)
            out["seconds_to_train"] = round(time.perf_counter() - t0, 1)
            out["load_after_training"] = _load()
            (run,) = _done_runs(runs) - before
            out["run"] = run
            status = json.loads((runs / run / "status.json").read_text())
            out["run_seconds"] = status.get("seconds")
            page.get_by_text(re.compile(re.escape(run) + r".*status done")).first.wait_for(timeout=120_000)
            _idle(page)
            _clean(page)

            # 3a. Compare, Utility tab: the exact number and the real rows'
            def compare() -> dict:
                _goto(page, "Compare")
                _pick(page, "Run", run)
                page.get_by_role("tab", name="Utility").click()
                page.get_by_text("synthetic → real").first.wait_for()
                _idle(page)
                _clean(page)
                m = _metrics(page)
                syn = next(v for k, v in m.items() if k.endswith("synthetic → real"))
                ref = next((v for k, v in m.items() if k.endswith("real → real")), {})
                text = _text(page)
                shared = re.search(r"The shareable release shows " + NUMBER + r" ± " + NUMBER, text)
                return {"value": syn["value"], "delta": syn["delta"], "reference": ref.get("value"),
                        "sentence": next((ln for ln in text.splitlines() if ln.startswith("Synthetic rows predict")),
                                         None),
                        "shared": None if shared is None else f"{shared[1]} ± {shared[2]}"}

            out["compare"] = compare()

            # 3b. Runs: the table, the released score, the reports
            _goto(page, "Runs")
            _pick(page, "Run", run)
            row = next(r for r in _grid(page) if r.get("run") == run)
            out["runs_table"] = {"utility": row.get("utility"), "shared (with noise)": row.get("shared (with noise)")}
            offer = page.get_by_role("button", name=re.compile(r"Add a usefulness score covered by ε"))
            out["score_epsilon_offered"] = float(re.search(r"ε = ([\d.]+)\)", offer.inner_text())[1])
            epsilon_before = json.loads((runs / run / "ledger.json").read_text())["epsilon"]
            offer.click()
            page.get_by_text("In the shareable release:").first.wait_for(timeout=600_000)
            _idle(page)
            _clean(page)
            said = page.locator("[data-testid='stAlertContentSuccess']", has_text="In the shareable release").first
            sentence = said.inner_text()
            shared = re.search(NUMBER + r" ± " + NUMBER, sentence)
            out["runs_release_sentence"] = sentence
            out["released"] = {"value": shared[1], "plus_minus": shared[2]}
            out["run_epsilon"] = {"before_score": epsilon_before,
                                  "after_score": json.loads((runs / run / "ledger.json").read_text())["epsilon"]}
            row = next(r for r in _grid(page) if r.get("run") == run)
            out["runs_table"]["after_release"] = {"utility": row.get("utility"),
                                                  "shared (with noise)": row.get("shared (with noise)")}
            table = page.locator("[data-testid='stDataFrame']").first
            page.set_viewport_size({"width": 1280, "height": 700})
            out["shots"]["runs"] = _shot(table, shots / "journey-runs.png")
            out["shots"]["runs_release"] = _shot(said, shots / "journey-runs-release.png")
            page.set_viewport_size({"width": 1280, "height": 1000})

            reports = {}
            for kind, label, download in (("private", "Private report", "Download private report"),
                                          ("shareable", "Shareable release", "Download shareable release")):
                t = time.perf_counter()
                page.get_by_role("button", name=label, exact=True).click()
                page.get_by_role("button", name=re.compile(download)).wait_for(timeout=900_000)
                _idle(page)
                reports[kind] = _download(page, download)
                out[f"{kind}_report_seconds"] = round(time.perf_counter() - t, 1)

            private, shareable = reports["private"], reports["shareable"]
            nums = _report_numbers(private)
            plain = _plain(private)
            lead = re.search(r"Synthetic rows predict .*? \(balanced accuracy " + NUMBER + r"(?: vs " + NUMBER
                             + r" for the real rows)?", plain)
            beside = re.search(r"The shareable release shows " + NUMBER + r" ± " + NUMBER + r": the same number \("
                               + NUMBER + r" here\)", plain)
            util = _utility_table(private)
            out["private_report"] = {
                "table": nums.get("usefulness: balanced accuracy (synthetic → real)"),
                "table_reference": nums.get("reference: balanced accuracy (real → real)"),
                "table_shared": nums.get("usefulness shared in the release (the same number, with noise)"),
                "sentence": None if lead is None else lead[1], "sentence_reference": None if lead is None else lead[2],
                "beside": None if beside is None else {"shared": f"{beside[1]} ± {beside[2]}", "here": beside[3]},
                "utility_table": util}
            released = re.search(r"kept aside from training with balanced accuracy " + NUMBER + r" ± " + NUMBER,
                                 _plain(shareable))
            out["shareable_release"] = {"value": None if released is None else released[1],
                                        "plus_minus": None if released is None else released[2]}
            out["shots"]["private_report"] = _show_report(browser, private, shots / "journey-private-report.png")
            out["shots"]["release"] = _show_report(browser, shareable, shots / "journey-release.png")

            # 3c. Compare again (the released value beside the exact one), Privacy, Story
            out["compare_after_release"] = compare()
            tab = page.locator("[data-testid='stTabs']").first
            out["shots"]["compare"] = _shot(tab, shots / "journey-compare.png")
            _goto(page, "Privacy")
            if page.get_by_role("combobox", name="Run", exact=True).count():
                _pick(page, "Run", run)
            _idle(page)
            m = _metrics(page)
            out["privacy_tile"] = (m.get("utility") or {}).get("value")
            _goto(page, "Story")
            text = _text(page)
            out["story"] = ("not applicable: " + next(ln for ln in text.splitlines() if "Train the Story above" in ln)
                            if "Train the Story above" in text else "shown")
            browser.close()
    out["load_end"] = _load()
    out.update(verdict(out))
    return out


def _f(text) -> float | None:
    m = re.search(r"-?\d+\.\d+", text or "")
    return None if m is None else float(m[0])


def verdict(out: dict) -> dict:
    """The exact numbers shown, the released one, the AUROC gap and the done-when's two checks."""
    pr = out["private_report"]
    exact = float(pr["table"])  # the report's four significant digits: the finest shown
    shown = {"compare": out["compare"]["value"], "compare_after_release": out["compare_after_release"]["value"],
             "runs_table": out["runs_table"]["utility"], "runs_table_after_release": out["runs_table"]["after_release"]["utility"],
             "private_report_sentence": pr["sentence"], "private_report_beside": (pr["beside"] or {}).get("here"),
             "privacy_tile": out.get("privacy_tile")}
    same = {k: v is not None and _f(v) == round(exact, 2) for k, v in shown.items() if v is not None}
    released = [out["released"], out["shareable_release"],
                {"value": _f(out["runs_table"]["after_release"]["shared (with noise)"]),
                 "plus_minus": _f((out["runs_table"]["after_release"]["shared (with noise)"] or "").split("±")[-1])},
                {"value": _f(out["compare_after_release"]["shared"]),
                 "plus_minus": _f((out["compare_after_release"]["shared"] or "").split("±")[-1])},
                {"value": _f(pr["table_shared"]), "plus_minus": _f((pr["table_shared"] or "").split("±")[-1])}]
    values = {(_f(str(r["value"])), _f(str(r["plus_minus"]))) for r in released}
    (value, pm), = values if len(values) == 1 else ((None, None),)
    util = pr["utility_table"]
    lr, mean = util.get("logistic_regression", {}), util.get("mean", {})
    auroc = {"logistic_regression": {"synthetic": lr.get("auroc (synthetic → real)"), "real": lr.get("auroc (real → real)")},
             "mean": {"synthetic": mean.get("auroc (synthetic → real)"), "real": mean.get("auroc (real → real)")}}
    for v in auroc.values():
        v["gap"] = None if None in (v["synthetic"], v["real"]) else round(v["real"] - v["synthetic"], 3)
    gap = auroc["logistic_regression"]["gap"]
    return {"usefulness": {"exact": exact, "reference": _f(pr["table_reference"]), "shown": shown, "equal": same,
                           "released": None if value is None else {"value": value, "plus_minus": pm},
                           "released_everywhere_alike": len(values) == 1},
            "auroc": auroc,
            "same_number": all(same.values()) and len(values) == 1 and value is not None
            and abs(value - exact) <= 2 * pm,
            "auroc_within": gap is not None and gap <= GAP_GOAL}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--shots", default=str(ROOT / "docs" / "screenshots"), help="where the journey-*.png go")
    ap.add_argument("--max-time", type=int, default=None, help="AIM's max time on the Train page (development only)")
    args = ap.parse_args(argv)
    out = journey(Path(args.shots).resolve(), args.max_time)
    if args.json:
        print(json.dumps(out, indent=1, ensure_ascii=False))
    else:
        u = out["usefulness"]
        print(f"{out['model']} on {out['target']}: balanced accuracy {u['exact']} (real {u['reference']}), "
              f"released {u['released']}, AUROC {out['auroc']}, {out['seconds_to_train']} s, "
              f"same number: {out['same_number']}, AUROC within {GAP_GOAL}: {out['auroc_within']}")
    return 0 if out["same_number"] and out["auroc_within"] else 1


if __name__ == "__main__":
    sys.exit(main())
