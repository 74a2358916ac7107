"""DP-SGD with Poisson sampling (Abadi et al. 2016, Algorithm 1) as one engine for every model.

Usage, one step::

    idx = dp.poisson_batch()                      # each example included independently w.p. q
    loss = per_example_loss(module, x[idx])       # shape (b,), b may be 0
    info = dp.step(loss)                          # clip, sum, noise, / B, optimizer.step(), ledger

The released update is (Σ_{i∈batch} c_i ∇loss_i + N(0, σ²C² I)) / B with c_i = min(1, C/‖∇loss_i‖)
and B = the *expected* batch size q·n, not the realised one. Why: (1) under Poisson sampling the
realised size |batch| is itself data dependent (it tells whether a given example was drawn), and
the subsampled-Gaussian analysis covers only the noisy sum, whose add/remove sensitivity is C —
dividing by |batch| would release an unaccounted function of it and change the sensitivity;
(2) dividing a sum over a Poisson sample by q·n is an unbiased estimate of the mean gradient.
(With q = B/ñ from the released count, q·n = B·n/ñ: dividing by the public B is off by the factor
n/ñ, a few per cent at most, and keeps the divisor public.)
This is the estimator Opacus uses with Poisson sampling (its `expected_batch_size`).

Per-example norms come from `per_sample_norms` (the book-keeping trick: one forward, one
backward, no per-example gradients for nn.Linear). Parameters used any other way (Conv, norm
layers' affine parameters, a bare nn.Parameter such as a learned log-variance, tied or reused
weights outside Linear) fall back to a correct but slower batched autograd path, with a warning
once; BatchNorm is rejected because it makes examples depend on each other.

The privacy claim is the ledger record: one `subsampled_gaussian` step per call with q = B/ñ
(ñ the run's released noisy count, `released_n`; the rows are still drawn from all n at that rate),
noise multiplier σ and sensitivity C. The diagnostics `step` returns (clip fraction, norms,
batch size, loss) are computed from private data WITHOUT noise: fine for a developer, not for
release; show them to users only as "not private".
"""
from __future__ import annotations

import warnings
from collections import Counter

import torch
from torch import nn

from dpcore.errors import InvalidParameter, check_int, check_positive
from dpcore.privacy.ledger import MechanismRecord, PrivacyLedger
from dpcore.privacy.per_sample_norms import LinearTap, autograd_sq_norms, linear_clipped_sum_, linear_sq_norms
from dpcore.privacy.randomness import NoiseSource, combined_kind

# Opacus's clip factor min(1, C / (‖g‖ + 1e-6)); the same constant keeps results comparable.
_CLIP_EPS = 1e-6
# Noise is drawn in chunks of this many numbers (512 KB of float32: fits a core's L2 cache).
_NOISE_CHUNK = 1 << 17


def clip_factors(sq_norms: torch.Tensor, max_grad_norm: float) -> torch.Tensor:
    """c_i = min(1, C / (‖g_i‖ + 1e-6)) (Abadi et al. 2016, Alg. 1, "clip gradient")."""
    return (max_grad_norm / (sq_norms.sqrt() + _CLIP_EPS)).clamp(max=1.0)


