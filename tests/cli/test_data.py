"""`python -m dpcore datasets [--json]` lists every built-in with sizes and availability."""
import json

from dpcore.cli import main


def test_datasets_json(capsys):
    assert main(["datasets", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    names = [d["name"] for d in out["datasets"]]
    assert names == ["digits", "fashion-mnist", "mnist", "caravan", "credit", "cps1988", "two-gaussians"]
    for d in out["datasets"]:
        assert {"rows", "columns", "features", "kind", "labelled", "available", "hint"} <= set(d)


def test_datasets_table_and_schema(capsys):
    assert main(["datasets"]) == 0
    table = capsys.readouterr().out
    assert "caravan" in table and "5822" in table and "tabular" in table
    assert main(["datasets", "--schema", "credit"]) == 0
    assert "Income" in capsys.readouterr().out
    from dpcore.data.registry import list_datasets

    for info in list_datasets():  # every table has its schema (cps1988's was missing: a traceback)
        if info.kind == "tabular":
            assert main(["datasets", "--schema", info.name, "--json"]) == 0, info.name
            assert json.loads(capsys.readouterr().out)["target"], info.name
    assert main(["datasets", "--schema", "digits"]) == 2
    assert "image dataset" in capsys.readouterr().err
