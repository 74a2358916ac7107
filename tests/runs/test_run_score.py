"""A run's released usefulness score: ledger record, parallel composition, verify, release, CLI."""
import json
import shutil

import pytest

from dpcore.errors import InvalidParameter, RunError
from dpcore.jobs import train_run
from dpcore.privacy import accountant as acc
from dpcore.privacy.ledger import PrivacyLedger
from dpcore.report import load_bundle
from dpcore.runs import Run, RunConfig
from dpcore.runs.run_score import RELEASED_KEY, release_score, score_partition, stored_score


@pytest.fixture(scope="module")
def trained(tmp_path_factory, make_people_csv):
    root = tmp_path_factory.mktemp("score")
    cfg = RunConfig("mst", {"epsilon": 1.0}, {"csv": str(make_people_csv(root / "people.csv")), "target": "y",
                                              "bounds": {"age": [18, 90]}, "test_size": 0.3})
    return train_run(cfg, root / "runs", name="mst")


@pytest.fixture
def run(trained, request):
    """A fresh copy of the trained run beside it (its data stays where the run expects it)."""
    dest = trained.path.parent / f"copy-{request.node.name}"[:60].replace("[", "-").replace("]", "")
    return Run(shutil.copytree(trained.path, dest))


def test_the_score_is_a_heldout_record_and_the_run_keeps_its_training_epsilon(run):
    eps_train = run.epsilon
    out = release_score(run.path, 0.3)
    led = run.ledger()
    rec = led.records[-1]
    assert rec.partition == "heldout" and rec.sensitivity == 1.0 and rec.noise == "secret"
    assert out["epsilon"] == pytest.approx(0.3, rel=1e-9)  # the accountant's over its own record
    assert run.epsilon == pytest.approx(eps_train, rel=1e-9) == out["run_epsilon"]  # parallel: max of sides
    check = run.check()
    assert check.consistent and check.private, check.problems  # verify.py agrees with the new ledger
    assert json.loads((run.path / "ledger.json").read_text())["epsilon"] == pytest.approx(run.epsilon)
    sequential = acc.epsilon(PrivacyLedger([*led.records[:-1], rec.__class__(**{**rec.__dict__,
                                                                                 "partition": None})]), run.delta)
    assert sequential > eps_train + 0.01
    stored = run.evaluation()[RELEASED_KEY]
    assert stored["record_index"] == len(led) - 1 and 0 <= stored["accuracy"] <= 1
    # the noisy m̃: the true held-out count plus four noise terms (sd 2σ); 6 sds miss with p ~ 2e-9
    m = load_bundle(run.path).test.n
    assert stored["correct"] + stored["wrong"] == pytest.approx(m, abs=6 * 2 * stored["noise_multiplier"])


def test_a_score_above_the_training_epsilon_raises_the_run_epsilon_and_stays_consistent(run):
    eps_train = run.epsilon
    release_score(run.path, 2.0)
    assert run.epsilon == pytest.approx(acc.epsilon(run.ledger(), run.delta))
    assert run.epsilon > eps_train + 0.5 and run.check().consistent


def test_the_shareable_release_shows_the_sentence_and_reads_no_real_row(run):
    from dpcore.report import run_report

    release_score(run.path, 0.5)
    b = load_bundle(run.path, n_samples=20)
    b.train = b.test = _Untouchable()
    text = run_report(run.path, bundle=b)
    score, eps = stored_score(run, run.evaluation())
    assert eps == pytest.approx(0.5, rel=1e-9)
    assert score.per_class is not None and len(score.per_class) == 2  # y's two levels
    sentence = (f"predicts y for real people kept aside from training with balanced accuracy "
                f"{score.balanced_accuracy:.2f} ± {score.balanced_plus_minus:.2f} (0.50 = guessing)")
    assert sentence in text and "composes in parallel" in text
    assert f"part of the run&#x27;s ε = {run.epsilon:.2f}, not extra spending" in text


