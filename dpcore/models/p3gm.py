"""P3GM (Takagi et al., ICDE 2021); its variants PGM and P3GM-AE are in p3gm_variants.py.

Why the phases: a VAE trained end to end with DP-SGD spends its whole budget on a hard, noisy
optimisation. P3GM fixes the encoder mean to a DP-PCA projection and the prior to a DP-EM mixture
of Gaussians fitted on those codes, so DP-SGD only learns the encoder variance and the decoder:
  1. DP-PCA to d_p dims            (ledger: Gaussian mechanism on the covariance, and the mean)
     Two departures from the official code, both measured on Fashion-MNIST at ε = 1 (MLP accuracy
     0.689 → 0.754, `bench/p3gm_paper.py`): rows are centred on the noisy mean of the RAW rows and
     then normalised (the official order, normalise then centre, leaves the centred rows a third of
     the sensitivity budget), and images are 2×2 average-pooled before PCA (`pca_pool`: the
     covariance noise grows with √D). Neither costs privacy; both cut the PCA noise's damage.
  2. DP-EM, K-component MoG prior  (ledger: 2K+1 Gaussian mechanisms per iteration)
  3. decoder warm-up on z ~ prior → inverse-PCA(z) for images, raw codes and tables with
     per-column heads  (post-processing of the DP-PCA and DP-EM releases: free)
  4. DP-SGD on the ELBO  E_q[log p(x|z)] − KL(q(z|x) ‖ p_MoG(z)),  q = N(PCA(x), diag σ²_φ(x)),
     KL by a one-sample Monte Carlo estimate log q(z|x) − log p_MoG(z) (no closed form for a MoG).
Sampling: z ~ MoG, x = decoder(z); on tables each column (and the label) is drawn from its own head
(`dpcore.models.heads`), on images the label is the argmax of the decoded label block.
The codes are clipped to the DP-EM radius both when the prior is fitted and when the encoder emits
them (the official code fits on clipped codes but trains on unclipped ones; docs/references.md#p3gm-code-defects, defect 5).
"""
from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from dpcore.data.dataset import Dataset
from dpcore.errors import InvalidParameter, check_int
from dpcore.io import as_float
from dpcore.models import networks
from dpcore.models.label_shares import (
    CALIBRATION_DRAWS,
    level_shares,
    most_confident,
    sample_with_quotas,
    shares_from_mean,
)
from dpcore.models.mixture import clip_codes, diag_gauss_logpdf, mog_logpdf, mog_sample
from dpcore.models.neural import NeuralSynthesizer, _replace
from dpcore.models.p3gm_config import (  # noqa: F401 (re-exported)
    IMAGE_SCHEDULE,
    IMAGE_SCHEDULE_ROWS,
    PCA_DIM,
    P3GMConfig,
)
from dpcore.models.rows import image_pool_matrix, pooled_width, split_output
from dpcore.models.synthesizer import DataFacts, FitRun, Plan
from dpcore.models.training import FitProgress, check_finite, train_sgd
from dpcore.models.warmup import WarmupTargets, warmup_targets
from dpcore.privacy.randomness import NoiseSource


