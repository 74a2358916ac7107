import json

from dpcore.cli import main


def test_attack_prints_one_object_with_the_ladder_and_audit(tmp_path, capsys):
    run_dir = tmp_path / "runs" / "tiny"
    assert main(["train", "--model", "dp-vae", "--dataset", "digits", "--epochs", "1", "--hidden", "32",
                 "--batch-size", "100", "--epsilon", "1", "--test-size", "0.3", "--out", str(run_dir), "--json"]) == 0
    capsys.readouterr()
    assert main(["attack", str(run_dir), "--json", "--attacks", "dcr,domias,loss", "--canaries", "16"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= {"run", "epsilon", "attacks", "audit"}
    assert [a["name"] for a in out["attacks"]] == ["dcr", "domias", "loss"]
    for a in out["attacks"]:
        assert set(a["tpr_at_fpr"]) == {"0.001", "0.01", "0.1"} and 0 <= a["auc"] <= 1
        assert a["epsilon_lower_bound"] <= out["epsilon"]  # the accountant's ε of the run's ledger
    assert out["audit"]["canaries"] == 16 and out["audit"]["epsilon_lower_bound"] >= 0


def test_attack_errors_are_one_line(tmp_path, capsys):
    assert main(["attack", str(tmp_path / "nope")]) == 2
    assert main(["attack", str(tmp_path), "--attacks", "nope"]) == 2
    assert main(["train", "--model", "p3gm", "--dataset", "digits", "--preset", "overfit",
                 "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 3 and all(line.startswith("error:") for line in err.splitlines())