def test_a_score_released_before_per_class_counts_still_reads(run):
    """A run scored by the earlier release (C̃, W̃ only) shows its plain accuracy, nothing invented."""
    from dpcore.runs.evaluation import save_evaluation

    release_score(run.path, 0.5)
    d = {k: v for k, v in run.evaluation()[RELEASED_KEY].items() if not k.startswith(("per_class", "balanced"))}
    save_evaluation(run.path, **{RELEASED_KEY: d})
    score, _ = stored_score(run, run.evaluation())
    assert score.per_class is None and score.balanced_accuracy is None
    assert score.accuracy == pytest.approx(d["correct"] / (d["correct"] + d["wrong"]))


def test_an_edited_score_is_not_shown(run):
    from dpcore.runs.evaluation import save_evaluation

    release_score(run.path, 0.5)
    d = run.evaluation()[RELEASED_KEY]
    save_evaluation(run.path, **{RELEASED_KEY: {**d, "noise_multiplier": d["noise_multiplier"] / 10}})
    assert stored_score(run, run.evaluation()) is None
    save_evaluation(run.path, **{RELEASED_KEY: {**d, "record_index": 0}})
    assert stored_score(run, run.evaluation()) is None


@pytest.mark.parametrize("bad", [{"partition": "everyone"}, {"correct": "7"}, {"record_index": True},
                                 {"wrong": "inf"}, {"per_class": [[1.0, 2.0, 3.0]]}, {"per_class": [["1", 2.0]]},
                                 {"per_class": []}, {"per_class": "[[1, 2]]"}])
def test_check_evaluation_refuses_a_bad_released_score(run, bad):
    from dpcore.runs.safety import check_evaluation

    d = {"correct": 1.0, "wrong": 2.0, "noise_multiplier": 3.0, "record_index": 4, "partition": "heldout"}
    check_evaluation({RELEASED_KEY: d})
    check_evaluation({RELEASED_KEY: {**d, "per_class": [[0.5, 1.0], [0.5, 1.0]]}})
    with pytest.raises(RunError, match="released_score"):
        check_evaluation({RELEASED_KEY: {**d, **bad}})


def test_ledger_json_with_a_bad_partition_is_refused(run):
    release_score(run.path, 0.5)
    path = run.path / "ledger.json"
    doc = json.loads(path.read_text())
    doc["records"][-1]["partition"] = "nobody"
    path.write_text(json.dumps(doc))
    with pytest.raises(RunError, match="partition"):
        Run(run.path).ledger()


def test_verify_flags_a_score_record_moved_into_the_training_records(run):
    release_score(run.path, 0.5)
    path = run.path / "ledger.json"
    doc = json.loads(path.read_text())
    doc["records"].insert(0, doc["records"].pop())  # no longer trailing: model.json's copy differs
    doc["epsilon"] = acc.epsilon(PrivacyLedger.from_list(doc["records"]), doc["delta"])
    path.write_text(json.dumps(doc))
    assert not Run(run.path).check().consistent


def test_split_that_does_not_keep_rows_apart_composes_sequentially(run):
    from dpcore.privacy.ledger import MechanismRecord

    keyed, seeded = _Meta({"split": "keyed", "split_key_id": "k1"}), _Meta({"split": "stratified"})
    led = PrivacyLedger([MechanismRecord("dataset-size", "gaussian", 10.0)])
    assert score_partition(led, keyed, "k1") == "heldout" and score_partition(led, seeded, "k1") is None
    # the held-out rows drawn by another key than the run's, or a run saved before key ids: sequential
    assert score_partition(led, keyed, "k2") is None and score_partition(led, keyed, None) is None
    old_bounds = PrivacyLedger([MechanismRecord("preprocessing: noisy bounds", "gaussian", 10.0)])
    assert score_partition(old_bounds, keyed, "k1") is None  # saved before all-rows records were marked
    marked = PrivacyLedger([MechanismRecord("preprocessing: noisy bounds", "gaussian", 10.0, partition="all")])
    assert score_partition(marked, keyed, "k1") == "heldout"


def test_a_second_score_is_refused_before_any_work(run):
    release_score(run.path, 0.2)
    n, eps = len(run.ledger()), run.epsilon
    with pytest.raises(InvalidParameter, match=r"already has a usefulness score \(ε = 0.2\)"):
        release_score(run.path, 0.2)
    assert len(run.ledger()) == n and run.epsilon == pytest.approx(eps)


