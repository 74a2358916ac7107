"""P3GM's two ablations: PGM, the same pipeline without noise (the non-private ceiling), and
P3GM-AE, with the encoder variance fixed at 0 (what the variational encoder adds)."""
from __future__ import annotations

from dpcore.models.p3gm import P3GM
from dpcore.models.p3gm_config import P3GMAEConfig, PGMConfig


class PGM(P3GM):
    """PGM: P3GM's pipeline without noise (exact PCA, plain EM, plain SGD); ε = ∞."""

    name = "pgm"
    label = "PGM (ε = ∞)"
    description = "PGM: P3GM without noise (ε = ∞) — the non-private ceiling of the same architecture."
    config_class = PGMConfig
    private = False
    role = "ceiling"
    ceiling_of = "p3gm"


class P3GMAE(P3GM):
    """P3GM-AE: encoder variance fixed at 0 — the decoder learns from the clipped PCA codes alone."""

    name = "p3gm-ae"
    label = "P3GM-AE"
    description = "P3GM-AE: P3GM with a deterministic encoder (the PCA code itself); only the decoder learns."
    config_class = P3GMAEConfig
    variational = False
