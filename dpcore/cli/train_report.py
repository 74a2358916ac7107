"""What `python -m dpcore train` prints when a run ends: ε, the noise and the coverage of its
preprocessing, a model's own privacy claim, and the warnings a fresh run's sample raises (a class
never generated, a collapsed column, whether the rows predict the target)."""
from __future__ import annotations

import math
from pathlib import Path

from dpcore.privacy.coverage import NOT_PRIVATE, run_coverage


def report(args, run, plan, seconds: float) -> int:
    """Print the finished run (one JSON object with --json): the same facts the Train page shows."""
    from dpcore.cli import print_json

    status = run.status()
    ledger = run.ledger()
    cfg = run.config
    out = {"run": str(run.path), "model": cfg.model, "status": status["status"], "epsilon": run.epsilon,
           "delta": run.delta, "ledger": ledger.to_list(), "seconds": round(seconds, 3),
           "steps": status.get("step"), "params": cfg.params, "adapted": plan.adapted,
           **noise_summary(ledger, run.epsilon)}
    metrics = run.metrics()
    if metrics:
        out["final_losses"] = metrics[-1].get("losses", {})
    saved = model_json(run.path)
    if isinstance(saved.get("config"), dict):  # what trained: auto fields as the run resolved them (from ñ)
        out["auto"] = {k: saved["config"].get(k) for k, v in cfg.params.items() if v is None
                       and saved["config"].get(k) is not None}
        out["params"] = {**cfg.params, **out["auto"]}
    from dpcore.models import get_model

    claim = get_model(cfg.model).saved_claim(saved)  # a model's own claim beside the accountant's ε
    if claim:
        out["privacy_claim"] = claim
    out.update(run_coverage(bool(get_model(cfg.model).private),
                            bool(saved.get("template", {}).get("preprocessing_private", True)),
                            seeded_noise=out["noise"] == "seeded"))
    out["warnings"], out["target_check"] = run_warnings(run)
    if args.json:
        print_json(out)
    else:
        eps = "∞" if math.isinf(out["epsilon"]) else f"{out['epsilon']:.4g}"
        for name, why in plan.adapted.items():
            print(f"adapted to the data: {name} {why}")
        print(f"{status['status']}: {run.path} (ε = {eps}, δ = {out['delta']:g}, {seconds:.1f} s; preprocessing "
              + ("covered by ε)" if out["preprocessing_covered"] else "NOT covered by ε)")
              + (f"; {NOT_PRIVATE}" if out["noise"] == "seeded" else ""))
        if claim:
            print(f"privacy claim: {claim['summary']}")
        for w in out["warnings"]:
            print(f"warning: {w}")
        check = out["target_check"]
        if check and check["predicts"]:
            print(check["text"])
    return 0


WARNING_SAMPLE = 5000  # synthetic rows drawn to check a fresh run for a missing class or a flat column


def run_warnings(run) -> tuple[list[str], dict | None]:
    """dpcore.evaluate.checks.fit_warnings on a sample of the saved model (none without a model):
    the columns whose preprocessing is not covered by ε, a class never generated, the columns that
    collapsed (named), and with a test split whether the rows predict the target (labelled not
    covered by ε). `evaluate` scores utility in full."""
    if not run.has_model():
        return [], None
    from dpcore.evaluate.checks import fit_warnings
    from dpcore.report import load_bundle, weak_run_advice

    bundle = load_bundle(run.path, n_samples=WARNING_SAMPLE)
    return fit_warnings(bundle.synthetic, bundle.train, bundle.test, advice=weak_run_advice(bundle))


def noise_summary(ledger, epsilon: float) -> dict:
    """{"noise": "secret" | "seeded" | None (no mechanism), "private": bool}: a run whose noise
    can be re-drawn from its public seed (`reproducible_noise`) is not private, whatever its ε."""
    if not len(ledger):
        return {"noise": None, "private": False}
    seeded = ledger.reproducible_noise
    return {"noise": "seeded" if seeded else "secret", "private": math.isfinite(epsilon) and not seeded}


def model_json(run_path) -> dict:
    """The run's model.json through the run files' size- and depth-limited reader; {} when there is
    none or it cannot be read (the report then leaves out what it would have said from it)."""
    from dpcore.errors import RunError
    from dpcore.files import MAX_MODEL_JSON_BYTES, read_json

    try:
        meta = read_json(Path(run_path) / "model" / "model.json", max_bytes=MAX_MODEL_JSON_BYTES, default={})
    except RunError:
        return {}
    return meta if isinstance(meta, dict) else {}