class DPSGD:
    """Differentially private steps for any torch optimiser over `module`'s trainable parameters.

    module: the network the per-example losses come from (its nn.Linear layers are hooked).
    optimizer: any torch.optim.Optimizer; its parameters (requires_grad) are the ones privatised.
    noise_multiplier: σ, noise std over the clipping norm C. max_grad_norm: C.
    n: number of private examples (the Poisson draw runs over range(n)); expected_batch_size: B.
    released_n: the public row count ñ the sampling rate is computed from, q = min(1, B/ñ)
        (dataset_size.noisy_count; under add/remove-one adjacency n itself is private). None
        uses n, i.e. treats n as public: tests and non-private use only.
    ledger: where each step is recorded (None: not recorded, e.g. in a test).
    generator: the noise's source; sampling_generator: the Poisson coins' (None: `generator`).
        None for both: two secret streams (dpcore.privacy.randomness). A seeded generator makes
        every record "seeded" (reproducible from the seed: not private, for debugging only).
    private: False runs the same code path as a plain mean-loss step (non-private VAE / PGM):
        no clipping, no noise, no ledger entry, no hooks.
    """

    def __init__(self, module: nn.Module, optimizer: torch.optim.Optimizer, *,
                 noise_multiplier: float, max_grad_norm: float, n: int,
                 expected_batch_size: int, ledger: PrivacyLedger | None,
                 name: str = "dp-sgd", generator: torch.Generator | None = None,
                 private: bool = True, released_n: int | None = None,
                 sampling_generator: torch.Generator | None = None):
        if not isinstance(module, nn.Module):
            raise InvalidParameter(f"module must be a torch.nn.Module, got {type(module).__name__}")
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise InvalidParameter(
                f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}")
        if isinstance(n, bool):
            raise InvalidParameter(f"n must be a positive integer, got {n!r}")
        self.n = check_int("n", n)
        self.expected_batch_size = check_positive("expected_batch_size", expected_batch_size)
        if released_n is None:
            if self.expected_batch_size > self.n:
                raise InvalidParameter(
                    f"expected_batch_size must be <= n = {self.n}, got {expected_batch_size!r}")
            self.sample_rate = self.expected_batch_size / self.n
        else:
            from dpcore.privacy.dataset_size import sampling_rate

            self.sample_rate = sampling_rate(self.expected_batch_size, released_n)
        self.private = bool(private)
        self.noise_multiplier = (check_positive("noise_multiplier", noise_multiplier)
                                 if self.private else float(noise_multiplier))
        self.max_grad_norm = (check_positive("max_grad_norm", max_grad_norm)
                              if self.private else float(max_grad_norm))
        self.module, self.optimizer, self.ledger, self.name = module, optimizer, ledger, name
        self.params = [p for grp in optimizer.param_groups for p in grp["params"]
                       if p.requires_grad]
        if not self.params:
            raise InvalidParameter("optimizer has no trainable parameters")
        if generator is None:
            src = NoiseSource.secret()
            generator = src.torch("dp-sgd-noise", self.params[0].device)
            if sampling_generator is None:
                sampling_generator = src.torch("dp-sgd-sampling", self.params[0].device)
        self.generator = generator
        self.sampling_generator = generator if sampling_generator is None else sampling_generator
        self.noise = combined_kind(self.generator, self.sampling_generator)
        self._steps = 0
        self._flat: torch.Tensor | None = None   # the noise buffer, made on the first step
        self._views: dict = {}
        self._noise_off = False          # tests only: exact clipped sums; nothing is recorded
        self._warned: set[str] = set()
        self.fallback_params: list[str] = []   # names of parameters on the slow path, last step
        self._tap = None
        if self.private:
            for m in module.modules():
                if isinstance(m, nn.modules.batchnorm._BatchNorm):
                    raise InvalidParameter(
                        f"DP-SGD cannot train {type(m).__name__}: batch statistics mix examples; "
                        "use GroupNorm or LayerNorm")
            self._tap = LinearTap(module, self.params)
        self._names = {id(p): nm for nm, p in module.named_parameters()}

    @property
    def steps_taken(self) -> int:
        return self._steps

    def record(self) -> MechanismRecord:
        """The ledger record one private step adds."""
        return MechanismRecord(self.name, "subsampled_gaussian", self.noise_multiplier,
                               sampling_rate=self.sample_rate, steps=1,
                               sensitivity=self.max_grad_norm, noise=self.noise)

    def poisson_batch(self) -> torch.Tensor:
        """Indices into range(n), each kept independently with probability q (may be empty)."""
        gen = self.sampling_generator
        keep = torch.rand(self.n, generator=gen, device=gen.device) < self.sample_rate
        return keep.nonzero().flatten()

    def clear_activations(self) -> None:
        """Drop Linear inputs captured by grad-enabled forwards that will not be stepped on."""
        if self._tap is not None:
            self._tap.clear()

    def remove_hooks(self) -> None:
        """Detach from the module when training ends (hooks and kept activations). Steps after
        this stay correct but every parameter takes the slow autograd path."""
        if self._tap is not None:
            self._tap.remove()

    # ------------------------------------------------------------------ step
    def step(self, per_example_loss: torch.Tensor | None) -> dict:
        """One update from the batch's per-example losses (shape (b,)); None or b = 0: noise only.

        Forward passes made with grad enabled since the last step keep their Linear inputs until
        this call; run evaluation under torch.no_grad().
        """
        loss = self._check_loss(per_example_loss)
        b = 0 if loss is None else loss.shape[0]
        try:
            info = self._private_step(loss) if self.private else self._plain_step(loss)
        finally:
            if self._tap is not None:
                self._tap.clear()
        self._steps += 1
        info.update(batch_size=b, step=self._steps,
                    loss=float(loss.detach().mean()) if b else float("nan"))
        return info

    def _check_loss(self, loss):
        if loss is None:
            return None
        if not isinstance(loss, torch.Tensor):
            raise InvalidParameter(f"per_example_loss must be a tensor, got {type(loss).__name__}")
        if loss.dim() != 1:
            raise InvalidParameter(
                f"per_example_loss must have shape (batch,), got {tuple(loss.shape)}; "
                "pass one loss per example (reduction='none'), not a mean")
        return loss

    def _plain_step(self, loss) -> dict:
        self.optimizer.zero_grad(set_to_none=True)
        if loss is not None and loss.shape[0] > 0 and loss.requires_grad:
            loss.mean().backward()
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
        return {"private": False, "path": "plain"}

    def _private_step(self, loss) -> dict:
        std = 0.0 if self._noise_off else self.noise_multiplier * self.max_grad_norm
        scale = 1.0 / self.expected_batch_size
        views = self._buffer()
        info = {"private": True, "noise_std": std * scale, "path": "noise-only",
                "mean_clip_factor": float("nan"), "fraction_clipped": float("nan"),
                "mean_grad_norm": float("nan")}
        plan = cs = None
        if loss is not None and loss.shape[0] > 0 and loss.requires_grad:
            plan, cs, diag = self._clip(loss, scale)
            info.update(diag)
        # Each parameter's noise is drawn just before its clipped sum is added to it, so the
        # matmul finds the noise still in cache (drawing it all first, before the backward, left
        # ~7 MB of the DP-VAE's to be read back from memory: ~3 % of its step, bench/dpsgd.py).
        for p in self.params:
            view = views[id(p)]
            self._draw(view, std * scale)
            uses = None if plan is None else plan.fast.get(id(p))
            if uses is not None and cs is not None:
                linear_clipped_sum_(view, uses, uses[0][1], cs, loss.shape[0])
        if plan is not None and plan.fallback:
            grads = torch.autograd.grad(loss, plan.fallback, grad_outputs=cs, allow_unused=True)
            for p, g in zip(plan.fallback, grads):
                if g is not None:
                    views[id(p)].add_(g)
        for p in self.params:
            p.grad = views[id(p)]
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        if self.ledger is not None and not self._noise_off:
            self.ledger.add(self.record())
        return info

    def _buffer(self) -> dict:
        """{id(p): view of p's shape} into one flat buffer made on the first step and overwritten
        every step; the optimiser receives these views as gradients and must copy what it keeps
        (torch's optimisers do; a gradient is cleared after each step)."""
        if self._flat is None:
            p0 = self.params[0]
            self._flat = torch.empty(sum(p.numel() for p in self.params), dtype=p0.dtype,
                                     device=p0.device)
            views, off = {}, 0
            for p in self.params:
                views[id(p)] = self._flat[off:off + p.numel()].view_as(p)
                off += p.numel()
            self._views = views
        return self._views

    def _noise(self, std: float) -> dict:
        """Fresh N(0, std²) in every coordinate of every parameter, as a step draws it (the
        bench times this alone); {id(p): view of p's shape}."""
        views = self._buffer()
        for p in self.params:
            self._draw(views[id(p)], std)
        return views

    def _draw(self, view: torch.Tensor, std: float) -> None:
        """Overwrite `view` (contiguous) with fresh N(0, std²) from the secret generator.

        Why cache-sized chunks: drawing the noise is most of what a DP step costs beyond a plain
        one (torch's mt19937 Box–Muller, ~3 ns a number), and a weight of ~0.8 M floats (the
        DP-VAE's) does not fit a core's L2, so torch's two passes (uniforms, then the transform)
        would each go to memory. The chunks are consecutive draws from the same secret generator,
        so the numbers are i.i.d. N(0, std²) exactly as one `normal_` call would give
        (tests/privacy/test_dpsgd_noise.py).
        """
        flat = view.view(-1)
        if std == 0.0:
            flat.zero_()
            return
        gen = self.generator
        if gen.device != flat.device:
            flat.copy_(torch.empty(flat.numel(), device=gen.device, dtype=flat.dtype)
                       .normal_(0.0, std, generator=gen))
            return
        total = flat.numel()
        for start in range(0, total, _NOISE_CHUNK):
            stop = start + _NOISE_CHUNK
            if total - stop < _NOISE_CHUNK // 4:   # no short tail chunk: fold it into this one
                stop = total
            flat[start:stop].normal_(0.0, std, generator=gen)
            if stop == total:
                break

    def _clip(self, loss: torch.Tensor, scale: float):
        """The backward, every example's gradient norm and clip factor: (plan, c·scale,
        diagnostics). The clipped sums are added per parameter by the caller."""
        b = loss.shape[0]
        assert self._tap is not None  # for the type checker: a private engine always has its tap
        plan = self._tap.plan(loss, self.params)
        fallback = plan.fallback
        if plan.calls:
            gs = torch.autograd.grad(loss, [c.edge for c in plan.calls],
                                     grad_outputs=torch.ones_like(loss),
                                     retain_graph=bool(fallback), allow_unused=True,
                                     materialize_grads=True)
            counts = Counter(g.data_ptr() for g in gs)
            for call, g in zip(plan.calls, gs):
                call.g = g
                # the clipped sum may re-weight g in place: only a dense g no other call shares
                call.g_writable = g.is_contiguous() and counts[g.data_ptr()] == 1
        sq = torch.zeros(b, dtype=loss.dtype, device=loss.device)
        cache: dict = {}
        for p in self.params:
            uses = plan.fast.get(id(p))
            if uses is not None:
                sq += linear_sq_norms(uses, uses[0][1], b, cache)
        if fallback:
            self._warn_fallback(fallback)
            sq += autograd_sq_norms(loss, fallback)
        c = clip_factors(sq, self.max_grad_norm)
        self.fallback_params = [self._names.get(id(p), "<unnamed>") for p in fallback]
        return plan, c * scale, {
            "path": "mixed" if fallback and plan.fast else ("fallback" if fallback else "fast"),
            "mean_clip_factor": float(c.mean()),
            "fraction_clipped": float((c < 1.0).float().mean()),
            "mean_grad_norm": float(sq.sqrt().mean())}

    def _warn_fallback(self, params: list[torch.Tensor]) -> None:
        names = tuple(self._names.get(id(p), "<unnamed>") for p in params)
        key = ",".join(names)
        if key not in self._warned:
            self._warned.add(key)
            warnings.warn(f"DPSGD: parameters {list(names)} are not used only by nn.Linear "
                          "layers; their per-example norms use the slower autograd path",
                          stacklevel=3)