class P3GM(NeuralSynthesizer):
    """P3GM synthesizer (see the module docstring). `P3GM(pca_dim=10).fit(train).sample(100)`."""

    name = "p3gm"
    label = "P3GM"
    description = ("P3GM: DP-PCA encoder + DP-EM mixture prior, then a decoder trained with DP-SGD. "
                   "Spends part of ε on the encoder, the rest on the decoder.")
    config_class = P3GMConfig
    private = True
    sweep_axes = {"epsilon": (0.5, 1.0, 2.0, 4.0), "encoder_share": (0.1, 0.3, 0.5)}
    variational = True
    legacy_defaults = {"pca_pool": 1, "mean_clip_norm": 1.0, "label_shares": "decoder", "tabular_heads": "flat",
                       "category_shares": "decoder", "numeric_atoms": False, "warmup_scale": 1.0,
                       "warmup_residual": False, "warmup_columns": False, "ema_decay": 0.0,
                       "prior_temperature": 1.0, "label_margin_keep": 1.0}
    size_auto_fields = ("batch_size", "epochs", *(k for k in IMAGE_SCHEDULE if k not in ("batch_size", "epochs")))

    def __init__(self, config=None, **overrides):
        super().__init__(config, **overrides)
        self.pca: dict[str, np.ndarray] = {}
        self.code_radius = math.inf
        self.projection: np.ndarray | None = None  # (D, D') pooling before PCA, None = identity
        self.mean_clip = 1.0  # R of DP-PCA's mean release (set by fit; saved with the model)
        self.pca_: object | None = None  # the fitted DPPCA (kept for inspection, not saved)
        self._offsets: dict | None = None  # categorical heads' logit offsets (category_shares), lazily

    # ------------------------------------------------------------------ plan
    @classmethod
    def _resolve(cls, config, facts: DataFacts):
        """pca_dim fits the columns DP-PCA sees (after pca_pool); None = 30 or fewer. On images of
        at least IMAGE_SCHEDULE_ROWS rows the auto (DP-)SGD fields come from IMAGE_SCHEDULE, for PGM
        too (the Story's pair is one pipeline with and without noise); otherwise lr and ema_decay
        take their declared auto values."""
        from dpcore.models.params import config_fields

        big_images = facts.image_shape is not None and facts.n >= IMAGE_SCHEDULE_ROWS
        declared = {p.name: p.auto for p in config_fields(type(config)) if p.name in IMAGE_SCHEDULE}
        autos = {k: v for k, v in declared.items() if k not in ("batch_size", "epochs")}  # those resolve from the size
        fill = {k: (IMAGE_SCHEDULE[k] if big_images else autos.get(k)) for k in IMAGE_SCHEDULE
                if getattr(config, k) is None and (big_images or k in autos)}
        config, adapted, limits = super()._resolve(_replace(config, **fill) if fill else config, facts)
        if big_images:
            adapted.update({k: f"{declared[k]:g} → {v:g}: P3GM's image schedule on {facts.n} "
                               f"{'released ' if facts.released else ''}rows (≥ {IMAGE_SCHEDULE_ROWS})"
                            for k, v in fill.items() if declared.get(k) is not None and declared[k] != v})
        top = pooled_width(facts.n_features, facts.image_shape, config.pca_pool, facts.n_classes)
        limits["pca_dim"] = top
        where = (f"{top} columns left after pca_pool" if top != facts.width
                 else f"{top} model columns ({facts.n_features} features + {facts.n_classes} label classes)")
        if config.pca_dim is None:
            dim = min(PCA_DIM, top)
            if dim != PCA_DIM:
                adapted["pca_dim"] = f"{PCA_DIM} → {dim}: the data has {where}"
            return _replace(config, pca_dim=dim), adapted, limits
        if config.pca_dim > top:
            hint = " (lower pca_dim or set pca_pool=1)" if top != facts.width else ""
            raise InvalidParameter(f"pca_dim ({config.pca_dim}) exceeds the {where}{hint}")
        return config, adapted, limits

    @classmethod
    def _warmup_steps(cls, config, is_image: bool) -> int:
        """Images, raw codes and tables with per-column heads start the decoder on the DP-PCA
        reconstruction (free); a head learns its column's link to the others from there, where
        DP-SGD's noise alone leaves it at the column's marginal on small tables."""
        heads = not is_image and getattr(config, "tabular_heads", "flat") == "per-column"
        return config.warmup_steps if (config.pca_codes == "raw" or is_image or heads) else 0

    @classmethod
    def _preview(cls, config, facts: DataFacts) -> Plan:
        from dpcore.privacy.accountant import calibrate_p3gm, sgd_schedule

        steps = sgd_schedule(facts.n, config.batch_size, config.epochs)[1]
        total = 2 + cls._warmup_steps(config, facts.image_shape is not None) + steps
        if not cls.private:
            return Plan(cls.name, config, total)
        from dpcore.privacy.dataset_size import with_count

        cal = calibrate_p3gm(config.epsilon, config.delta, config.encoder_share, facts.n, config.batch_size,
                             config.epochs, components=config.components, em_iters=config.em_iters,
                             center=config.pca_center, em_fraction=config.em_share,
                             mean_ratio=config.mean_noise_ratio,
                             spent=with_count(facts.spent_ledger())).to_dict()
        noise = {"σ_p  (DP-PCA)": cal["pca_sigma"], "σ_e  (DP-EM)": cal["em_sigma"],
                 "σ_s  (DP-SGD)": cal["sgd_sigma"]}
        notes = [] if cal.get("achieved_share") is None else [
            f"Orange: the encoder (DP-PCA + DP-EM) — {cal['achieved_share']:.0%} of the budget; blue: DP-SGD "
            "on the decoder. Shares are of the Rényi-DP budget at the order where the accountant's ε is attained."]
        return Plan(cls.name, config, total, noise=noise, epsilon=cal["epsilon"], delta=cal["delta"],
                    ledger=cal["ledger"], details=cal, notes=notes)

    # ------------------------------------------------------------------ fit
    def _fit(self, run: FitRun) -> None:
        cfg, train = self.config, run.train
        self._offsets = None
        X = self._matrix(train)
        D = X.shape[1]
        self.projection = image_pool_matrix(train, cfg.pca_pool, D - train.n_features)
        pca_width = D if self.projection is None else self.projection.shape[1]
        self.mean_clip = (float(cfg.mean_clip_norm) if cfg.mean_clip_norm is not None
                          else math.sqrt(pca_width))  # every (pooled) column lies in [0, 1]
        noise = run.noise  # PCA, EM, DP-SGD: secret streams
        gen = networks.torch_generator(cfg.seed)
        n_pub = run.released_n  # ñ (ledgered) for P3GM/P3GM-AE, n for PGM
        from dpcore.privacy.accountant import sgd_schedule

        steps = sgd_schedule(n_pub, cfg.batch_size, cfg.epochs)[1]
        sig = self._calibrate(run.epsilon, run.delta, n_pub, steps)
        warmup = self._warmup_steps(cfg, train.is_image)
        prog = run.start(2 + warmup + steps)

        Z = self._fit_pca(X, sig, noise)
        if prog.event("pca"):
            self._fit_prior(Z, sig, noise.numpy("dp-em"))
            prog.event("em")
        else:  # stopped right after PCA: an uninformed N(0, r²/d · I) prior keeps sample() usable
            self._fit_prior(Z, {**sig, "em_sigma": None}, noise.numpy("dp-em"))
        self._build_nets(D, gen)
        if not prog.stopped and warmup:
            self._warmup(prog, warmup)
        done = self._train(X, gen, sig, prog, noise) if not prog.stopped else 0
        self.calibration["sgd_steps_done"] = done

    def sample(self, n: int, seed: int | None = None) -> Dataset:
        """z ~ the MoG prior, rows = decoder(z); with label_shares='dp-mean' the rows are kept per
        decoded label up to the shares in DP-PCA's noisy mean (dpcore.models.label_shares)."""
        shares = self._label_shares()
        n = check_int("n", n, minimum=0)
        if shares is None or n == 0:  # zero rows: the base keeps the feature width
            return super().sample(n, seed)
        rng = np.random.default_rng(seed)
        X, y = sample_with_quotas(lambda size: self._draw_rows(size, rng), n, shares)
        order = rng.permutation(n)
        return self.template.with_features(X[order], y[order])

    def _draw_rows(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray | None]:
        """As the base, with z ~ the prior at `prior_temperature`; images with labels keep the
        `label_margin_keep` share of draws most confident in their label; each categorical head
        shifted onto its noisy shares (category_shares). All post-processing of the fitted model."""
        cfg = self.config
        keep = cfg.label_margin_keep if self.heads is None and self.n_classes >= 2 else 1.0
        z, _ = mog_sample(math.ceil(n / (keep or 1.0)), self.mog["weights"], self.mog["means"],
                          self.mog["variances"] * np.float32((cfg.prior_temperature or 1.0) ** 2), rng)
        if self.heads is None:
            out = self.decode(z)
            return split_output(out if len(z) == n else out[most_confident(out, self.n_features, n)],
                                self.n_features, self.n_classes)
        rows = self.heads.sample(self._outputs(z, raw=True), rng, self._category_offsets() or None)
        return split_output(rows, self.n_features, self.n_classes)

    def _category_offsets(self) -> dict:
        """{head: logit offsets} keeping each categorical head within its levels' noisy shares ± 2
        std, every level at least at a floor (label_shares.level_shares); once per fitted model."""
        if self._offsets is None:
            cfg = self.config
            self._offsets = {}
            if (self.heads is not None and getattr(cfg, "category_shares", "decoder") == "dp-mean"
                    and cfg.pca_center == "noisy" and self.projection is None):
                noise = self.calibration.get("mean_sigma")
                std = float(noise) * self.mean_clip / self.released_rows if noise and self.released_rows else 0.0
                shares = level_shares(self.heads, self.pca["mean"], std, skip_label=bool(self.n_classes))
                if shares:  # z ~ prior from a public seed: the same model gives the same offsets
                    z, _ = mog_sample(CALIBRATION_DRAWS, self.mog["weights"], self.mog["means"],
                                      self.mog["variances"], np.random.default_rng([cfg.seed, 2]))
                    self._offsets = self.heads.marginal_offsets(self._outputs(z, raw=True), shares)
        return self._offsets

    def _label_shares(self) -> np.ndarray | None:
        self._check_fitted()
        cfg = self.config
        if cfg.label_shares != "dp-mean" or not self.n_classes or cfg.pca_center != "noisy":
            return None
        shares = shares_from_mean(self.pca["mean"][-self.n_classes:])  # pooling keeps the label block last
        noise = self.calibration.get("mean_sigma")
        if shares is None or not noise or not self.released_rows:
            return shares
        # A declared class whose noisy share fell below the noise's own std is not known to be
        # absent: keep it at that std (public: σ, the clip norm and ñ), so no class drops out.
        floor = float(noise) * self.mean_clip / self.released_rows
        shares = np.maximum(shares, min(floor, 1.0 / self.n_classes))
        return shares / shares.sum()

    def encode(self, x) -> np.ndarray:
        """Encoder means: the PCA projection of the rows, clipped exactly as DP-EM clipped them.

        normalized: clip(clip(x, R) − mean, 1) · V (= DPPCA.transform; norm ≤ 1 = code radius);
        raw: clip((x − mean) · V, code_radius).
        """
        self._check_fitted()
        return self._codes(self._rows(x))

    def _codes(self, X: np.ndarray) -> np.ndarray:
        from dpcore.privacy.mechanisms import clip_rows

        V, mean = self.pca["components"], self.pca["mean"]
        if self.projection is not None:
            X = X @ self.projection
        if self.config.pca_codes == "normalized":
            U = clip_rows(X, self.mean_clip) if self.config.pca_center == "noisy" else X
            Z = clip_rows(U - mean, 1.0) @ V
        else:
            Z = (X - mean) @ V
        return clip_rows(Z, self.code_radius).astype(np.float32)

    def encode_logvar(self, x) -> np.ndarray:
        """Encoder log-variances (−inf for P3GM-AE, whose encoder is deterministic)."""
        self._check_fitted()
        X = self._rows(x)
        if self.encoder is None:
            return np.full((X.shape[0], self.config.pca_dim), -np.inf, np.float32)
        with torch.no_grad():
            return self._logvar(torch.as_tensor(X, device=self.device)).cpu().numpy()

    # ------------------------------------------------------------------ phases
    def _calibrate(self, eps: float, delta: float, n: int, steps: int) -> dict:
        if not self.private:
            self.calibration = {"sgd_steps": steps}
            return {}
        from dpcore.privacy.accountant import calibrate_p3gm

        cfg = self.config
        cal = calibrate_p3gm(eps, delta, cfg.encoder_share, n, cfg.batch_size, cfg.epochs,
                             components=cfg.components, em_iters=cfg.em_iters, center=cfg.pca_center,
                             em_fraction=cfg.em_share, mean_ratio=cfg.mean_noise_ratio,
                             spent=self.ledger)  # fit() starts self.ledger with the data ledger
        sig = {"pca_sigma": cal.pca_sigma, "em_sigma": cal.em_sigma, "sgd_sigma": cal.sgd_sigma,
               "mean_sigma": cal.mean_sigma}
        self.calibration = {**sig, "planned_epsilon": cal.epsilon, "sgd_steps": steps}
        return sig

    def _fit_pca(self, X: np.ndarray, sig: dict, noise: NoiseSource) -> np.ndarray:
        """DP-PCA (PGM: the same without noise, nothing recorded); returns the clipped codes."""
        from dpcore.privacy.dp_pca import DPPCA

        cfg = self.config
        pca = DPPCA(pca_dim=cfg.pca_dim, noise_multiplier=sig.get("pca_sigma"), center=cfg.pca_center,
                    public_center=0.5 if cfg.pca_center == "public" else None,
                    mean_noise_multiplier=sig.get("mean_sigma"), mean_clip_norm=self.mean_clip)
        pca.fit(X if self.projection is None else X @ self.projection, self.ledger,
                noise.numpy("dp-pca"), mean_rng=noise.numpy("dp-pca-mean"),
                count=self.released_rows)  # mean and explained variance divide by ñ
        self.pca_ = pca
        self.code_radius = cfg.radius
        self.pca = {"components": np.asarray(pca.components_, np.float32),
                    "mean": np.asarray(pca.mean_, np.float32)}
        self._column_variance = np.asarray(pca.noisy_variance_, np.float64)  # warm-up only, not saved
        return self._codes(X)

    def _fit_prior(self, Z: np.ndarray, sig: dict, rng: np.random.Generator) -> None:
        """DP-EM on the clipped codes (PGM: plain EM, the same code without noise)."""
        from dpcore.privacy.dp_em import DPEM

        cfg = self.config
        if sig.get("em_sigma", 0.0) is None and self.private:  # stopped before DP-EM: N(0, r²/d)
            d = Z.shape[1]
            w, m, v = np.ones(1), np.zeros((1, d)), np.full((1, d), self.code_radius ** 2 / d)
        else:
            em = DPEM(n_components=cfg.components, n_iter=cfg.em_iters,
                      noise_multiplier=sig.get("em_sigma"), code_radius=self.code_radius)
            em.fit(Z, self.ledger, rng)
            w, m, v = em.weights_, em.means_, em.variances_
            if sig.get("em_sigma") is not None:
                # Post-processing: a variance below the noise std of its own release
                # (σ_e·r²/ñ_k, ñ_k = w_k·ñ from released values) is noise, and a near-zero prior
                # variance blows the KL up.
                floor = sig["em_sigma"] * self.code_radius ** 2 / np.maximum(w * self.released_rows, 1.0)
                v = np.maximum(v, floor[:, None])
        self.mog = {"weights": np.asarray(w, np.float32).reshape(-1),
                    "means": np.asarray(m, np.float32).reshape(-1, Z.shape[1]),
                    "variances": np.maximum(np.asarray(v, np.float32).reshape(-1, Z.shape[1]), 1e-8)}

    def _build_nets(self, width: int, gen: torch.Generator) -> None:
        cfg = self.config
        self.decoder = networks.seeded_mlp([cfg.pca_dim, cfg.hidden, self.output_width()], gen).to(self.device)
        self.encoder = (networks.seeded_mlp([width, cfg.hidden, cfg.pca_dim], gen).to(self.device)
                        if self.variational else None)
        if self.encoder is not None and self.mog:
            # Start q(z|x) as wide as the prior per dimension (log of the mean prior variance):
            # uses only the released MoG, and saves DP-SGD steps spent on shrinking σ_φ.
            last = self.encoder[-1]
            with torch.no_grad():
                last.weight.mul_(0.01)
                last.bias.copy_(torch.as_tensor(np.log(self.mog["variances"].mean(0))))

    def _warmup(self, prog: FitProgress, steps: int) -> None:
        """Decoder on z ~ prior → inverse-PCA(z): uses only DP outputs (post-processing, ε-free)."""
        cfg = self.config
        comps = torch.as_tensor(self.pca["components"], device=self.device)
        mean = torch.as_tensor(self.pca["mean"], device=self.device)
        up = (None if self.projection is None else  # pooled column → the columns it averaged
              torch.as_tensor((self.projection > 0).T.astype(np.float32), device=self.device))
        shape = self._warmup_targets()
        opt = torch.optim.Adam(self.decoder.parameters(), lr=cfg.lr)
        rng = np.random.default_rng([cfg.seed, 1])
        for _ in range(steps):
            z, _ = mog_sample(cfg.warmup_batch, self.mog["weights"], self.mog["means"],
                                self.mog["variances"], rng)
            z = torch.as_tensor(clip_codes(z, self.code_radius), device=self.device)
            target = z @ comps.T
            if shape is not None:
                target = shape.deviations(target, rng)
            target = target + mean
            if up is not None:
                target = target @ up
            if cfg.pca_codes == "normalized" and self.heads is None:  # unit-norm rows → pixels peak at 1
                target = target / target.amax(1, keepdim=True).clamp_min(1e-3)
            target = target.clamp(0.0, 1.0)
            if self.heads is not None:
                target = self.heads.soft_targets(target)
            loss = self._recon(self.decoder(z), target).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            value = float(loss.detach())
            check_finite(value, "warmup", prog.step + 1)
            if not prog.event("warmup", {"recon": value, "loss": value}):
                return

    def _warmup_targets(self) -> WarmupTargets | None:
        """Tables with per-column heads: how the warm-up spreads the DP-PCA reconstruction
        (dpcore.models.warmup; released values only). None for images and raw codes."""
        cfg = self.config
        if self.heads is None or cfg.pca_codes != "normalized":
            return None
        targets = warmup_targets(self.heads, self.pca, self.mog, getattr(self, "_column_variance", None),
                                 self.code_radius, cfg, seed=cfg.seed)
        self.calibration.update(targets.summary())
        return targets

    def _logvar(self, x: torch.Tensor) -> torch.Tensor:
        return self.encoder(x).clamp(-12.0, 6.0)

    def _train(self, X: np.ndarray, gen: torch.Generator, sig: dict, prog: FitProgress,
               noise: NoiseSource) -> int:
        cfg = self.config
        Xt = torch.as_tensor(X, device=self.device)
        codes = torch.as_tensor(self.encode(X), device=self.device)
        weights, means, variances = (torch.as_tensor(self.mog[k], device=self.device)
                                     for k in ("weights", "means", "variances"))
        module = nn.ModuleDict({"decoder": self.decoder})
        if self.encoder is not None:
            module["encoder"] = self.encoder
        noise_gen = gen if self.device.type == "cpu" else torch.Generator(self.device).manual_seed(cfg.seed)

        def loss_fn(idx: torch.Tensor) -> dict[str, torch.Tensor]:
            x, mu = Xt[idx], codes[idx]
            if self.encoder is None:  # P3GM-AE: z is the code itself
                return {"recon": self._recon(self.decoder(mu), x)}
            logvar = self._logvar(x)
            e = torch.randn(mu.shape, generator=noise_gen, device=self.device)
            z = mu + torch.exp(0.5 * logvar) * e
            kl = diag_gauss_logpdf(z, mu, logvar) - mog_logpdf(z, weights, means, variances)
            return {"recon": self._recon(self.decoder(z), x), "kl": kl}

        return train_sgd(module, loss_fn, n=X.shape[0], batch_size=cfg.batch_size,
                         steps=self.calibration["sgd_steps"], lr=cfg.lr, private=self.private,
                         ledger=self.ledger, noise_multiplier=sig.get("sgd_sigma", 0.0),
                         max_grad_norm=getattr(cfg, "max_grad_norm", 1.0),
                         generator=noise_gen, device=self.device, progress=prog, noise=noise,
                         released_n=self.released_rows, ema_decay=cfg.ema_decay)

    # ------------------------------------------------------------------ persistence
    def _extra_tensors(self) -> dict[str, np.ndarray]:
        out = {f"pca.{k}": v for k, v in self.pca.items()}
        if self.projection is not None:
            out["pca.projection"] = self.projection
        return out

    def _extra_json(self) -> dict:
        return {"code_radius": self.code_radius, "mean_clip": self.mean_clip}

    def _restore_extra(self, tensors, meta) -> None:
        self._offsets = None
        self.pca = {k: tensors[f"pca.{k}"].numpy() for k in ("components", "mean")}
        self.projection = tensors["pca.projection"].numpy() if "pca.projection" in tensors else None
        self.code_radius = as_float(meta["code_radius"])
        self.mean_clip = as_float(meta.get("mean_clip", 1.0))
