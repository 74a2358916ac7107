"""The accountant: ledger → (ε, δ). The only place in dpcore that computes ε (docs/architecture.md).

Public facade over `dpcore.privacy.accountants`:
- `rdp`, `epsilon`, `epsilon_and_order`, `classic_epsilon`: RDP composition of every record with the
  tight RDP→DP conversion (the reference number; docs/references.md#tight-conversion);
- `baseline_epsilon`: the P3GM paper's sequential composition (for comparison only);
- `pld_epsilon`, `pld_delta`, `pld_delta_curve`: dp-accounting's PLD accountant (δ(ε) curve for the f-DP envelope);
- `selection_rdp`, `expected_trials`: private selection of the best of K runs (Papernot &
  Steinke 2022), applied by `rdp` to a ledger closed by a SelectionRecord
  (`selection_from_dict` reads one from JSON, the old form included);
- `p3gm_ledger`, `dp_vae_ledger`, `calibrate_p3gm`, `calibrate_dp_vae`, `calibrate_sgd`,
  `Calibration`: from a budget to noise multipliers and the ledger they produce.
All analyses use add/remove-one adjacency, like the Poisson-subsampled DP-SGD analysis. Under it
the row count n is private too: runs release it once as a ledgered noisy count ñ
(`dpcore.privacy.dataset_size`, record "dataset-size") and use ñ wherever n would be published
(docs/neighbouring-relation.md).
"""
from __future__ import annotations

from dpcore.privacy.accountants.baseline import (
                                                 analytic_gaussian_epsilon,
                                                 baseline_epsilon,
                                                 gaussian_mechanism_epsilon,
                                                 zcdp_epsilon,
)
from dpcore.privacy.accountants.calibrate import (
                                                 CENTERS,
                                                 EM_FRACTION,
                                                 MEAN_NOISE_RATIO,
                                                 Calibration,
                                                 calibrate_dp_vae,
                                                 calibrate_gaussian,
                                                 calibrate_p3gm,
                                                 calibrate_sgd,
                                                 dp_vae_ledger,
                                                 em_mechanism_count,
                                                 encoder_records,
                                                 p3gm_ledger,
                                                 sgd_schedule,
)
from dpcore.privacy.accountants.pld import pld_delta, pld_delta_curve, pld_epsilon
from dpcore.privacy.accountants.rdp import (
                                                 DEFAULT_ORDERS,
                                                 classic_epsilon,
                                                 conversion_offset,
                                                 epsilon,
                                                 epsilon_and_order,
                                                 epsilon_from_rdp,
                                                 rdp,
                                                 record_rdp,
                                                 selection_from_dict,
                                                 subsampled_gaussian_rdp,
)
from dpcore.privacy.accountants.selection import expected_trials, gamma_for_mean, selection_rdp, tnb_pmf

__all__ = [
    "DEFAULT_ORDERS", "CENTERS", "EM_FRACTION", "MEAN_NOISE_RATIO", "Calibration",
    "analytic_gaussian_epsilon", "baseline_epsilon", "calibrate_dp_vae", "calibrate_p3gm",
    "calibrate_gaussian", "calibrate_sgd", "classic_epsilon", "conversion_offset", "dp_vae_ledger",
    "em_mechanism_count", "encoder_records", "epsilon", "epsilon_and_order", "epsilon_from_rdp",
    "gaussian_mechanism_epsilon", "p3gm_ledger", "pld_delta", "pld_delta_curve", "pld_epsilon", "rdp", "record_rdp",
    "selection_from_dict", "sgd_schedule", "subsampled_gaussian_rdp", "zcdp_epsilon",
    "expected_trials", "gamma_for_mean", "selection_rdp", "tnb_pmf",
]
