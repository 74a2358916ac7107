"""What the browser tests share: the app started by `streamlit run` on a free port with its own runs
folder, chromium driven by Playwright on its first page, and waits/checks on what a person sees.

Imported by the browser test modules (tests/app/conftest.py puts this folder on the path)."""
from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
# Counts the script's runs that ended, in window.__dpcoreRuns, from the page's first run on: each
# change of stApp's script state from "running" is one (a run too short to poll is still counted)
COUNT_RUNS = """new MutationObserver(records => { for (const r of records)
    if (r.oldValue === 'running' && r.target.getAttribute(r.attributeName) !== 'running')
        window.__dpcoreRuns = (window.__dpcoreRuns || 0) + 1;
}).observe(document, {subtree: true, attributes: true, attributeOldValue: true,
                      attributeFilter: ['data-test-script-state']});"""
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_health(url: str, proc: subprocess.Popen, timeout: float = 90) -> None:
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise TimeoutError("streamlit did not become healthy")


@contextlib.contextmanager
def _streamlit(runs: Path, **env_vars):
    """`streamlit run app.py` on a free port with `runs` as its runs folder: yields its URL."""
    port = _free_port()
    # HOME beside the runs folder: the sidebar shows it as "~/runs…", not a machine's temp path
    env = {**os.environ, "DPCORE_RUNS_DIR": str(runs), "HOME": str(runs.parent), **env_vars}
    log = open(runs.parent / f"streamlit-{runs.name}.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
         "--server.address", "127.0.0.1", "--server.port", str(port), "--server.fileWatcherType", "none",
         "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_health(url, proc)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()


def _need_browser() -> None:
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} not found (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")


@contextlib.contextmanager
def _data_page(url: str, height: int = 1200, on_request=None, failure_shot: Path | None = None, query: str = "",
               width: int = 1280):
    """Chromium on the workbench's first page (Data), closed on exit; `on_request(request)` sees
    every request the page makes from the start; a failure inside is screenshot to `failure_shot`."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.set_default_timeout(120_000)
            page.add_init_script(COUNT_RUNS)
            if on_request is not None:
                page.on("request", on_request)
            page.goto(url + query)
            page.wait_for_selector("h1:has-text('Data')")
            try:
                yield page
            except BaseException:
                if failure_shot is not None:
                    page.screenshot(path=str(failure_shot))
                raise
        finally:
            browser.close()


def _idle(page, timeout: float = 120_000) -> None:
    """Wait until the script has finished its run (two checks: a rerun may start right after)."""
    page.wait_for_selector(IDLE, timeout=timeout)
    page.wait_for_timeout(300)
    page.wait_for_selector(IDLE, timeout=timeout)


def _runs_ended(page) -> int:
    """How many script runs this page has seen end (COUNT_RUNS): read it before an action that makes
    the script run again, then `_rerun_ended(page, before)`."""
    return page.evaluate("() => window.__dpcoreRuns || 0")


def _rerun_ended(page, before: int, timeout: float = 60_000) -> bool:
    """Wait until a run that ended after `_runs_ended` returned `before` has ended, then until the
    script is idle: the run an action started, however short, rather than a fixed pause that
    guesses its length. False when no run ended within `timeout` ms (the action started none)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function("n => (window.__dpcoreRuns || 0) > n", arg=before, timeout=timeout)
    except PlaywrightTimeout:
        return False
    finally:
        _idle(page)
    return True


def _no_exception(page) -> None:
    assert page.locator("[data-testid='stException']").count() == 0, page.locator(
        "[data-testid='stException']").first.inner_text()


def _goto(page, title: str) -> None:
    page.locator("[data-testid='stSidebarNav'] a", has_text=title).first.click()
    page.wait_for_selector(f"h1:has-text('{title}')", timeout=60_000)
    _idle(page)


def _set_number(page, label: str, value: int) -> None:
    box = page.get_by_label(label, exact=True)
    box.fill(str(value))
    box.press("Enter")
    _idle(page)


def _slide(page, name: str, value: int) -> None:
    """Move the integer slider `name` to `value` by keys, as a keyboard user does: Home or End first
    where the value is nearer that end, then the arrow keys, all in one go (the slider sends its
    value once it settles); then the run that value started, and a check."""
    knob = page.get_by_role("slider", name=name)

    def attr(name: str) -> int:  # the thumb is an <input type=range>
        return int(float(knob.get_attribute(name)))

    def shown() -> int:
        return int(float(knob.get_attribute("aria-valuenow") or knob.input_value()))

    for _ in range(5):
        now = shown()
        if now == value:
            return
        lo, hi = attr("min"), attr("max")
        knob.focus()
        ran = _runs_ended(page)
        start, key = min((now, None), (lo, "Home"), (hi, "End"), key=lambda s: abs(value - s[0]))
        if key:
            page.keyboard.press(key)
            now = start
        for _ in range(abs(now - value)):
            page.keyboard.press("ArrowLeft" if now > value else "ArrowRight")
        _rerun_ended(page, ran, timeout=10_000)
    assert shown() == value


def _loss_points(page) -> int:
    """Points drawn in the live loss chart (0 until it appears)."""
    return page.evaluate("""() => {
        for (const gd of document.querySelectorAll('.js-plotly-plot')) {
            const t = gd.layout && gd.layout.title && gd.layout.title.text;
            if (t && t.includes('Training losses'))
                return (gd._fullData || gd.data).reduce((n, tr) => n + ((tr.x && tr.x.length) || tr._length || 0), 0);
        }
        return 0;
    }""")


MEMBERSHIP_PLOT = """() => [...document.querySelectorAll('.js-plotly-plot')].some(
    gd => gd.layout && gd.layout.title && gd.layout.title.text.includes('Membership'))"""
SHOWN_AS_VALUE = re.compile(r"(?<![\w-])(nan|NaN|None)(?![\w-])")


def _clean(page) -> None:
    """No exception box and no "nan"/"None" shown as a value anywhere in the page's text."""
    _no_exception(page)
    text = page.locator("[data-testid='stMain']").inner_text()
    bad = [text[max(0, m.start() - 60):m.end() + 20] for m in SHOWN_AS_VALUE.finditer(text)]
    assert not bad, bad


def _fashion_installed() -> bool:
    from dpcore.data import list_datasets

    return any(d.name == "fashion-mnist" and d.available for d in list_datasets())


def _wait_text(page, pattern: str, timeout: float) -> None:
    page.get_by_text(re.compile(pattern)).first.wait_for(timeout=timeout)
    _idle(page)


def _upload(page, csv) -> None:
    """On the Data page: *Upload a CSV*, the file, until the schema editor offers *Use this table*."""
    page.get_by_text("Upload a CSV").click()
    _idle(page)
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(csv))
    page.get_by_role("button", name="Use this table").wait_for()
    _idle(page)

