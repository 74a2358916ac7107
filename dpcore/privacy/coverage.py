"""What ε covers: one catalogue of the workbench's outputs, each covered by ε or labelled not covered.

Why one catalogue: the Privacy page, the CLI JSON and both HTML reports must say the same thing
about every output, and a new output kind has to be classified once, here, before any of them can
show it. An output is covered when only ledgered DP mechanisms touched the private rows on its way
out (or post-processing of such outputs); anything computed from raw records outside the ledger is
not covered, whatever ε the run reports.
"""
from __future__ import annotations

from dataclasses import dataclass

NEIGHBOURING = ("Neighbouring datasets differ by adding or removing one row of the file you hand over; the "
                "number of rows is released only as a noisy count recorded in the ledger, and the "
                "train/test split of a file decides each row on its own (a keyed hash with a secret key kept beside "
                "the file), so neighbouring files give training sets that differ by at most that row.")
NOT_PRIVATE = "not private: noise reproducible from the seed"
SEEDED_EXPLAINER = ("This run was trained with reproducible_noise (a debugging mode): its mechanism noise "
                    "can be re-drawn from the seed in its config, so its ε is not a guarantee and no "
                    "output is covered.")


@dataclass(frozen=True)
class Output:
    """One kind of output: a stable key (CLI JSON), a label (pages, reports) and the reason."""

    key: str
    label: str
    covered: bool
    why: str


CATALOGUE: tuple[Output, ...] = (
    Output("synthetic_rows", "Synthetic rows drawn from the trained generator", True,
           "post-processing of a generator that only ledgered DP mechanisms trained"),
    Output("model_weights", "The trained generator's weights", True,
           "every access to the private rows during training is a noisy step in the ledger"),
    Output("ledger", "ε, δ and the privacy ledger (budget by mechanism, bound curves)", True,
           "computed from public settings and the ledgered noisy releases only"),
    Output("noisy_statistics", "Noisy statistics (DP-PCA, DP-EM, noisy mean, DP bounds, noisy count)", True,
           "each is a Gaussian release recorded in the ledger"),
    Output("config", "The run's settings", True,
           "chosen by the user or constants; an 'auto' setting that depends on the size (epochs, batch) is "
           "stored as auto and resolved in the run from the released noisy count, never from the exact rows"),
    Output("released_score", "The released usefulness score (held-out balanced accuracy of a classifier trained "
           "on the synthetic rows)", True, "its per-class counts of right and wrong predictions are released with their own "
           "Gaussian noise and recorded in the ledger (parallel with training on a file's keyed split)"),
    Output("real_rows", "Real training and test rows", False, "the private data itself"),
    Output("split_key", "The split key of a file (kept beside it) and which rows are test rows", False,
           "kept with the data owner; the split key is never copied into a run, a report or a release"),
    Output("row_counts", "Exact row counts", False,
           "neighbours differ by one row, so the exact count is private; only the noisy count is released"),
    Output("raw_losses", "Raw training losses (live curves, per-step losses)", False,
           "computed on raw batches without noise (GS-WGAN: critic estimates on real shards)"),
    Output("real_evaluation", "Evaluation against real data (utility, real → real reference, marginal TVD, "
           "latent codes of real rows)", False, "computed from raw records at release time, outside the ledger"),
    Output("attack_statistics", "Membership-attack statistics (curves, AUC, empirical ε, outlier rank)", False,
           "computed from raw members and non-members"),
    Output("posterior_resamples", "Posterior re-samples (one per training record)", False,
           "the encoder reads each raw record at release time, outside the ledger"),
    Output("data_preprocessing", "Scaling bounds or categories read from the raw data", False,
           "not noised; a run that used them is marked 'preprocessing not covered by ε'"),
)
BY_KEY = {o.key: o for o in CATALOGUE}


def covered() -> list[Output]:
    return [o for o in CATALOGUE if o.covered]


def not_covered() -> list[Output]:
    return [o for o in CATALOGUE if not o.covered]


def run_coverage(private: bool, preprocessing_private: bool = True, seeded_noise: bool = False) -> dict:
    """The catalogue for one run, as the CLI JSON shows it.

    A non-private model (ε = ∞, L-VAE included) covers nothing: every output lands in
    `not_covered`; so does a run whose noise is reproducible from its seed (`seeded_noise`, the
    debugging mode), whatever its ε. Data-derived preprocessing is listed as not covered and flagged.
    """
    keys_cov = [o.key for o in covered()] if private and not seeded_noise else []
    keys_not = [o.key for o in CATALOGUE if o.key not in keys_cov]
    out = {"covered_by_epsilon": keys_cov, "not_covered": keys_not,
           "preprocessing_covered": bool(preprocessing_private), "neighbouring": NEIGHBOURING}
    if seeded_noise:
        out["warning"] = NOT_PRIVATE
    return out
