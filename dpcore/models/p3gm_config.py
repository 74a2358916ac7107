"""The settings of P3GM and its variants (PGM, P3GM-AE), declared once per field.

Why a module of their own: the fields (with their help, bounds and groups) are what the CLI, the
Train page and the contract test read; the model's phases live in `dpcore.models.p3gm`.
"""
from __future__ import annotations

from dataclasses import dataclass

from dpcore.models.neural import NUMERIC_ATOMS_HELP, NUMERIC_BINS_HELP, TABULAR_HEADS_HELP
from dpcore.models.params import (
    EPSILON_BY_SIZE,
    REPRODUCIBLE_NOISE_HELP,
    ModelConfig,
    count,
    delta_field,
    device_field,
    epsilon_field,
    hparam,
    positive,
    seed_field,
)

PCA_DIM = 30  # the paper's best latent size (10–100 work)
# P3GM's epochs for a public training-row count (a built-in's split; a file's count is private, so a
# file gets epochs = auto, resolved from the noisy ñ in the run; its ε: params.EPSILON_BY_SIZE):
# DP-SGD's noise per step is fixed, so a small dataset gets more passes (its steps are few and cheap).
EPOCHS_BY_SIZE = ((10_000, None), (0, 10))
WARMUP_SCALE_HELP = (
    "tables with per-column heads: the factor the warm-up's targets (the DP-PCA reconstruction) are spread "
    "by around the noisy mean. PCA saw rows centred and scaled to unit norm, so the reconstruction is about "
    "1/‖x − m‖ as wide as the data and the tails are cut. None = √Σ m_j(1 − m_j) of DP-PCA's noisy mean m "
    "(the expected ‖x − m‖ of one-hot and 0/1 columns, an upper bound for numerics; a released value, "
    "post-processing, no privacy cost); 1 = unscaled (before issue 29). Images ignore it")
# P3GM's DP-SGD schedule on images of at least IMAGE_SCHEDULE_ROWS rows, for the fields left auto:
# larger Poisson batches over more epochs at the same ε (the accountant calibrates σ: less noise per
# averaged gradient, fewer steps), a larger step, and the moving average of the iterates (free), which
# the larger step needs; the one-hot label block weighted 10 in the loss (10 columns beside 784 pixels:
# at weight 1 the noisy decoder ties the label loosely to the image); and at sampling time the prior at
# temperature 0.8 and the half of the draws surest of their label (post-processing). Chosen on
# Fashion-MNIST's validation split (docs/benchmarks.md).
IMAGE_SCHEDULE_ROWS = 10_000
IMAGE_SCHEDULE = {"batch_size": 1000, "epochs": 8, "lr": 2e-3, "ema_decay": 0.995,
                  "label_weight": 10.0, "prior_temperature": 0.8, "label_margin_keep": 0.5}
EPOCHS_HELP = ("passes over the training rows in the (DP-)SGD phase; None = 4 for images (P3GM: its image "
               "schedule's from 10 000 rows), and for tables as many as give about 1000 steps (at least 4)")


