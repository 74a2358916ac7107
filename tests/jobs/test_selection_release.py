"""Private selection releases only the selected run: its model, its settings with the released ε and
the selection rule, never K (the number of trials) nor another trial's ledger, noisy count or score.
Every place that states the released run's ε agrees, and its reports work."""
from __future__ import annotations

import json
import math

import pytest

from dpcore.jobs.sweep import SweepSpec
from dpcore.privacy.accountant import rdp
from dpcore.runs import Run, list_runs

TINY = {"epochs": 1, "hidden": 16, "em_iters": 2, "pca_dim": 8, "batch_size": 100, "warmup_steps": 5}
TRIALS = 2


def _spec():
    return SweepSpec(model="p3gm", grid={"epsilon": ["0.5", "2"]}, data={"dataset": "digits", "n": 600},
                     params=TINY, seeds=1, name="sel", scores=("utility",))


@pytest.fixture(scope="module")
def selected(tmp_path_factory):
    from dpcore.jobs import selection

    root = tmp_path_factory.mktemp("select")
    spec = _spec()
    mp = pytest.MonkeyPatch()
    mp.setattr(selection, "draw_trials", lambda rng, **kw: TRIALS)  # K fixed: the test knows it
    try:
        out = selection.select_private(spec, root, mean_trials=2.0, backend="in-process")
    finally:
        mp.undo()
    return root, out


def _published(path):
    """Every file of the released run folder, as text."""
    return {p.relative_to(path).as_posix(): p.read_text(errors="replace") for p in path.rglob("*")
            if p.is_file() and p.suffix in (".json", ".jsonl")}


def _sampling_rate(run) -> float:
    """The DP-SGD sampling rate q in a run's ledger (batch size over its noisy row count)."""
    return next(r.sampling_rate for r in run.ledger() if r.mechanism == "subsampled_gaussian")


def _keys(obj):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield k
            yield from _keys(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _keys(v)


def test_the_released_run_holds_no_k_and_no_other_trials_data(selected):
    root, out = selected
    assert len(out["trials"]) == TRIALS and out["released"] is not None
    path = root / out["released"]["run"]
    assert "trial" not in path.name  # a trial's number would bound K from below
    files = _published(path)
    for name, text in files.items():
        if name.endswith(".json"):
            assert "trials" not in set(_keys(json.loads(text))), name
    others = [t["run"] for t in out["trials"]] + [r["run"] for r in json.loads(
        (root / "_sweeps" / "sel.json").read_text())["runs"]]
    best = next(t["run"] for t in out["trials"] if t["run"] != path.name and Run(root / t["run"]).ledger().records
                == Run(path).ledger().records)  # the trial the released run is a copy of
    # no score that ranked it (the winner's evaluation.json) and none of its times (they bound K from below)
    assert "evaluation.json" not in files
    status = json.loads(files["status.json"])
    assert not {"created", "created_ts", "started", "finished", "seconds", "released_at", "heartbeat"} & set(status)
    assert all("time" not in json.loads(line) for line in files["metrics.jsonl"].splitlines())
    assert "seconds" not in json.loads(files["model/model.json"])["fit_result"]
    won = json.loads((root / best / "evaluation.json").read_text())["utility"]["mean"]
    assert all(repr(v) not in text for v in won.values() if isinstance(v, float) and len(repr(v)) >= 8
               for text in files.values())
    own: tuple = ()
    own_q = _sampling_rate(Run(path))
    for other in others:
        if other == best:
            continue
        run = Run(root / other)
        q = _sampling_rate(run)
        n_tilde = json.loads((run.model_dir / "model.json").read_text())["released_rows"]
        score = json.loads((run.path / "evaluation.json").read_text())["utility"]["mean"]
        for name, text in files.items():
            # two trials' noisy row counts can round to one integer: then q is the released run's own too
            assert (repr(q) not in text or q == own_q) and other not in text, (other, name)
            assert f'"released_rows": {n_tilde},' not in text or n_tilde == json.loads(
                files["model/model.json"])["released_rows"], (other, name)
            # tiny trials often tie, and a short float (0.05) matches anything: long, distinct scores only
            assert all(repr(v) not in text for v in score.values()
                       if isinstance(v, float) and v not in own and len(repr(v)) >= 8), (other, name)
    sel = json.loads(files["ledger.json"])["selection"]
    assert sel["distribution"] == "negative_binomial" and sel["mean_trials"] == pytest.approx(2.0, rel=1e-6)
    assert sel["candidates"] == [{"epsilon": 0.5, "seed": 0}, {"epsilon": 2.0, "seed": 0}]
    # Q's bound is a function of public facts only: the grid and the released run's own files
    from dpcore.jobs.selection import public_base_curve, round_up
    from dpcore.jobs.sweep import point_configs

    public = public_base_curve([c for _, c in point_configs(_spec())], Run(path))
    assert sel["base_rdp"] == round_up(public)
    assert all(all(rdp(Run(root / o).ledger(), sel["orders"]) <= public * (1 + 1e-9)) for o in others)


def test_one_epsilon_in_every_file_the_listing_and_the_report(selected, tmp_path, capsys):
    from dpcore.cli import main
    from dpcore.runs.verify import check_run

    root, out = selected
    path = root / out["released"]["run"]
    run = Run(path)
    eps = json.loads((path / "ledger.json").read_text())["epsilon"]
    check = check_run(run)
    assert check.consistent and check.private, check.problems
    assert eps == pytest.approx(out["epsilon"], rel=1e-12) and math.isfinite(eps)
    assert eps > 2.0  # the selection costs more than the grid's largest ε
    assert run.config.params["epsilon"] == pytest.approx(eps, rel=1e-12)
    meta = json.loads((path / "model" / "model.json").read_text())
    assert meta["fit_result"]["epsilon"] == pytest.approx(eps, rel=1e-12)
    assert meta["config"]["epsilon"] == pytest.approx(eps, rel=1e-12)
    assert run.status()["epsilon"] == pytest.approx(eps, rel=1e-12)
    (listed,) = [s for s in list_runs(root) if s.name == path.name]
    assert listed.status == "done" and listed.epsilon == pytest.approx(eps, rel=1e-12)
    report = tmp_path / "r.html"
    assert main(["evaluate", str(path), "--report", str(report), "--n-targets", "50", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["epsilon"] == pytest.approx(eps, rel=1e-12)
    text = report.read_text()
    assert f"{eps:.4g}" in text and f"{eps:.3g} with δ" in text
    assert "PLD" in text and "does not apply" in text


def test_a_run_in_the_released_name_that_no_selection_made_is_refused(selected, tmp_path):
    """A folder NAME--selected whose ledger has no selection record (a run trained under that name)
    is not taken for the release: one line, not an AttributeError."""
    import shutil

    from dpcore.errors import RunError
    from dpcore.jobs.selection import release_best

    root, out = selected
    shutil.copytree(root / out["trials"][0]["run"], tmp_path / "sel--selected")
    with pytest.raises(RunError, match="no selection record"):
        release_best(tmp_path, _spec(), {}, out["trials"], out["distribution"], "utility")
