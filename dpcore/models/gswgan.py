"""GS-WGAN: a gradient-sanitised, class-conditional Wasserstein GAN (Chen, Orekondy & Fritz 2020;
docs/references.md#gs-wgan).

Only the generator is released, so only the gradient that flows from the discriminators into it
is privatised: each generated row's gradient is clipped to C and noised (GradientSanitizer), then
back-propagated through the generator. The ndis discriminators (critics, WGAN-GP, trained without
noise and never saved) each see one disjoint shard of the data. Each generated row is routed to
its own uniformly drawn critic, which is what makes every row a 1/ndis-subsampled Gaussian query
(accounting and proof: dpcore.privacy.gradient_sanitizer). For that proof every critic is updated
at every step, whatever the routes, from its own random stream (critic j: shard j, its stream and
the generator only); shards, routes and the sanitiser's noise are secret (not from `seed`).
σ is calibrated from ε by the accountant; the ε reported is the accountant's ε of the ledger.
No noisy row count is needed (docs/neighbouring-relation.md): the accounted rate 1/ndis and the
query count steps × batch are hyperparameters, and nothing published divides by the private n.

The critics are one batched "ensemble" (weights stacked as (ndis, ...), gathered per step, each
with its own Adam state), so tens to thousands of small MLP critics cost a few batched matmuls.
Presets: `GSWGANConfig()` is the CPU configuration (minutes on digits); `GSWGANConfig.paper()`
has the paper's scale (1000 critics, 20k steps, batch 32, 5 critic steps) and needs a GPU
(device="auto"). Both use MLPs, not the paper's DCGAN. For a fixed ε the noise σ grows roughly
like q·sqrt(T·B) (q = 1/ndis), so the signal-to-noise ratio of the whole run scales with ndis, not
with T or B: a small data set (digits: 1.6k rows, at most ~50 useful shards) learns without noise
but not at ε = 10 on a CPU budget (bench/baselines.py has the measured numbers).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from dpcore.data.dataset import Dataset
from dpcore.errors import DataError, InvalidParameter, check_int
from dpcore.models import networks
from dpcore.models.params import (
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
from dpcore.models.protocol import PrivacyBudget
from dpcore.models.rows import image_pool_matrix
from dpcore.models.synthesizer import BaseSynthesizer, DataFacts, FitRun, Plan
from dpcore.models.training import check_finite
from dpcore.privacy.gradient_sanitizer import GradientSanitizer, ledger_record, noise_for_epsilon
from dpcore.privacy.randomness import combined_kind


def _adam_beta(default: float, help: str):
    return hparam(default, help, low=0, high=1, high_open=True)


@dataclass(frozen=True)
class GSWGANConfig(ModelConfig):
    """GS-WGAN hyperparameters; the defaults are the CPU configuration."""

    epsilon: float = epsilon_field(10.0, "total privacy budget ε (RDP accountant); σ is calibrated to it; "
                                         "inf = no noise", finite=False)
    delta: float = delta_field()
    steps: int = count(1000, "generator steps T", group="main")
    batch_size: int = count(32, "generated rows per generator step (sanitised queries per step)")
    n_discriminators: int = count(50, "critics ndis, one per disjoint data shard (sampling rate 1/ndis; "
                                      "more critics: less noise for the same ε, but fewer rows each)")
    critic_steps: int = count(3, "updates of each queried critic before each generator step")
    critic_batch: int = count(16, "real rows (and fakes) per critic update")
    warmup_steps: int = count(100, "non-private pre-training updates of every critic", low=0)
    clip: float = positive(1.0, "clipping norm C of each generated row's gradient")
    gp_weight: float = positive(10.0, "WGAN-GP gradient-penalty weight λ")
    pool: int | None = count(None, "images: the generator draws at 1/k resolution and the critics judge it "
                                   "there, so the sanitised per-row gradient has D/k² entries and its noise k× "
                                   "less norm; released rows are upsampled by pixel copies. None = 2 for images "
                                   "of side ≥ 16; 1 = full resolution (the paper's setting)")
    latent_dim: int = count(32, "generator input noise dimension", group="main", typical=(1, 100))
    gen_hidden: int = count(256, "hidden units of the generator MLP (two layers)")
    critic_hidden: int = count(64, "hidden units of each critic MLP (two layers)")
    lr_g: float = positive(5e-4, "generator Adam learning rate")
    lr_d: float = positive(5e-4, "critic Adam learning rate")
    beta1: float = _adam_beta(0.5, "Adam β1 (generator and critics)")
    beta2: float = _adam_beta(0.9, "Adam β2 (generator and critics)")
    reproducible_noise: bool = hparam(False, REPRODUCIBLE_NOISE_HELP)
    seed: int = seed_field()
    device: str = device_field()

    @classmethod
    def paper(cls, **overrides) -> GSWGANConfig:
        """The paper's scale (needs a GPU: about 1000 × the CPU configuration's critic work)."""
        values = dict(steps=20_000, batch_size=32, n_discriminators=1000, critic_steps=5,
                      critic_batch=32, warmup_steps=2000, latent_dim=32, gen_hidden=512,
                      critic_hidden=256, lr_g=1e-4, lr_d=1e-4, device="auto")
        values.update(overrides)
        return cls(**values)


PRESETS = {"cpu": GSWGANConfig, "paper": GSWGANConfig.paper}


class _Generator(nn.Module):
    """(z, one-hot y) → MLP → sigmoid: rows in [0, 1] like every Dataset's features."""

    def __init__(self, latent: int, n_classes: int, hidden: int, width: int, gen: torch.Generator):
        super().__init__()
        self.n_classes = n_classes
        self.mlp = networks.seeded_mlp([latent + n_classes, hidden, hidden, width], gen)

    def forward(self, z: torch.Tensor, y: torch.Tensor | None) -> torch.Tensor:
        if self.n_classes:
            z = torch.cat([z, nn.functional.one_hot(y, self.n_classes).to(z.dtype)], dim=1)
        return torch.sigmoid(self.mlp(z))