@dataclass(frozen=True)
class PGMConfig(ModelConfig):
    """Hyperparameters of PGM (P3GM without noise, ε = ∞); P3GM adds the privacy knobs."""

    pca_dim: int | None = count(None, "latent dimension d_p = number of (DP-)PCA components (paper: 10–100 "
                                      "work, 30 best); None = 30, or the columns left after pca_pool when "
                                      "fewer", group="main", auto=PCA_DIM)
    components: int = count(1, "mixture components K of the latent prior (1 in every official run)",
                            group="main", typical=(1, 10))
    em_iters: int = count(20, "(DP-)EM iterations fitting the mixture prior")
    hidden: int = count(1000, "hidden units of the encoder-variance and decoder MLPs")
    epochs: int | None = count(None, EPOCHS_HELP, group="main", typical=(1, 50), auto=4)
    batch_size: int | None = count(None, "expected batch size (DP-SGD samples each row with probability B/N); "
                                         "None = 300, or a quarter of the rows when 300 is not below them (P3GM: "
                                         "its image schedule's on images of at least 10 000 rows)",
                                   auto=300)
    lr: float | None = positive(None, "Adam learning rate; None = 1e-3, and P3GM's image schedule's on "
                                "images of at least 10 000 rows", auto=1e-3)
    ema_decay: float | None = hparam(None, "decay d of an exponential moving average of the (DP-)SGD iterates, "
                                     "which the model keeps and samples from (post-processing: no privacy "
                                     "cost; averages DP-SGD's noise out); 0 = the last iterate; None = 0, and "
                                     "P3GM's image schedule's on images of at least 10 000 rows",
                                     low=0, high=1, high_open=True, auto=0.0)
    tabular_heads: str = hparam("per-column", TABULAR_HEADS_HELP, choices=("per-column", "flat"))
    numeric_bins: int = count(50, NUMERIC_BINS_HELP, low=0)
    numeric_atoms: bool = hparam(True, NUMERIC_ATOMS_HELP)
    likelihood: str = hparam("gaussian", "decoder likelihood: 'gaussian' (squared error, the official code's; "
                             "measured best on Fashion-MNIST at ε = 1) or 'bernoulli' (cross-entropy)",
                             choices=("gaussian", "bernoulli"))
    recon_scale: float = positive(0.7071, "standard deviation of the Gaussian likelihood (0.707: plain squared error)")
    label_weight: float | None = positive(None, "weight of the one-hot label block in the reconstruction loss; "
                                          "None = 1, and P3GM's image schedule's on images of at least 10 000 "
                                          "rows (the decoder then ties the label to the image more tightly)",
                                          auto=1.0)
    prior_temperature: float | None = positive(None, "sampling: the latent prior's standard deviations are "
                                               "multiplied by T (T < 1 draws nearer the mixture's means; "
                                               "post-processing, no privacy cost); None = 1, and P3GM's image "
                                               "schedule's on images of at least 10 000 rows", auto=1.0)
    label_margin_keep: float | None = hparam(None, "sampling, labelled images (and flat tables): draw rows/keep "
                                             "candidates and keep the rows whose decoded label block has the "
                                             "largest margin "
                                             "between its top two classes (post-processing, no privacy cost); "
                                             "1 = keep every draw; None = 1, and P3GM's image schedule's on "
                                             "images of at least 10 000 rows", low=0.05, high=1, auto=1.0)
    warmup_steps: int = count(300, "decoder warm-up steps on z ~ prior → inverse-PCA(z) (free post-processing; "
                              "0 = off; skipped for tables with normalized codes, whose inverse is not in "
                              "value space)", low=0)
    warmup_batch: int = count(300, "prior draws per decoder warm-up step (post-processing of DP-PCA and DP-EM: "
                              "no rows are read, so the size buys speed, not privacy); independent of "
                              "batch_size, which is DP-SGD's")
    warmup_scale: float | None = positive(None, WARMUP_SCALE_HELP)
    warmup_residual: bool = hparam(True, "tables with per-column heads: the warm-up adds to each numeric "
                                   "column the variance DP-PCA's released covariance gives it beyond the "
                                   "top components (probabilistic PCA; post-processing, no privacy cost), so "
                                   "a column the components miss is not generated at its mean")
    warmup_columns: bool = hparam(True, "tables with per-column heads: the warm-up gives each numeric column the "
                                  "variance DP-PCA's released covariance diagonal says it has (a factor within "
                                  "0.5–2 on its deviations; post-processing, no privacy cost): the noisy "
                                  "components and prior spread the reconstruction evenly over the columns")
    pca_center: str = hparam("noisy", "centre for PCA: 'noisy' (a private mean, in the ledger), 'public' (0.5) "
                             "or 'none'", choices=("noisy", "public", "none"))
    mean_clip_norm: float | None = positive(None, "L2 clip of the rows in DP-PCA's noisy mean: None = √D, the "
                                            "largest row norm (rows are centred, then normalised: ~3× the PCA "
                                            "signal); 1 = the official order (normalised, then centred)")
    pca_pool: int | None = count(None, "images: average-pool k×k pixels before (DP-)PCA; the covariance noise "
                                 "grows with √D, so 2 halves it (Fashion-MNIST ε = 1: accuracy 0.709 → 0.738); "
                                 "None = 2 for images of side ≥ 16, else 1; ignored for tables")
    pca_codes: str = hparam("normalized", "encoder mean: 'normalized' (DPPCA.transform of unit-norm rows, "
                            "radius 1) or 'raw' (projection of the raw rows, clipped to code_radius)",
                            choices=("normalized", "raw"))
    code_radius: float | None = positive(None, "L2 radius of the codes seen by (DP-)EM and the encoder "
                                         "(None: 1 for 'normalized', 10 for 'raw')")
    label_shares: str = hparam("dp-mean", "labelled data: 'dp-mean' keeps generated rows so the label shares "
                               "match the label block of DP-PCA's noisy mean (post-processing, no privacy cost; "
                               "needs the noisy pca_center) or 'decoder' (as decoded)",
                               choices=("dp-mean", "decoder"))
    category_shares: str = hparam("dp-mean", "tables with per-column heads: 'dp-mean' shifts each categorical "
                                  "head so the generated levels follow their shares in DP-PCA's noisy mean "
                                  "(every declared level at least at the noise's std; post-processing, no "
                                  "privacy cost; needs the noisy pca_center) or 'decoder' (as decoded)",
                                  choices=("dp-mean", "decoder"))
    seed: int = seed_field()
    device: str = device_field()

    @property
    def radius(self) -> float:
        """The code radius in force (DPPCA's clip norm 1 for normalized codes)."""
        if self.code_radius is not None:
            return float(self.code_radius)
        return 1.0 if self.pca_codes == "normalized" else 10.0


