"""CLI on tables: --test-size 0, --test FILE, the warnings in --json, a 12-column table with defaults."""
import json

import numpy as np
import pytest

from dpcore.cli import main

FAST = ["--hidden", "16", "--epochs", "2"]


def table(path, rows=300, minority=0.1, seed=0):
    """11 numeric columns and a yes/no target with a `minority` share of "yes"."""
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(rows) < minority, "yes", "no")
    lines = [",".join([f"x{i}" for i in range(11)] + ["y"])]
    lines += [",".join([f"{v:.3f}" for v in rng.normal(0, 1, 11) + (t == "yes")] + [t]) for t in y]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_test_size_zero_fits_every_row_and_evaluate_says_there_is_no_test(tmp_path, capsys):
    csv = table(tmp_path / "t.csv", rows=200)
    run = tmp_path / "r" / "all"
    assert main(["train", "--model", "vae", "--data", str(csv), "--target", "y", "--test-size", "0", *FAST,
                 "--out", str(run), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["status"] == "done" and isinstance(res["warnings"], list)
    from dpcore.runs import Run

    train, test = Run.load(run).load_data()
    assert test is None and train.n == 200 and train.meta["split"] == "none"
    assert main(["evaluate", str(run), "--json", "--n-targets", "10"]) == 0
    ev = json.loads(capsys.readouterr().out)
    assert ev["test"].startswith("none") and "utility" not in ev and ev["attacks"]["best"] is None
    assert ev["marginals"]["tvd_1way"] is not None
    assert main(["evaluate", str(run), "--n-targets", "10"]) == 0
    assert "test split: none" in capsys.readouterr().out


def test_held_out_csv_is_the_test_set(tmp_path, capsys):
    csv, held = table(tmp_path / "t.csv", rows=150), table(tmp_path / "h.csv", rows=60, seed=1)
    run = tmp_path / "r" / "held"
    assert main(["train", "--model", "vae", "--data", str(csv), "--target", "y", "--test", str(held), *FAST,
                 "--out", str(run), "--json"]) == 0
    capsys.readouterr()
    from dpcore.runs import Run

    train, test = Run.load(run).load_data()
    assert (train.n, test.n) == (150, 60) and test.encoder.feature_names == train.encoder.feature_names
    assert main(["evaluate", str(run), "--json", "--n-targets", "10"]) == 0
    ev = json.loads(capsys.readouterr().out)
    assert ev["test"] == "held-out split" and "auroc" in ev["utility"]["mean"]


@pytest.mark.parametrize("extra, words", [
    (["--test-size", "0.2"], "--test-size and --test"),
    (["--dataset-instead"], "--test applies to --data"),
])
def test_test_flag_misuse_is_one_line_exit_2(tmp_path, capsys, extra, words):
    held = table(tmp_path / "h.csv", rows=20)
    src = (["--dataset", "credit"] if extra == ["--dataset-instead"]
           else ["--data", str(table(tmp_path / "t.csv", rows=50)), *extra])
    with pytest.raises(SystemExit) as exc:
        raise SystemExit(main(["train", "--model", "vae", *src, "--test", str(held), "--out", str(tmp_path / "r" / "x")]))
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0]


def test_negative_test_size_is_refused_before_work(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        raise SystemExit(main(["train", "--model", "vae", "--data", str(table(tmp_path / "t.csv", rows=50)),
                               "--test-size", "-0.1", "--out", str(tmp_path / "r" / "x")]))
    assert exc.value.code == 2 and "--test-size" in capsys.readouterr().err


def test_train_json_and_summary_carry_the_missing_class_warning(tmp_path, capsys):
    """The flat decoder (argmax of the label block) on a 5 % class generates one class; the run says so."""
    csv = table(tmp_path / "t.csv", rows=300, minority=0.05)
    args = ["train", "--model", "vae", "--data", str(csv), "--target", "y", "--tabular-heads", "flat",
            "--hidden", "16", "--epochs", "40"]
    assert main([*args, "--out", str(tmp_path / "r" / "flat"), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert any("never appear" in w and "yes" in w for w in res["warnings"])
    assert main([*args, "--out", str(tmp_path / "r" / "flat2")]) == 0
    assert "warning: 1 of 2 classes never appear" in capsys.readouterr().out


def test_twelve_column_table_trains_p3gm_with_defaults(tmp_path, capsys):
    csv = table(tmp_path / "t.csv", rows=240)
    assert main(["train", "--model", "p3gm", "--data", str(csv), "--target", "y", "--hidden", "32",
                 "--out", str(tmp_path / "r" / "p3gm"), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["status"] == "done" and res["params"]["pca_dim"] == 13
    assert "13 model columns (11 features + 2 label classes)" in res["adapted"]["pca_dim"]
    # no schema: the bounds were read off the rows, and the summary says which columns
    assert "NOT covered by ε" in res["warnings"][0] and "x0" in res["warnings"][0]
    check = res["target_check"]  # a warning too when the rows do not predict the target
    assert check["covered_by_epsilon"] is False and res["warnings"][1:] == ([] if check["predicts"] else [check["text"]])


@pytest.mark.parametrize("model", ["aim", "mst", "p3gm"])
def test_twelve_column_table_with_a_schema_is_covered_by_the_accountants_epsilon(tmp_path, capsys, model):
    """The issue's command: `train --model M --data FILE.csv --schema schema.json --target y --epsilon 1
    --json` with default settings; everything the preprocessing needs is declared, so ε (the
    accountant's, over the saved ledger) covers it."""
    from dpcore.privacy.accountant import epsilon as accountant_epsilon
    from dpcore.privacy.ledger import PrivacyLedger

    csv = table(tmp_path / "t.csv", rows=400, minority=0.3)
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"types": {f"x{i}": "numeric" for i in range(11)},
                                  "bounds": {f"x{i}": [-5, 6] for i in range(11)},
                                  "categories": {"y": ["no", "yes"]}, "target": "y"}))
    extra = ["--max-time", "5"] if model == "aim" else []  # AIM spends what is left at its time limit: bounded for the suite
    assert main(["train", "--model", model, "--data", str(csv), "--schema", str(schema), "--target", "y",
                 "--epsilon", "1", "--out", str(tmp_path / "r" / model), "--json", "--no-progress", *extra]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["status"] == "done" and res["preprocessing_covered"] is True
    assert res["epsilon"] == pytest.approx(1.0, rel=1e-3)
    assert res["epsilon"] == pytest.approx(accountant_epsilon(PrivacyLedger.from_list(res["ledger"]), res["delta"]))
