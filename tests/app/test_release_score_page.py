"""The usefulness score covered by ε from the Runs page: one click spends its ε on the held-out
rows, one ledger record, and the shareable release says what it found; a run without a target is
refused with one line and its ledger stays as it was; a run whose bounds were read from the rows
says so where it is managed."""
from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")


@pytest.fixture(scope="module")
def runs(runs_dir, make_people_csv):
    from dpcore.jobs import train_run
    from dpcore.runs import RunConfig

    csv = make_people_csv(runs_dir.parent / "people.csv", 400)
    covered = {"csv": str(csv), "target": "y", "bounds": {"age": [0, 120]}, "test_size": 0.3,
               "categories": {"smoker": ["no", "yes"], "y": [0, 1]}}
    scored = train_run(RunConfig("mst", {"epsilon": 1.0}, covered), runs_dir, name="mst-people")
    untargeted = train_run(RunConfig("mst", {"epsilon": 1.0}, {"csv": str(csv), "test_size": 0.3}), runs_dir,
                           name="mst-no-target")
    apart = train_run(RunConfig("mst", {"epsilon": 1.0}, {**covered, "test_csv": str(csv)}), runs_dir,
                      name="mst-test-file")  # held-out people from another file: the score adds to ε
    return scored, untargeted, apart


def _runs_page(name):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["dataset"] = "digits"
    at.run()
    at.switch_page("app_pages/runs.py").run()
    at.selectbox(key="runs.selected").set_value(name).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_one_click_releases_a_score_the_ledger_counts_and_the_release_says(runs):
    from dpcore.privacy import accountant as acc
    from dpcore.runs import Run

    # ε = 0.5 (σ ≈ 7.7) on ~120 held-out rows: a noisy total too small to read (below 2σ√2) has
    # probability ~1e-10; at the page's default ε = 0.1 (σ ≈ 34) it is ~0.36, and the page says so
    run = Run(runs[0].path)
    n, eps_train = len(run.ledger()), run.epsilon
    at = _runs_page(run.name)
    assert not any("Preprocessing not covered" in w.value for w in at.warning)  # everything declared
    assert eps_train - 0.011 < at.number_input(key="runs.score_eps").value <= eps_train  # keyed: free up to it
    at.number_input(key="runs.score_eps").set_value(0.5).run()
    button = at.button(key="runs.release_score")
    assert button.label == "Add a usefulness score covered by ε (ε = 0.5)"
    button.click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    led = Run(run.path).ledger()
    assert len(led) == n + 1
    rec = led.records[-1]
    assert rec.name == "usefulness score (held-out rows)" and rec.partition == "heldout" and rec.noise == "secret"
    assert acc.epsilon(type(led)([rec]), run.delta) == pytest.approx(0.5, rel=1e-6)
    # the file's keyed split keeps each person on one side: the score composes in parallel
    assert Run(run.path).epsilon == pytest.approx(acc.epsilon(led, run.delta)) == pytest.approx(eps_train)
    shown = html.unescape(next(s.value for s in at.success if "In the shareable release" in s.value))
    sentence = re.search(r"predicts y for real people kept aside from training with balanced accuracy "
                         r"(\d\.\d\d) ± (\d\.\d\d)", shown)
    assert sentence and 0 <= float(sentence[1]) <= 1 and 0 < float(sentence[2]) < 0.6, shown
    assert "part of the run's ε" in shown and "not extra spending" in shown  # parallel: no extra ε
    assert "runs.release_score" not in [b.key for b in at.button]  # one per run: the page shows it instead
    at.button(key="runs.export.shareable").click().run()
    _, page = at.session_state["runs.reports"]["shareable"]
    assert sentence[0] in html.unescape(page)
    at.button(key="runs.export.private").click().run()  # building the other keeps the first one's download
    assert not at.exception
    labels = [e.proto.label for e in at.get("download_button")]
    assert "Download shareable release (HTML)" in labels and "Download private report (HTML)" in labels, labels


def test_a_run_without_a_target_is_refused_with_one_line_and_its_release_labelled(runs):
    from dpcore.runs import Run

    run = Run(runs[1].path)
    n = len(run.ledger())
    at = _runs_page(run.name)
    assert any("Preprocessing not covered by ε" in w.value for w in at.warning)  # bounds read from the rows
    at.button(key="runs.release_score").click().run()
    assert not at.exception
    errors = [html.unescape(e.value) for e in at.error]
    assert len(errors) == 1 and "no target column" in errors[0] and "\n" not in errors[0], errors
    assert len(Run(run.path).ledger()) == n


def test_each_run_is_offered_its_own_score_epsilon(runs):
    """The input keeps its value across runs unless told: a run whose score composes sequentially
    must not inherit the ~1.0 offered to a keyed split's run (it would add that much to its ε)."""
    from dpcore.runs import Run

    _, keyed, apart = (Run(r.path) for r in runs)  # the first has its score by now
    at = _runs_page(keyed.name)
    assert at.number_input(key="runs.score_eps").value > 0.9
    at.selectbox(key="runs.selected").set_value(apart.name).run()
    assert not at.exception
    assert at.number_input(key="runs.score_eps").value == pytest.approx(0.1)
    assert at.button(key="runs.release_score").label == "Add a usefulness score covered by ε (ε = 0.1)"
