"""Named settings a lecturer can pick by name: `python -m dpcore train --model vae --preset overfit`.

Why: "privacy costs nothing and protects nothing" is what a user learns when every demo model
generalises well. The `overfit` VAE memorises its training rows on purpose — half of the data
(test_size 0.5, so there are as many non-members as members to attack), 200 epochs of batches of
32, and a sharp Gaussian likelihood (σ = 0.1: the reconstruction term outweighs the KL 50×) — so the
Privacy page's attacks have something to find (digits, seed 0: loss attack AUC ≈ 0.94).
"""
from __future__ import annotations

from dpcore.errors import InvalidParameter

PRESETS: dict[str, dict[str, dict]] = {
    "vae": {
        "overfit": {"params": {"epochs": 200, "batch_size": 32, "likelihood": "gaussian", "recon_scale": 0.1},
                    "data": {"test_size": 0.5},
                    "help": "memorises its training rows (a model that leaks, for teaching)"},
    },
}


def preset_names(model: str) -> list[str]:
    return list(PRESETS.get(model, {}))


def preset(model: str, name: str) -> dict:
    """{"params": …, "data": …, "help": …} of preset `name` for `model` (one-line error if unknown)."""
    options = PRESETS.get(model, {})
    if name not in options:
        have = ", ".join(options) or "none"
        raise InvalidParameter(f"model {model!r} has no preset {name!r} (presets: {have})")
    return options[name]
