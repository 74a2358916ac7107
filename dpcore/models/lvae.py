"""L-VAE: a VAE whose decoder is L-Lipschitz (Groß & Wunder, arXiv 2304.11336; docs/references.md#l-vae).

Two variants: "spectral" (every dense decoder layer spectrally normalised to L^(1/n): a proven
bound, certified below) and "penalty" (one-sided penalty on the decoder Jacobian's spectral norm,
as in the paper's experiments: no guarantee, reported as "not certified" with an empirical estimate).
No DP-SGD: `privacy_ledger()` holds only the dataset's DP preprocessing (if any); the accountant's ε
of the trained model is ∞.

The certificate (derived here because the paper states no theorem we could verify)
--------------------------------------------------------------------------------------
Mechanism certified, M(x): for ONE record x (a row of the model matrix: features in [0, 1]^D plus
the one-hot label block), release z drawn from the exact posterior
    p(z | x) ∝ N(z; 0, I) · exp ℓ(x, z),   ℓ(x, z) = log p(x | μ̄(z)),   μ̄ = μ_θ ∘ proj_{R_z},
with the decoder θ FIXED (not a function of x), proj_{R_z} the projection onto the ball of radius
R_z(δ) (`sample`/`decode` use the same μ̄), and either likelihood:
    Gaussian  ℓ = −‖w⊙(x − μ̄)‖²/(2s²) + c,   Bernoulli  ℓ = (⟨w⊙x, μ̄⟩ − Σ w·softplus(μ̄))/s²  (logits,
    s = 1 unless a small target ε raises it: `certified_scale`; training always uses the config's s).
Releasing μ̄(z) (a "re-sampled" synthetic record) is post-processing. Neighbouring: x replaced by
any x' of the domain; applied independently to every record, replace-one for a data set.
1. Only the x-dependent part of ℓ matters: d(z) := ℓ(x, z) − ℓ(x', z) = ⟨w⊙(x − x'), μ̄(z)⟩/s² + k,
   k independent of z (Bernoulli: x·l − softplus(l) is linear in x, tempered by 1/s²).
2. Exponential mechanism: log p(z|x)/p(z|x') = d(z) − log E_{p(·|x')}[e^{d}] ∈ [inf d − sup d,
   sup d − inf d], so the privacy loss is at most the range of d over z.
3. μ̄(ℝ^d) = μ(B(0, R_z)) has diameter ≤ 2·L·R_z (L-Lipschitz), and Cauchy–Schwarz gives
   range d ≤ ‖w⊙(x − x')‖ · 2·L·R_z / s² ≤ D_x · 2·L·R_z / s² =: ε,  D_x = sqrt(D + 2w²)
   (w = label_weight; 2w² only for labelled data). Hence M is (ε, 0)-DP with
        ε = 2 · L · R_z(δ) · D_x / s²     (linear in L·R_z and in R_x = D_x/2, as the paper says).
   L is the exact product of the deployed layers' spectral norms (matrix_norm ord=2, float64).
4. δ only chooses R_z: a N(0, I) prior draw lies outside the ball (and is moved by the
   projection) with probability δ. With the projection there is no uncovered latent tail; without
   it ℓ's range is unbounded and no ε holds.
NOT covered: the training of decoder and encoder (θ depends on every record, no noise: whatever
is computed from θ alone, including `sample()`'s prior draws, has ε = ∞ formally); the encoder
q_φ(z|x) is only an approximation of p(z|x), so re-sampling through the encoder is not M; the
"penalty" variant (its Lipschitz constant is only estimated); data outside [0, 1].
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from dpcore.data.dataset import Dataset
from dpcore.errors import DataError, InvalidParameter
from dpcore.models import lipschitz as lip
from dpcore.models import networks
from dpcore.models.neural import NeuralSynthesizer
from dpcore.models.params import ModelConfig, count, delta_field, device_field, hparam, positive, seed_field
from dpcore.models.protocol import PrivacyBudget
from dpcore.models.synthesizer import FitRun
from dpcore.models.training import train_sgd

VARIANTS = ("spectral", "penalty")
# The decoder's outputs may span at least this many data diameters (2·L·R_z ≥ MIN_SPAN·D_x). Why:
# with s fixed, a small target ε forces L so low that every output is nearly the same row and the
# posterior collapses (digits, s = 0.5: 9 of 10 classes lost at ε = 10, 3 at ε = 300; none at the
# default L = 2, which spans 3.0 D_x). A broader likelihood s of the certified sampler gives the same
# ε with that L, so the target ε raises s, not flattens the decoder (the certificate holds for any s).
MIN_SPAN = 3.0
DERIVATION = (
    "Exact posterior sampling z ~ p(z|x) ∝ N(0,I)·p(x|μ̄(z)) with a fixed decoder μ̄ = μ∘proj onto "
    "the ball R_z is an exponential mechanism; replacing x by x' changes log p(x|z) by "
    "⟨x−x', μ̄(z)⟩/s² + const, whose range over z is ≤ D_x·2·L·R_z/s², so ε = 2·L·R_z·D_x/s² "
    "(pure DP; δ only sets R_z). Not covered: the non-private training of encoder and decoder, "
    "prior samples from sample(), and re-sampling through the approximate encoder.")

CLAIM_LABEL = "Certificate of exact posterior re-sampling (not offered by the workbench)"
CERTIFICATE_SCOPE = ("exact posterior re-sampling given the fixed decoder, which the workbench does not "
                     "offer (its Metropolis–Hastings re-sampling is an approximation the certificate does not cover)")
RELEASES = ("ε = ∞ for everything the workbench releases from an L-VAE (prior samples, the CSV, the "
            "attack plot): the decoder is trained without DP.")


def release_statement(claim: dict) -> str:
    """What an L-VAE run may claim, in words: ε = ∞ for every release; the certificate (if any) only
    for exact posterior re-sampling, which the workbench does not offer."""
    if claim.get("certified") and claim.get("epsilon") is not None:
        scale = claim.get("scale")
        at = f", likelihood scale s = {scale:.3g}" if isinstance(scale, (int, float)) else ""
        cert = (f"The certificate ε = {claim['epsilon']:.4g} (δ = 0{at}) holds only for exact posterior "
                "re-sampling given the fixed decoder, which the workbench does not offer; its 20-step "
                "Metropolis–Hastings re-sampling (dpcore.models.posterior) is an approximation the "
                "certificate does not cover.")
    else:
        emp = claim.get("empirical_lipschitz")
        cert = ("Not certified: the gradient penalty only estimates the decoder's Lipschitz constant"
                + (f" (≈ {emp:.3g})." if isinstance(emp, (int, float)) else "."))
    return f"{RELEASES} {cert}"


def certified_scale(epsilon: float, diameter: float, scale: float) -> float:
    """s of the certified sampler for a target ε: the training s, or larger when that s would force
    2·L·R_z below MIN_SPAN·D_x (ε = 2·L·R_z·D_x/s², so 2·L·R_z = ε·s²/D_x ≥ MIN_SPAN·D_x)."""
    return max(scale, diameter * math.sqrt(MIN_SPAN / epsilon))


@dataclass(frozen=True)
class LVAEConfig(ModelConfig):
    """Hyperparameters of the L-VAE (MLP encoder and decoder; sized for digits / flattened images)."""

    variant: str = hparam("spectral", "'spectral' (every decoder layer normalised to L^(1/n): certified) "
                                      "or 'penalty' (gradient penalty on the decoder Jacobian: not certified)",
                          choices=VARIANTS)
    lipschitz: float = positive(2.0, "Lipschitz constant L of the decoder (ignored when a finite epsilon is "
                                     "given: then L is set so the certificate equals ε)")
    epsilon: float = hparam(math.inf, "target certificate ε of EXACT posterior re-sampling (not offered by the "
                                      "workbench; its releases have ε = ∞; variant 'spectral'): sets L "
                                      "so the certificate equals it; inf = use `lipschitz`",
                            low=0, low_open=True, finite=False)
    latent_dim: int = count(8, "latent dimension d", group="main", typical=(1, 100))
    hidden: int = count(256, "hidden units of the encoder and decoder MLPs")
    epochs: int = count(30, "passes over the training rows", group="main", typical=(1, 50))
    batch_size: int | None = count(None, "batch size; None = 64, or a quarter of the rows when 64 is not "
                                         "below them", auto=64)
    lr: float = positive(1e-3, "Adam learning rate")
    likelihood: str = hparam("gaussian", "decoder likelihood: 'gaussian' N(μ(z), s²I) as in the theory, or "
                                         "'bernoulli' (logits; the certificate then uses s = 1)",
                             choices=("gaussian", "bernoulli"))
    recon_scale: float = positive(0.5, "standard deviation s of the Gaussian likelihood in training (ε grows as "
                                       "1/s²; a small target ε makes the certified sampler's s larger)")
    label_weight: float = positive(1.0, "weight of the one-hot label block in the likelihood")
    delta: float = delta_field("δ that sets the latent radius R_z(δ) (prior mass outside the ball)",
                               group="advanced")
    penalty_weight: float = positive(10.0, "weight of the Jacobian penalty (variant 'penalty')")
    power_iterations: int = count(1, "power-iteration steps per training step (variant 'spectral')")
    seed: int = seed_field("random seed (same config and seed → same run)")
    device: str = device_field()

    def _check(self) -> None:
        if math.isfinite(self.epsilon) and self.variant != "spectral":
            raise InvalidParameter("variant 'penalty' has no certified ε: use variant='spectral' for a "
                                   "target epsilon, or epsilon=inf")


class _Projected(nn.Module):
    """μ̄ = decoder ∘ projection onto the latent ball (the decoder the certificate is about)."""

    def __init__(self, decoder: nn.Module, radius: float):
        super().__init__()
        self.decoder, self.radius = decoder, radius

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.decoder(lip.project_to_ball(z, self.radius))


class LVAE(NeuralSynthesizer):
    """VAE with an L-Lipschitz decoder; `privacy_claim()` says what is (and is not) certified."""

    name = "lvae"
    label = "L-VAE (Lipschitz decoder)"
    description = ("L-VAE: a VAE with a Lipschitz decoder, trained without DP — ε = ∞ for everything the "
                   "workbench releases (its certificate covers only exact posterior re-sampling, not "
                   "offered here).")
    config_class = LVAEConfig
    private = False  # no accounted mechanism: the accountant's ε is ∞; see privacy_claim()
    role = "baseline"  # trained without DP, and the noise-free twin of no private model here
    notes = ("Its certificate covers only exact posterior re-sampling, which the workbench does not offer.",)

    def __init__(self, config=None, **overrides):
        super().__init__(config, **overrides)
        self.lipschitz_target = self.config.lipschitz
        self.radius = lip.latent_radius(self.config.latent_dim, self.config.delta)
        self.diameter = 0.0
        self.mechanism_scale: float | None = None  # s of the certified sampler (≥ the training s)
        self.claim: dict | None = None

    # ------------------------------------------------------------------ training
    def _budget(self, budget: PrivacyBudget | None) -> tuple[float, float]:
        """(target certificate ε, δ of the latent radius): nothing here is an accountant's ε."""
        delta = budget.delta if budget is not None else self.config.delta
        target = budget.epsilon if budget is not None and budget.is_private else self.config.epsilon
        return target, delta

    def _fit(self, run: FitRun) -> None:
        cfg, train = self.config, run.train
        X = self._matrix(train)
        if X.size and (X.min() < 0.0 or X.max() > 1.0):
            raise DataError("lvae needs features in [0, 1] (the certificate's data domain)")
        n, D = X.shape
        k = self.n_classes
        self.radius = lip.latent_radius(cfg.latent_dim, run.delta)
        self.diameter = lip.data_diameter(train.n_features, k, cfg.label_weight)
        target = run.epsilon
        self.mechanism_scale = None
        if math.isfinite(target):
            if cfg.variant != "spectral":
                raise InvalidParameter("variant 'penalty' has no certified ε: use variant='spectral' "
                                       "for a target epsilon, or no budget")
            self.mechanism_scale = certified_scale(target, self.diameter, self._scale())
            self.lipschitz_target = lip.lipschitz_for_epsilon(target, self.radius,
                                                              self.diameter, self._scale())
        else:
            self.lipschitz_target = cfg.lipschitz
        d = cfg.latent_dim
        self.mog = {"weights": np.ones(1, np.float32), "means": np.zeros((1, d), np.float32),
                    "variances": np.ones((1, d), np.float32)}
        gen = networks.torch_generator(cfg.seed)
        from dpcore.privacy.accountant import sgd_schedule

        steps = sgd_schedule(n, cfg.batch_size, cfg.epochs)[1]
        self.calibration = {"sgd_steps": steps, "lipschitz": self.lipschitz_target,
                            "latent_radius": self.radius}
        prog = run.start(steps)
        self._build_nets(D, gen)
        Xt = torch.as_tensor(X, device=self.device)
        noise_gen = gen if self.device.type == "cpu" else torch.Generator(self.device).manual_seed(cfg.seed)
        dec = _Projected(self.decoder, self.radius)

        def loss_fn(idx: torch.Tensor) -> dict[str, torch.Tensor]:
            x = Xt[idx]
            mu, logvar = self.encoder(x)
            z = mu + torch.exp(0.5 * logvar) * torch.randn(mu.shape, generator=noise_gen, device=self.device)
            terms = {"recon": self._recon(dec(z), x),
                     "kl": 0.5 * (torch.exp(logvar) + mu ** 2 - 1.0 - logvar).sum(1)}
            if cfg.variant == "penalty":
                # half at posterior codes, half at prior draws (where sample() decodes)
                half = len(idx) // 2
                prior = torch.randn(len(idx) - half, d, generator=noise_gen, device=self.device)
                zp = lip.project_to_ball(torch.cat([z.detach()[:half], prior]), self.radius)
                norms = lip.jacobian_spectral_norms(self.decoder, zp)
                terms["penalty"] = cfg.penalty_weight * torch.relu(norms - self.lipschitz_target) ** 2
            return terms

        module = nn.ModuleDict({"encoder": self.encoder, "decoder": self.decoder})
        module.train()
        train_sgd(module, loss_fn, n=n, batch_size=cfg.batch_size, steps=steps, lr=cfg.lr,
                  private=False, ledger=self.ledger, noise_multiplier=0.0, max_grad_norm=1.0,
                  generator=noise_gen, device=self.device, progress=prog, name="lvae")
        module.eval()
        if isinstance(self.decoder, lip.LipschitzMLP):
            self.decoder.finalize()  # exact spectral norms: the deployed decoder is ≤ L-Lipschitz
        self.claim = self._compute_claim()

    # ------------------------------------------------------------------ the claim
    def _scale(self) -> float:
        """s of the certified sampler: the training likelihood's, or the broader one a small target ε
        needs (`certified_scale`)."""
        if self.mechanism_scale is not None:
            return self.mechanism_scale
        return self.config.recon_scale if self.config.likelihood == "gaussian" else 1.0

    def posterior_nll(self, out: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """−log p(x | z) of the certified sampler: the training likelihood tempered by (s_train/s)²
        when a small target ε raised s (Gaussian: N(μ̄, s²I); Bernoulli: ℓ/s²)."""
        train_scale = self.config.recon_scale if self.config.likelihood == "gaussian" else 1.0
        return self._recon(out, x) * (train_scale / self._scale()) ** 2

    def _compute_claim(self) -> dict:
        cfg = self.config
        emp = lip.empirical_lipschitz(self.decoder, cfg.latent_dim, self.radius, seed=cfg.seed,
                                      device=self.device)
        product = lip.layer_product_bound(self.decoder)
        certified = cfg.variant == "spectral"
        eps = (lip.posterior_sampling_epsilon(product, self.radius, self.diameter, self._scale())
               if certified else None)
        claim = {
            "summary": "",
            "certified": certified,
            "epsilon": eps,
            "delta": 0.0 if certified else None,
            "lipschitz_bound": product if certified else None,
            "lipschitz_target": self.lipschitz_target,
            "layer_product_bound": product,
            "empirical_lipschitz": emp["estimate"],
            "empirical": emp,
            "latent_radius": self.radius,
            "latent_tail_mass": self._tail_mass(),
            "data_diameter": self.diameter,
            "likelihood": cfg.likelihood,
            "scale": self._scale(),
            "variant": cfg.variant,
            "mechanism": "exact posterior re-sampling of one record given the fixed decoder "
                         "(replace-one neighbours, features in [0, 1])",
            "not_covered": "everything the workbench releases: decoder/encoder training has no DP, so "
                           "sample() has ε = ∞; re-sampling through the approximate encoder or finite MH",
            "derivation": DERIVATION if certified else
            "not certified: the gradient penalty constrains the Jacobian only at sampled points; "
            "empirical_lipschitz is a lower estimate, layer_product_bound a loose upper bound",
        }
        claim["summary"] = release_statement(claim)
        return claim

    def _tail_mass(self) -> float:
        from scipy.stats import chi2

        return float(chi2.sf(self.radius ** 2, self.config.latent_dim))

    def privacy_claim(self) -> dict:
        """{certified, epsilon (None unless certified), delta, lipschitz_bound, empirical_lipschitz,
        derivation, ...}: the certificate of posterior sampling (module docstring), not an
        accountant ε; the accountant's ε of this model is ∞ (empty ledger)."""
        self._check_fitted()
        if self.claim is None:
            self.claim = self._compute_claim()
        return {**self.claim, "summary": release_statement(self.claim), "label": CLAIM_LABEL}

    @classmethod
    def saved_claim(cls, meta: dict) -> dict | None:
        """The CLI's view of model.json's claim: everything the workbench releases has ε = ∞; the
        certificate's ε is named for what it covers, exact posterior re-sampling only."""
        claim = meta.get("claim")
        if not isinstance(claim, dict):
            return None
        return {"releases_epsilon": math.inf, "certified": claim.get("certified"),
                "certificate_epsilon": claim.get("epsilon"), "certificate_delta": claim.get("delta"),
                "certificate_applies_to": CERTIFICATE_SCOPE, "summary": release_statement(claim)}

    # ------------------------------------------------------------------ networks and I/O
    def decode(self, z: np.ndarray) -> np.ndarray:
        """Decoder means (Gaussian) or probabilities (Bernoulli) at proj_{R_z}(z)."""
        z = np.asarray(z, np.float32)
        if len(z):
            with torch.no_grad():
                z = lip.project_to_ball(torch.as_tensor(z), self.radius).numpy()
        return super().decode(z)

    def latent_decoder(self) -> nn.Module:
        """μ̄ = decoder ∘ projection onto the latent ball: the decoder the certificate is about."""
        return _Projected(self.decoder, self.radius)

    def encode(self, x) -> np.ndarray:
        """Encoder means μ(x) (for latent plots)."""
        self._check_fitted()
        with torch.no_grad():
            return self.encoder(torch.as_tensor(self._rows(x), device=self.device))[0].cpu().numpy()

    def _build_nets(self, width: int, gen: torch.Generator) -> None:
        cfg = self.config
        d = cfg.latent_dim
        mlp = networks.seeded_mlp([width, cfg.hidden, cfg.hidden, 2 * d], gen)
        self.encoder = networks.GaussianEncoder(mlp, d).to(self.device)
        sizes = [d, cfg.hidden, cfg.hidden, width]
        if cfg.variant == "spectral":
            self.decoder = lip.LipschitzMLP(sizes, self.lipschitz_target, gen, cfg.power_iterations)
        else:
            self.decoder = networks.seeded_mlp(sizes, gen)
        self.decoder.to(self.device)

    def _extra_json(self) -> dict:
        return {"lipschitz_target": self.lipschitz_target, "latent_radius": self.radius,
                "data_diameter": self.diameter, "mechanism_scale": self.mechanism_scale, "claim": self.claim}

    def _restore_extra(self, tensors: dict[str, torch.Tensor], meta: dict) -> None:
        self.lipschitz_target = float(meta["lipschitz_target"])
        self.radius = float(meta["latent_radius"])
        self.diameter = float(meta["data_diameter"])
        scale = meta.get("mechanism_scale")
        self.mechanism_scale = float(scale) if isinstance(scale, (int, float)) and scale > 0 else None
        self.claim = meta.get("claim")

    @classmethod
    def load(cls, directory, template: Dataset | None = None):
        self = super().load(directory, template=template)
        self.encoder.eval()
        self.decoder.eval()
        return self