def test_runs_without_a_table_target_are_refused_with_one_line():
    from types import SimpleNamespace

    from dpcore.runs.run_score import score_refusal

    image = SimpleNamespace(train=SimpleNamespace(is_image=True, labels=[0]), test=None)
    assert "image run" in score_refusal(image)
    untargeted = SimpleNamespace(train=SimpleNamespace(is_image=False, labels=None), test=None)
    assert "no target column" in score_refusal(untargeted) and "\n" not in score_refusal(untargeted)


def test_score_epsilon_is_checked(run):
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(InvalidParameter):
            release_score(run.path, bad)
    assert len(run.ledger()) == len(Run(run.path).ledger())


def test_cli_release_score_and_its_bad_arguments(run, capsys):
    from dpcore.cli import main

    n, eps_train = len(run.ledger()), run.epsilon
    for bad in (["--score-epsilon", "0.5"], ["--release-score", "--score-epsilon", "0"],
                ["--release-score", "--score-epsilon", "nan"]):
        assert main(["evaluate", str(run.path), "--n-targets", "20", *bad]) == 2
        assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert len(run.ledger()) == n  # nothing recorded before the arguments were checked
    assert main(["evaluate", str(run.path), "--n-targets", "20", "--release-score", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["released_score"]["partition"] == "heldout"
    assert set(out["released_score"]) >= {"balanced_accuracy", "balanced_noise_sd", "accuracy"}
    # no --score-epsilon on a keyed split: the largest that leaves the run's ε as it was
    assert eps_train - 0.011 < out["released_score"]["epsilon"] <= eps_train
    assert Run(run.path).epsilon <= eps_train * (1 + 1e-12)
    assert out["epsilon"] == pytest.approx(out["released_score"]["run_epsilon"])
    assert len(run.ledger()) == n + 1


class _Meta:
    def __init__(self, meta):
        self.meta = meta


class _Untouchable:
    """Stands in for the real splits: the shareable release must not read a single real row."""

    preprocessing_private = True

    def __getattr__(self, name):
        raise AssertionError(f"the shareable release read the real data ({name})")


def test_on_a_builtin_seeded_split_the_score_composes_sequentially(tmp_path):
    """A built-in's split is seeded by index, not per row: no parallel composition, the run's ε grows."""
    from dpcore.release import usefulness_section
    from dpcore.report import load_bundle

    r = train_run(RunConfig("dp-vae", {"epsilon": 1.0, "epochs": 1, "hidden": 8, "latent_dim": 2, "batch_size": 50},
                            {"dataset": "two-gaussians", "test_size": 0.3, "n": 300}), tmp_path, name="b")
    eps_train = r.epsilon
    out = release_score(r.path, 0.5)
    assert out["partition"] is None and r.ledger().records[-1].partition is None
    expect = acc.epsilon(r.ledger(), r.delta)
    assert r.epsilon == pytest.approx(expect) and expect > eps_train + 0.1 and r.check().consistent
    title, text = usefulness_section(load_bundle(r.path, n_samples=10))
    assert "composes sequentially" in text and f"spent ε = 0.5, included in the run&#x27;s ε = {expect:.2f}" in text


def test_verify_refuses_a_heldout_partition_on_a_split_that_does_not_keep_rows_apart(tmp_path):
    r = train_run(RunConfig("dp-vae", {"epsilon": 1.0, "epochs": 1, "hidden": 8, "latent_dim": 2, "batch_size": 50},
                            {"dataset": "two-gaussians", "test_size": 0.3, "n": 300}), tmp_path, name="b")
    release_score(r.path, 2.0)
    path = r.path / "ledger.json"
    doc = json.loads(path.read_text())
    doc["records"][-1]["partition"] = "heldout"  # would lower the run's ε back to the training one
    doc["epsilon"] = acc.epsilon(PrivacyLedger.from_list(doc["records"]), doc["delta"])
    path.write_text(json.dumps(doc))
    check = Run(r.path).check()
    assert not check.consistent and "does not keep rows apart" in check.message


def test_a_score_too_noisy_to_read_says_so_and_shows_no_number():
    """A release whose noisy held-out total is below twice its noise gives no accuracy: the sentence
    says so and how to get one, and no ± appears."""
    from dpcore.evaluate.released_score import from_noisy_class_counts
    from dpcore.runs.run_score import describe

    text, note = describe(from_noisy_class_counts([[15.0, 0.0], [4.0, 1.0]], 34.0, "lr", "heldout"), 0.1)
    assert "(20) is too small beside its noise to give an accuracy" in text and "±" not in text
    assert "larger ε" in note and "σ = 34" in note and "±" not in note  # no ± to explain


def test_the_default_score_epsilon_is_what_leaves_the_runs_epsilon_as_it_is(run, tmp_path):
    """At 0.1 (σ ≈ 34) a class of ~80 held-out people is below twice its noise in ~38 % of releases;
    on a keyed split a score costs the run nothing up to a point, and that point is what the page
    offers. The prediction made from the config and ledger alone is the one the release then finds."""
    from dpcore.runs.run_score import default_score_epsilon, keyed_heldout

    key_id = run.config.data.split_key_id
    assert keyed_heldout(run) and score_partition(run.ledger(), load_bundle(run.path).test, key_id) == "heldout"
    eps = run.epsilon
    offered = default_score_epsilon(run)  # no record read every row here: the run's ε, to 0.01 below
    assert eps - 0.011 < offered <= eps
    release_score(run.path, offered)
    assert eps - 1e-6 < Run(run.path).epsilon <= eps * (1 + 1e-12)


def test_records_that_read_every_row_lower_the_free_score_epsilon(make_people_csv, tmp_path):
    """DP bounds read every row, so they compose with the score too: a score at the run's ε would
    raise it (1.0 to 1.09 in the journey); the offered ε is below and leaves it where it was."""
    from dpcore.runs.run_score import default_score_epsilon, keyed_heldout

    data = {"csv": str(make_people_csv(tmp_path / "people.csv")), "target": "y", "test_size": 0.3,
            "dp_bounds_noise": 10.0, "types": {"age": "integer"}, "categories": {"smoker": ["no", "yes"], "y": [0, 1]}}
    run = train_run(RunConfig("mst", {"epsilon": 1.0}, data), tmp_path / "runs")
    assert any(r.partition == "all" for r in run.ledger()) and keyed_heldout(run)
    eps = run.epsilon
    offered = default_score_epsilon(run)
    assert offered < eps - 0.02
    release_score(run.path, offered)
    assert eps - 1e-6 < Run(run.path).epsilon <= eps * (1 + 1e-12)


def test_a_split_that_adds_to_the_runs_epsilon_is_offered_the_small_default(run, tmp_path):
    from types import SimpleNamespace

    from dpcore.privacy.ledger import MechanismRecord
    from dpcore.runs.run_score import DEFAULT_SCORE_EPSILON, default_score_epsilon, keyed_heldout

    old = run.ledger()  # a ledger saved before all-rows records were marked: sequential
    old.add(MechanismRecord("preprocessing: noisy bounds", "gaussian", 10.0))
    unmarked = SimpleNamespace(config=run.config, ledger=lambda: old, delta=run.delta, epsilon=run.epsilon)
    assert not keyed_heldout(unmarked) and default_score_epsilon(unmarked) == DEFAULT_SCORE_EPSILON
    assert score_partition(old, load_bundle(run.path).test, run.config.data.split_key_id) is None
    csv = run.config.data.csv  # a separate test file: the held-out people are not the training's other side
    apart = train_run(RunConfig("mst", {"epsilon": 1.0}, {"csv": csv, "test_csv": csv, "target": "y",
                                                           "bounds": {"age": [18, 90]}}), tmp_path / "runs")
    assert not keyed_heldout(apart) and default_score_epsilon(apart) == DEFAULT_SCORE_EPSILON
    assert score_partition(apart.ledger(), load_bundle(apart.path).test, apart.config.data.split_key_id) is None
