import json

from dpcore.cli import main


def test_evaluate_prints_the_contract_and_writes_a_report(tmp_path, capsys):
    run_dir = tmp_path / "runs" / "tiny"
    assert main(["train", "--model", "pgm", "--dataset", "digits", "--epochs", "1",
                 "--out", str(run_dir), "--json"]) == 0
    capsys.readouterr()
    report = tmp_path / "report.html"
    assert main(["evaluate", str(run_dir), "--n-targets", "100", "--n-samples", "500",
                 "--report", str(report), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= {"utility", "marginals", "attacks", "seconds"}
    assert 0 <= out["utility"]["mean"]["accuracy"] <= 1
    assert out["utility"]["reference"]["accuracy"] > 0.8  # train on real digits
    assert 0 <= out["marginals"]["tvd_2way"] <= 1 and 0 <= out["attacks"]["best"]["auc"] <= 1
    assert out["attacks"]["best"]["consistent_with_epsilon"] is None  # nothing to check at ε = ∞
    assert out["epsilon"] == "inf"  # PGM is non-private
    text = report.read_text()
    assert text.startswith("<!doctype html>") and text.count("plotly.js v") <= 2
    saved = json.loads((run_dir / "evaluation.json").read_text())
    assert saved["attacks"]["best"] == out["attacks"]["best"]  # what the Runs table reads
    assert "Shareable release" in text and "Real training rows" not in text  # the default kind
    assert out["covered_by_epsilon"] == [] and "attack_statistics" in out["not_covered"]  # ε = ∞
    assert main(["evaluate", str(run_dir), "--n-targets", "100", "--n-samples", "300",
                 "--report", str(report), "--report-kind", "private", "--json"]) == 0
    capsys.readouterr()
    assert "Private report" in report.read_text() and "Real training rows" in report.read_text()


def test_evaluate_missing_run_is_one_line_error(tmp_path, capsys):
    assert main(["evaluate", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and err.count("\n") == 1


def test_evaluate_report_rows_flag_is_checked_before_any_work(tmp_path, capsys):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    for bad, what in ((["--report", str(tmp_path / "r.html"), "--report-rows", "0"], "--report-rows"),
                      (["--report-rows", "10"], "--report-rows applies to --report")):
        assert main(["evaluate", str(run_dir), *bad]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error:") and what in err and err.count("\n") == 1