class CriticEnsemble:
    """ndis MLP critics (in → h → h → 1, LeakyReLU 0.2) stacked in tensors, with per-critic Adam.

    `forward(params, x)` evaluates critic m on x[m] (x: (m, n, in)); `gather(ids)` returns the
    weights of critics `ids` as fresh leaves, `adam_step(ids, grads)` updates only those critics
    (critics that are not queried keep their weights and moments untouched).
    """

    KEYS = ("w1", "b1", "w2", "b2", "w3", "b3")

    def __init__(self, count: int, width: int, hidden: int, gen: torch.Generator,
                 device: torch.device, lr: float, betas: tuple[float, float]):
        def unif(shape, fan_in):
            b = 1.0 / math.sqrt(fan_in)
            return (torch.rand(shape, generator=gen) * 2 * b - b).to(device)

        self.p = {"w1": unif((count, width, hidden), width), "b1": unif((count, hidden), width),
                  "w2": unif((count, hidden, hidden), hidden), "b2": unif((count, hidden), hidden),
                  "w3": unif((count, hidden, 1), hidden), "b3": unif((count, 1), hidden)}
        self.m = {k: torch.zeros_like(v) for k, v in self.p.items()}
        self.v = {k: torch.zeros_like(v) for k, v in self.p.items()}
        self.t = torch.zeros(count, device=device)
        self.lr, self.betas = lr, betas

    def gather(self, ids: torch.Tensor, grad: bool = True) -> dict[str, torch.Tensor]:
        return {k: v[ids].detach().requires_grad_(grad) for k, v in self.p.items()}

    @staticmethod
    def forward(p: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        act = nn.functional.leaky_relu
        h = act(torch.baddbmm(p["b1"][:, None, :], x, p["w1"]), 0.2)
        h = act(torch.baddbmm(p["b2"][:, None, :], h, p["w2"]), 0.2)
        return torch.baddbmm(p["b3"][:, None, :], h, p["w3"])[..., 0]

    @torch.no_grad()
    def adam_step(self, ids: torch.Tensor, grads: dict[str, torch.Tensor]) -> None:
        b1, b2 = self.betas
        self.t[ids] += 1
        t = self.t[ids]
        for k, g in grads.items():
            shape = (-1,) + (1,) * (g.dim() - 1)
            m = self.m[k][ids].mul_(b1).add_(g, alpha=1 - b1)
            v = self.v[k][ids].mul_(b2).addcmul_(g, g, value=1 - b2)
            self.m[k][ids], self.v[k][ids] = m, v
            mhat = m / (1 - b1 ** t).view(shape)
            vhat = v / (1 - b2 ** t).view(shape)
            self.p[k][ids] -= self.lr * mhat / (vhat.sqrt() + 1e-8)


def generator_backward(generator: _Generator, critics: CriticEnsemble, route: torch.Tensor,
                       z: torch.Tensor, y: torch.Tensor | None,
                       sanitizer: GradientSanitizer) -> tuple[torch.Tensor, torch.Tensor]:
    """One generator gradient: row i of G(z, y) is scored by critic route[i] alone (loss −D(x)),
    its gradient w.r.t. the row is sanitised, and only that tensor (times 1/B, the mean) flows
    into the generator's .grad. The critics' weights are detached copies: they get no gradient.
    Returns (per-row losses, sanitised gradient)."""
    p = critics.gather(route, grad=False)
    k = generator.n_classes

    def loss(x: torch.Tensor) -> torch.Tensor:
        if k:
            x = torch.cat([x, nn.functional.one_hot(y, k).to(x.dtype)], -1)
        return -critics.forward(p, x[:, None, :])[:, 0]

    return sanitizer.backward(generator(z, y), loss, scale=1.0 / len(z))


class GSWGAN(BaseSynthesizer):
    """Gradient-sanitised WGAN-GP; `privacy_ledger()` holds one record per sanitised query."""

    name = "gs-wgan"
    label = "GS-WGAN"
    description = "GS-WGAN: a Wasserstein GAN whose generator gets DP gradients through the critics."
    config_class = GSWGANConfig
    private = True
    counts_rows = False  # rate 1/ndis and the query count are hyperparameters: nothing divides by n
    legacy_defaults = {"pool": 1}  # saved before `pool` existed: full resolution

    def __init__(self, config: GSWGANConfig | None = None, **overrides):
        super().__init__(config, **overrides)
        self.generator: _Generator | None = None
        self.upsample: np.ndarray | None = None  # (D', D) pixel copies after a pooled generator

    # ------------------------------------------------------------------ plan
    @classmethod
    def _resolve(cls, config, facts: DataFacts):
        from dpcore.limits import check_steps

        if facts.n < 2 * config.n_discriminators:
            raise InvalidParameter(f"n_discriminators ({config.n_discriminators}) must be at most half "
                                   f"the rows ({facts.n})")
        check_steps(config.warmup_steps + config.steps, 1, 1)
        return config, {}, {"n_discriminators": facts.n // 2}

    @classmethod
    def _preview(cls, config, facts: DataFacts) -> Plan:
        total = config.warmup_steps + config.steps
        if not math.isfinite(config.epsilon):
            return Plan(cls.name, config, total)
        from dpcore.privacy.accountant import epsilon

        queries = config.steps * config.batch_size
        spent = facts.spent_ledger()
        sigma = noise_for_epsilon(config.epsilon, config.delta, config.n_discriminators, queries, spent=spent)
        ledger = spent
        ledger.add(ledger_record(sigma, config.n_discriminators, queries, config.clip))
        return Plan(cls.name, config, total, noise={"σ  (sanitiser)": sigma},
                    epsilon=float(epsilon(ledger, config.delta)), delta=config.delta,
                    ledger=ledger.to_list(), details={"queries": queries})

    # ------------------------------------------------------------------ training
    def _budget(self, budget: PrivacyBudget | None) -> tuple[float, float]:
        """(ε, δ) of the budget or the config; ε = inf trains without noise."""
        if budget is not None:
            return budget.epsilon, budget.delta
        return self.config.epsilon, self.config.delta

    def _fit(self, run: FitRun) -> None:
        cfg, dev, train = self.config, self.device, run.train
        eps, delta, private = run.epsilon, run.delta, run.private
        X = np.asarray(train.features, np.float32)
        if X.size and not np.isfinite(X).all():
            raise DataError(f"dataset {train.name!r} has non-finite feature values")
        pool = image_pool_matrix(train, cfg.pool)
        self.upsample = None if pool is None else (pool > 0).T.astype(np.float32)
        if pool is not None:
            X = X @ pool  # critics judge (and the generator draws) k×k block means
        n, D = X.shape
        ndis = cfg.n_discriminators
        K = self.n_classes
        queries = cfg.steps * cfg.batch_size
        sigma = noise_for_epsilon(eps, delta, ndis, queries, spent=self.ledger) if private else 0.0
        self.calibration = {"noise_multiplier": sigma, "queries": queries, "sampling_rate": 1.0 / ndis,
                            "accounting": "per-row routing; record noise multiplier σ/2 (sensitivity 2C)"}
        gen = networks.torch_generator(cfg.seed)  # public: initialisation and the generator's own inputs
        noise = run.noise  # shards, routes, critics, sanitiser: secret
        shard_rng, routes = noise.numpy("gswgan-shards"), noise.torch("gswgan-routes", dev)
        streams = noise.numpy_streams("gswgan-critics", ndis)  # critic j draws from streams[j] only
        # Each record draws its shard independently (like Poisson sampling): adding, removing or
        # replacing one record changes one shard only. An empty shard's critic sees no real rows.
        owner = shard_rng.integers(ndis, size=n)
        order = np.argsort(owner, kind="stable")
        counts_np = np.bincount(owner, minlength=ndis)
        shards = torch.zeros(ndis, max(1, int(counts_np.max())), dtype=torch.int64)
        start = np.concatenate([[0], np.cumsum(counts_np)[:-1]])
        for j in np.flatnonzero(counts_np):
            shards[j, :counts_np[j]] = torch.as_tensor(order[start[j]:start[j] + counts_np[j]])
        shards, counts = shards.to(dev), torch.as_tensor(counts_np, device=dev)
        Xt = torch.as_tensor(X, device=dev)
        Yt = torch.as_tensor(train.labels, device=dev) if K else None
        self.generator = _Generator(cfg.latent_dim, K, cfg.gen_hidden, D, gen).to(dev)
        critics = CriticEnsemble(ndis, D + K, cfg.critic_hidden, gen, dev, cfg.lr_d, (cfg.beta1, cfg.beta2))
        opt = torch.optim.Adam(self.generator.parameters(), lr=cfg.lr_g, betas=(cfg.beta1, cfg.beta2))
        public = gen if dev.type == "cpu" else torch.Generator(dev).manual_seed(cfg.seed)
        sanitizer = GradientSanitizer(cfg.clip, sigma, noise.torch("gswgan-sanitizer", dev))
        kind = combined_kind(shard_rng, routes, sanitizer.generator)
        prog = run.start(cfg.warmup_steps + cfg.steps)

        def with_labels(x, y):
            return torch.cat([x, nn.functional.one_hot(y, K).to(x.dtype)], -1) if K else x

        def critic_draws(ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            """Each critic's own draws (row picks, fake labels, GP mix; fake inputs z), a fixed
            amount per update from its own stream: critic j never depends on another's coins."""
            b, L = cfg.critic_batch, cfg.latent_dim
            u, z = np.empty((len(ids), b, 3)), np.empty((len(ids), b, L), np.float32)
            for i, j in enumerate(ids.tolist()):
                u[i] = streams[j].random((b, 3))
                z[i] = streams[j].standard_normal((b, L), dtype=np.float32)
            return torch.as_tensor(u, device=dev), torch.as_tensor(z, device=dev)

        def critic_update(ids: torch.Tensor) -> dict[str, float]:
            m, b = len(ids), cfg.critic_batch
            u, z = critic_draws(ids)
            last = (counts[ids] - 1).clamp_min(0)[:, None]
            pick = (u[..., 0] * counts[ids][:, None]).long().minimum(last)
            rows = shards[ids[:, None], pick]
            has_real = (counts[ids] > 0).to(Xt.dtype)
            xr = Xt[rows] * has_real[:, None, None]  # an empty shard never borrows another's rows
            y = None
            if K:
                y = torch.where(has_real.bool()[:, None], Yt[rows], (u[..., 1] * K).long().clamp_max(K - 1))
            with torch.no_grad():
                xf = self.generator(z.view(m * b, -1), None if y is None else y.reshape(-1)).view(m, b, D)
            mix = u[..., 2:].to(Xt.dtype)
            xi = (mix * xr + (1 - mix) * xf).requires_grad_(True)
            p = critics.gather(ids)
            dr = critics.forward(p, with_labels(xr, y))
            df = critics.forward(p, with_labels(xf, y))
            di = critics.forward(p, with_labels(xi, y))
            (gi,) = torch.autograd.grad(di.sum(), xi, create_graph=True)
            gp = ((gi.norm(dim=2) - 1.0) ** 2).mean(1)
            w = dr.mean(1) * has_real - df.mean(1)
            loss = (-w + cfg.gp_weight * gp).sum()  # each critic's own loss
            grads = torch.autograd.grad(loss, list(p.values()))
            critics.adam_step(ids, dict(zip(p.keys(), grads)))
            return {"wasserstein": float(w.detach().mean()), "gp": float(gp.detach().mean())}

        chunk = max(1, min(ndis, 4096 // cfg.critic_batch))
        blocks = [torch.arange(i, min(ndis, i + chunk), device=dev) for i in range(0, ndis, chunk)]

        def update_all() -> dict[str, float]:
            """One update of EVERY critic: the schedule is public and ignores the routes."""
            stats: dict[str, float] = {}
            for ids in blocks:
                stats = critic_update(ids)
            return stats

        for _ in range(cfg.warmup_steps):  # non-private critic pre-training (critics are never released)
            if not prog.event("warmup", update_all()):
                break
        step = 0
        while not prog.stopped and step < cfg.steps:
            B = cfg.batch_size
            stats = {}
            for _ in range(cfg.critic_steps):
                stats = update_all()
            route = torch.randint(ndis, (B,), generator=routes, device=dev)  # one critic per row
            z = torch.randn(B, cfg.latent_dim, generator=public, device=dev)
            yg = torch.randint(K, (B,), generator=public, device=dev) if K else None
            opt.zero_grad(set_to_none=True)
            losses, _ = generator_backward(self.generator, critics, route, z, yg, sanitizer)
            opt.step()
            if private:
                self.ledger.add(ledger_record(sigma, ndis, B, cfg.clip, noise=kind))
            step += 1
            stats["generator"] = float(losses.mean())
            check_finite(stats["generator"], "gan", step)
            # no epoch: step·B/n would log the exact n, and GS-WGAN releases no noisy count ñ
            prog.event("gan", stats)
        self.calibration["steps_done"] = step
        self.generator.eval()

    # ------------------------------------------------------------------ protocol
    def sample(self, n: int, seed: int | None = None) -> Dataset:
        """n rows G(z, y), z ~ N(0, I), labels uniform over the public label names."""
        self._check_fitted()
        n = check_int("n", n, minimum=0)
        rng = np.random.default_rng(seed)
        z = rng.standard_normal((n, self.config.latent_dim)).astype(np.float32)
        y = rng.integers(self.n_classes, size=n) if self.n_classes else None
        outs = []
        with torch.no_grad():
            for i in range(0, n, 4096):
                zt = torch.as_tensor(z[i:i + 4096], device=self.device)
                yt = None if y is None else torch.as_tensor(y[i:i + 4096], device=self.device)
                outs.append(self.generator(zt, yt).cpu().numpy())
        feats = np.concatenate(outs) if outs else np.zeros((0, self._gen_width()), np.float32)
        if self.upsample is not None:
            feats = feats @ self.upsample
        return self.template.with_features(feats, None if y is None else y.astype(np.int64))

    def _is_fitted(self) -> bool:
        return self.generator is not None

    # ------------------------------------------------------------------ persistence
    def _state_tensors(self) -> dict:
        """The generator only: the critics saw raw data and are never saved."""
        return {f"generator.{k}": v for k, v in self.generator.state_dict().items()}

    def _restore(self, tensors, meta) -> None:
        cfg = self.config
        pool = image_pool_matrix(self.template, cfg.pool)
        self.upsample = None if pool is None else (pool > 0).T.astype(np.float32)
        self.generator = _Generator(cfg.latent_dim, self.n_classes, cfg.gen_hidden, self._gen_width(),
                                    networks.torch_generator(0)).to(self.device)
        self.generator.load_state_dict({k[len("generator."):]: v for k, v in tensors.items()})
        self.generator.eval()

    def _gen_width(self) -> int:
        return self.n_features if self.upsample is None else self.upsample.shape[0]
