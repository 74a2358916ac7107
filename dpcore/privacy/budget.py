"""Where a run's privacy budget went: each mechanism's share, and ε under each accounting analysis.

Numbers only (the figures are in `dpcore.figures.privacy`); every value comes from the accountant.
"""
from __future__ import annotations

import math

NOT_FOR_SELECTION = "does not apply: it has no bound for private selection (the RDP accountant's ε is reported)"


def budget_share(ledger, delta: float) -> tuple[list[dict], float, float]:
    """Each record's share of the total RDP at the order α* where the run's ε is attained.

    Returns (rows, ε, α*): rows have name, mechanism, noise_multiplier, sampling_rate, steps,
    rdp (at α*) and share. The RDP values come from the accountant. With held-out records (parallel
    composition, `rdp.sides`) the shares are of the side that sets ε; a record only on the other side
    gets share 0 (it costs nothing on top of that side).
    """
    from dpcore.privacy.accountant import epsilon_and_order, record_rdp
    from dpcore.privacy.accountants.rdp import sides

    records = list(ledger)
    if not records:
        return [], 0.0, float("nan")
    eps, order = epsilon_and_order(ledger, delta)
    if not math.isfinite(order):
        return [], eps, order
    vals = [float(record_rdp(r, [order])[0]) for r in records]
    rows = [{**r.to_dict(), "rdp": v} for r, v in zip(records, vals)]
    parts = sides(ledger)
    if len(parts) > 1:
        binding = max(parts, key=lambda part: sum(vals[i] for i, r in enumerate(records) if any(r is q for q in part)))
        for row, r in zip(rows, records):
            if not any(r is q for q in binding):
                row["rdp"] = 0.0
    if getattr(ledger, "selection", None) is not None:  # what choosing the best of K runs adds
        from dpcore.privacy.accountant import rdp

        extra = max(float(rdp(ledger, [order])[0]) - sum(vals), 0.0)
        rows.append({"name": ledger.selection.name, "mechanism": "private_selection",
                     "noise_multiplier": math.nan, "sampling_rate": math.nan, "steps": 1, "sensitivity": math.nan,
                     "rdp": extra})
    total = sum(r["rdp"] for r in rows) or 1.0
    return [{**r, "share": r["rdp"] / total} for r in rows], eps, order



def composition_table(ledger, delta: float) -> list[dict]:
    """ε of the same ledger under each analysis the accountant offers (all at the same δ); for a
    run released by private selection, PLD and the sequential baseline say they do not apply."""
    from dpcore.privacy import accountant as acc

    rows = [("RDP, tight (reported)", acc.epsilon),
            ("RDP, classic conversion", acc.classic_epsilon),
            ("PLD (dp-accounting)", acc.pld_epsilon),
            ("Sequential (paper's baseline)", acc.baseline_epsilon)]
    out = []
    selected = getattr(ledger, "selection", None) is not None
    for label, fn in rows:
        if selected and fn in (acc.pld_epsilon, acc.baseline_epsilon):
            out.append({"analysis": label, "epsilon": float("nan"), "note": NOT_FOR_SELECTION})
            continue
        try:
            out.append({"analysis": label, "epsilon": float(fn(ledger, delta))})
        except Exception as exc:  # noqa: BLE001 - one analysis failing must not hide the others
            out.append({"analysis": label, "epsilon": float("nan"), "note": str(exc)})
    return out
