"""A run's ε is recomputed from its ledger whenever it is opened: every edited copy is flagged.

The corpus edits what an auditor (or someone handed a run folder) would: the stored ε, the records,
δ, the private flag, model.json's copy, the config's target, status.json and the training log. Each
edited run is listed as inconsistent without an ε, never as private, and every opener refuses it
(model, shareable release, the CLI's `evaluate --report`)."""
from __future__ import annotations

import json
import math
import shutil

import pytest

from dpcore.errors import RunError
from dpcore.jobs import train_run
from dpcore.runs import Run, RunConfig, list_runs
from dpcore.runs.verify import INCONSISTENT, check_run

TINY = dict(epochs=1, hidden=16, em_iters=2, pca_dim=8, batch_size=100, warmup_steps=5, epsilon=1.0)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("verify")
    data = {"dataset": "digits", "n": 600}
    private = train_run(RunConfig("p3gm", TINY, data), root, name="p")
    plain = train_run(RunConfig("vae", dict(epochs=1, hidden=16, latent_dim=2), data), root, name="v")
    return private, plain


def _json(path, fn):
    path.write_text(json.dumps(fn(json.loads(path.read_text()))))


def _ledger(fn):
    return lambda run: _json(run / "ledger.json", fn)


def _model(fn):
    return lambda run: _json(run / "model" / "model.json", fn)


def _config(fn):
    return lambda run: _json(run / "config.json", fn)


def _scale(records, factor, key="noise_multiplier"):
    return [{**r, key: r[key] * factor} for r in records]


def _accounted(d):
    """ledger.json with its stored ε made to agree with its (edited) records."""
    from dpcore.privacy.accountant import epsilon
    from dpcore.privacy.ledger import PrivacyLedger

    return {**d, "epsilon": epsilon(PrivacyLedger.from_list(d["records"]), d["delta"])}


def _both(fn):
    """The same edit of the records in ledger.json and in model.json's copy, ε recomputed in both
    (and in status.json): only the training log still tells."""
    def edit(run):
        _json(run / "ledger.json", lambda d: _accounted({**d, "records": fn(d["records"])}))
        eps = json.loads((run / "ledger.json").read_text())["epsilon"]
        _json(run / "model" / "model.json", lambda m: {**m, "ledger": fn(m["ledger"]),
                                                       "fit_result": {**m["fit_result"], "epsilon": eps}})
        _json(run / "status.json", lambda s: {**s, "epsilon": eps})
    return edit


