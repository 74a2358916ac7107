"""The two exports of a run: the shareable release holds only what ε covers, the private report is marked."""
import re

import pandas as pd
import pytest


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    import torch

    from dpcore.runs import RunConfig, train_run

    torch.set_num_threads(2)
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