@dataclass(frozen=True)
class P3GMConfig(PGMConfig):
    """P3GM: PGM plus the total budget and its split; the noise is calibrated, never typed in."""

    epochs: int | None = count(None, EPOCHS_HELP + "; default 10 on a public dataset under 10 000 "
                               "training rows", group="main", typical=(1, 50), auto=4, by_size=EPOCHS_BY_SIZE)
    epsilon: float = epsilon_field(1.0, "total privacy budget ε of the run (PCA + EM + "
                                   "DP-SGD, RDP accountant); finite (use pgm/vae for ε = ∞); default 1, and on a "
                                   "public dataset 3 under 10 000 training rows, 10 under 3 000",
                                   by_size=EPSILON_BY_SIZE)
    delta: float = delta_field()
    encoder_share: float = hparam(0.3, "share of the budget spent on DP-PCA + DP-EM (0.1–0.3 works best)",
                                  low=0, high=1, low_open=True, high_open=True, group="budget")
    max_grad_norm: float = positive(1.0, "per-example gradient clipping norm C of DP-SGD")
    em_share: float = hparam(0.13, "share of the encoder's budget spent on DP-EM (the rest: DP-PCA and its "
                             "mean); with one component every EM iteration releases the same moments, so "
                             "em_iters = 1 needs about 1/20 of the default share", low=0, high=1,
                             low_open=True, high_open=True)
    mean_noise_ratio: float = positive(2.0, "noise multiplier of DP-PCA's mean over its covariance's (the mean "
                                       "costs 1/ratio² of the covariance's budget)")
    reproducible_noise: bool = hparam(False, REPRODUCIBLE_NOISE_HELP)


@dataclass(frozen=True)
class P3GMAEConfig(P3GMConfig):
    """P3GM-AE: the encoder variance is fixed at 0 (z = the clipped PCA code); only the decoder learns."""

    # the size rules above are P3GM's (the Story's private model); P3GM-AE keeps constant defaults
    epochs: int | None = count(None, EPOCHS_HELP, group="main", typical=(1, 50), auto=4)
    epsilon: float = epsilon_field(1.0, "total privacy budget ε of the run (PCA + EM + DP-SGD, RDP "
                                        "accountant); finite (use pgm/vae for ε = ∞)")