def _last_metric(fn):
    def edit(run):
        lines = (run / "metrics.jsonl").read_text().splitlines()
        lines[-1] = json.dumps(fn(json.loads(lines[-1])))
        (run / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    return edit


def _selection(d):
    from dpcore.privacy.accountant import DEFAULT_ORDERS

    sel = {"distribution": "negative_binomial", "eta": 1.0, "gamma": 0.2, "candidates": [],
           "base_rdp": [0.0] * len(DEFAULT_ORDERS), "orders": list(DEFAULT_ORDERS)}
    return {**d, "selection": sel}


PRIVATE_EDITS = {
    "stored ε lowered": _ledger(lambda d: {**d, "epsilon": 0.01}),
    "records emptied": _ledger(lambda d: {**d, "records": [], "epsilon": 0.1}),
    "noise multipliers ÷100, ε kept": _ledger(lambda d: {**d, "records": _scale(d["records"], 0.01), "epsilon": 0.999}),
    "noise ÷100, ε recomputed in ledger.json": _ledger(lambda d: _accounted({**d, "records": _scale(d["records"], 0.01)})),
    "sampling rate changed": _ledger(lambda d: {**d, "records": [{**r, "sampling_rate": r["sampling_rate"] / 4}
                                                                  if r["mechanism"] == "subsampled_gaussian" else r
                                                                  for r in d["records"]]}),
    "a record dropped, ε recomputed": _ledger(lambda d: _accounted({**d, "records": d["records"][:-1]})),
    "δ = 1e-300": _ledger(lambda d: {**d, "delta": 1e-300}),
    "δ = 0": _ledger(lambda d: {**d, "delta": 0.0}),
    "private false": _ledger(lambda d: {**d, "private": False}),
    "ε = -1": _ledger(lambda d: {**d, "epsilon": -1}),
    "ε null": _ledger(lambda d: {**d, "epsilon": None}),
    "ledger.json deleted": lambda run: (run / "ledger.json").unlink(),
    "selection record added": _ledger(_selection),
    "model.json ledger copy differs": _model(lambda m: {**m, "ledger": _scale(m["ledger"], 2.0)}),
    "model.json fit ε": _model(lambda m: {**m, "fit_result": {**m["fit_result"], "epsilon": 0.5}}),
    "model.json fit δ": _model(lambda m: {**m, "fit_result": {**m["fit_result"], "delta": 1e-3}}),
    "model.json config ε": _model(lambda m: {**m, "config": {**m["config"], "epsilon": 5.0}}),
    "config target ε lowered": _config(lambda c: {**c, "params": {**c["params"], "epsilon": 0.5}}),
    "config δ changed": _config(lambda c: {**c, "params": {**c["params"], "delta": 1e-3}}),
    "status.json ε": lambda run: _json(run / "status.json", lambda s: {**s, "epsilon": 0.3}),
    "training log's last ε above the ledger's": _last_metric(lambda e: {**e, "epsilon": 5.0}),
    "training log's last step": _last_metric(lambda e: {**e, "step": e["step"] + 7}),
    "noise ÷100 everywhere but the log": _both(lambda recs: _scale(recs, 0.01)),
    "steps halved everywhere but the log": _both(lambda recs: [{**r, "steps": max(1, r["steps"] // 2)}
                                                                 for r in recs]),
}
PLAIN_EDITS = {
    "non-private model claims ε 1": _ledger(lambda d: {**d, "epsilon": 1.0, "private": True}),
    "non-private model with a finite ε": _ledger(lambda d: {**d, "epsilon": 0.5}),
}


def test_unedited_runs_are_consistent(runs):
    private, plain = runs
    c = check_run(private)
    assert c.consistent and c.private and c.epsilon == pytest.approx(TINY["epsilon"], rel=1e-6)
    assert not c.problems and check_run(plain).consistent and math.isinf(check_run(plain).epsilon)
    assert not check_run(plain).private


@pytest.mark.parametrize("edit", sorted(PRIVATE_EDITS) + sorted(PLAIN_EDITS))
def test_every_edited_run_is_flagged_and_never_shown_as_private(runs, tmp_path, edit):
    from dpcore.report import run_report
    from dpcore.ui.tables import runs_table

    source = runs[0] if edit in PRIVATE_EDITS else runs[1]
    root = tmp_path / "root"
    path = shutil.copytree(source.path, root / source.name)
    (PRIVATE_EDITS | PLAIN_EDITS)[edit](path)
    run = Run(path)
    check = check_run(run)
    assert not check.consistent and not check.private and check.message.startswith(INCONSISTENT), check
    assert math.isnan(run.epsilon) and "\n" not in check.message
    (summary,) = list_runs(root)
    assert summary.status == "inconsistent" and math.isnan(summary.epsilon)
    assert summary.message.startswith(INCONSISTENT)
    row = runs_table([summary]).iloc[0]
    assert row["ε"] == "—" and row["guarantee"] == INCONSISTENT
    with pytest.raises(RunError, match=r"ledger inconsistent \(edited\?\)"):
        run.load_model()
    with pytest.raises(RunError, match=r"ledger inconsistent \(edited\?\)"):
        run_report(path, kind="shareable")


def test_cli_evaluate_sample_attack_say_inconsistent_instead_of_an_epsilon(runs, tmp_path, capsys):
    from dpcore.cli import main

    path = shutil.copytree(runs[0].path, tmp_path / "p")
    PRIVATE_EDITS["stored ε lowered"](path)
    report = tmp_path / "r.html"
    assert main(["evaluate", str(path), "--report", str(report), "--n-targets", "20"]) == 2
    captured = capsys.readouterr()
    assert "ledger inconsistent (edited?)" in captured.err and "0.01" not in captured.out
    assert not report.exists()
    rows = tmp_path / "s.csv"
    for args in (["sample", str(path), "--n", "5", "--out", str(rows)], ["attack", str(path), "--n-targets", "20"]):
        assert main(args) == 2, args
        assert "ledger inconsistent (edited?)" in capsys.readouterr().err
    assert not rows.exists()
