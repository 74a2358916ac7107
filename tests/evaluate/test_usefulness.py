"""One usefulness measure for one run: Compare, the Runs table, both reports and the released score
show the same metric and the same exact value (the released one is that value with noise); the
release opens with a paragraph free of jargon, the technical terms folded below it."""
from __future__ import annotations

import html
import re

import numpy as np
import pandas as pd
import pytest

JARGON = ("ledger", "neighbouring", "keyed hash", "accountant")


@pytest.fixture(scope="module")
def scored(tmp_path_factory, make_people_csv):
    """A small MST run on a keyed file split, with a released usefulness score."""
    from dpcore.jobs import train_run
    from dpcore.report import load_bundle
    from dpcore.runs import RunConfig
    from dpcore.runs.run_score import default_score_epsilon, release_score

    root = tmp_path_factory.mktemp("useful")
    csv = make_people_csv(root / "people.csv", 400)
    data = {"csv": str(csv), "target": "y", "bounds": {"age": [0, 120]}, "test_size": 0.3,
            "categories": {"smoker": ["no", "yes"], "y": [0, 1]}}
    run = train_run(RunConfig("mst", {"epsilon": 1.0}, data), root, name="mst-useful")
    bundle = load_bundle(run.path)
    release_score(run.path, default_score_epsilon(run), bundle=bundle)
    return run, bundle


def _lead(page: str) -> str:
    text = re.sub(r"<[^>]+>", " ", re.search(r"<p class='lead'>(.*?)</p>", page, re.S).group(1))
    return re.sub(r"\s+", " ", html.unescape(text)).strip()


def test_one_run_shows_one_usefulness_number_everywhere(scored):
    from dpcore import report
    from dpcore.evaluate.released_score import SCORE_CLASSIFIER, from_noisy_class_counts, held_out_class_counts
    from dpcore.evaluate.usefulness import NAME, from_counts, from_saved, tiles
    from dpcore.runs import Run
    from dpcore.runs.run_score import stored_score
    from dpcore.ui.tables import runs_table

    run, b = scored
    res, _ = report.utility(b)  # what Compare draws (ui.cached_utility)
    use = from_saved(res.to_dict())
    assert use is not None and use.chance == 0.5 and use.classifier == SCORE_CLASSIFIER
    exact = use.value
    counts = held_out_class_counts(b.synthetic, b.test, SCORE_CLASSIFIER)
    assert from_counts(counts) == exact  # the released score's own counts, before any noise

    score, _ = stored_score(Run(run.path), report.load_evaluation(run.path))
    noise_free = from_noisy_class_counts(counts, score.noise_multiplier, SCORE_CLASSIFIER, score.partition)
    assert noise_free.balanced_accuracy == pytest.approx(exact, abs=1e-12)  # the same metric, without noise
    moved = np.abs(np.asarray(score.per_class) - counts)
    assert moved.max() > 0 and moved.max() < 6 * score.noise_multiplier  # … and with it

    tile = tiles(use, score)  # Compare
    assert NAME in tile["label"].lower() and tile["value"] == f"{exact:.2f}"
    assert f"{score.balanced_accuracy:.2f} ± " in tile["shared"] and "with noise for sharing" in tile["shared"]

    report.evaluate_run(b, n_targets=100)  # what the pages save: the Runs table reads it
    row = runs_table([Run(run.path).summary()]).iloc[0]
    assert row["metric"] == NAME and row["utility"] == f"{exact:.2f}"
    assert row["shared (with noise)"].startswith(f"{score.balanced_accuracy:.2f} ± ")

    private = report.run_report(run.path, kind="private", n_targets=100, bundle=b)
    lead = _lead(private)
    assert f"{NAME} {exact:.2f}" in lead and "the same number" in lead and "auroc" not in lead.lower()
    assert f"usefulness: {NAME} (synthetic → real)</th><td>{exact:.4g}" in private
    share = report.run_report(run.path, bundle=b)
    said = html.unescape(share)
    assert f"{NAME} {score.balanced_accuracy:.2f} ± " in _lead(share)
    assert "part of the run's ε" in said and "not extra spending" in said  # keyed split: parallel
    assert "(synthetic → real)" not in share and " here)" not in said  # the exact value never leaves


def test_the_release_opens_in_plain_words_and_folds_the_jargon(scored):
    from dpcore.report import run_report

    run, b = scored
    page = run_report(run.path, bundle=b)
    lead = _lead(page).lower()
    assert "how private: strong" in lead and "synthetic rows" in lead and "how useful:" in lead
    assert [w for w in JARGON if w in lead] == []
    folded = html.unescape(page[page.index("<summary>The same in technical terms"):page.index("<h2>Details")])
    assert [w for w in JARGON if w not in folded.lower()] == []


def test_tables_fit_the_page_and_missing_cells_are_blank():
    from dpcore.release import _CSS, rows_table

    frame = pd.DataFrame({"a": pd.array([1, pd.NA], dtype="Int64"), "b": [np.nan, 2.5],
                          "c": pd.array(["x", pd.NA], dtype="string"), "d": [pd.NaT, pd.Timestamp(0)]})
    text = rows_table(frame)
    assert "NA" not in text and "nan" not in text.lower() and "NaT" not in text
    assert text.count("<td></td>") == 4
    assert "overflow-x:auto" in _CSS and "max-width:100%" in _CSS


@pytest.mark.parametrize("value, words", [(0.50, "no better than guessing"), (0.84, "deny as well as the real rows"),
                                          (0.80, "almost as well"), (0.65, "less well"),
                                          (0.55, "only a little better")])
def test_the_sentence_places_the_value_between_guessing_and_the_real_rows(value, words):
    from dpcore.evaluate.usefulness import Usefulness, sentence

    said = sentence(Usefulness(value, 0.85, 0.5, "logistic_regression", "deny"))
    assert said.startswith("Synthetic rows predict deny ") and words in said
    assert f"balanced accuracy {value:.2f} vs 0.85" in said and "0.50 = guessing" in said
