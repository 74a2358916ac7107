"""What AIM and MST share: a zCDP budget from the run's (ε, δ), ledgered Gaussian marginal
measurements and exponential-mechanism selections, estimation with `mbi`, sampling, save/load.

Why one base: AIM and MST differ only in which marginals they select; how a marginal is measured
(Gaussian noise σ on a count vector: L2 sensitivity 1 under add/remove, a "gaussian" record with
noise multiplier σ), how a selection is paid for (an "exponential" record with its ε₀), how the
graphical model is estimated (mbi's mirror descent) and how rows come back in the original schema
must be the same. The budget: ρ = calibrate_rho(ε, δ, spent) after the noisy row count ñ, so the
accountant's ε of the final ledger is the target. Noise and selection draws come from the run's
secret NoiseSource; the public seed only drives sampling from the fitted model.

mbi 2.0.0's `synthetic_data` shuffles rows within each parent group before the conditional draw
(the fix of the spurious-correlation bug of the mbi 1.1 line, private-pgm PR #145);
`tests/models/test_marginal.py` checks that two independent columns stay independent.
"""
from __future__ import annotations

import dataclasses
import math
import time
import warnings

import numpy as np

from dpcore.data.dataset import Dataset
from dpcore.errors import InvalidParameter, RunError, check_int
from dpcore.models import _common as C
from dpcore.models.base import FitResult, PrivacyBudget, TrainingEvent, emit
from dpcore.models.marginal_data import Discretizer
from dpcore.privacy.ledger import MechanismRecord, PrivacyLedger, exponential_record
from dpcore.privacy.randomness import NoiseSource


def _mbi():
    """mbi (and JAX in float64: mirror descent stalls in float32 on counts in the thousands)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import mbi
    return mbi


class _Stopped(Exception):
    pass


class MarginalSynthesizer:
    """Base: subclasses set name/label/config_class and implement `_select_and_measure(ctx)`."""

    name = "marginal"
    label = "marginal"
    config_class: type = object
    private = True

    def __init__(self, config=None, **overrides):
        cfg = config if config is not None else self.config_class()
        if not isinstance(cfg, self.config_class):
            raise InvalidParameter(f"{self.name} needs a {self.config_class.__name__}, got {type(cfg).__name__}")
        self.config = dataclasses.replace(cfg, **overrides) if overrides else cfg
        self.ledger = PrivacyLedger()
        self.template: Dataset | None = None
        self.fit_result: FitResult | None = None
        self.calibration: dict = {}
        self.released_rows: int | None = None
        self.disc: Discretizer | None = None
        self.model = None  # mbi MarkovRandomField
        self.n_features = self.n_classes = 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config!r})"

    # ------------------------------------------------------------------ fit
    def fit(self, train: Dataset, budget: PrivacyBudget | None = None, callback=None) -> FitResult:
        t0 = time.perf_counter()
        cfg = self.config
        b = budget or PrivacyBudget(cfg.epsilon, cfg.delta)
        if not b.is_private:
            raise InvalidParameter(f"{self.name} is private: epsilon must be finite")
        disc = Discretizer.for_dataset(train, cfg.bins, self.name)  # checks before any work
        if train.n < 1:
            raise InvalidParameter(f"{self.name} needs at least one training row")
        mbi = _mbi()
        from dpcore.privacy.accountants.zcdp import calibrate_rho
        from dpcore.privacy.dataset_size import noisy_count
        from dpcore.models._training import EpsilonMeter

        self.template, self.disc = C.empty_template(train), disc
        self.n_features, self.n_classes = train.n_features, train.n_classes
        self.ledger = C.data_ledger(train)
        noise = NoiseSource.for_config(cfg, True)
        self.released_rows = noisy_count(train.n, noise.numpy("dataset-size"), ledger=self.ledger)
        rho = calibrate_rho(b.epsilon, b.delta, spent=self.ledger)
        domain = mbi.Domain(disc.names, disc.shape)
        ctx = _Context(self, mbi, domain, mbi.Dataset(disc.encode(train), domain), rho, noise,
                       EpsilonMeter(self.ledger, b.delta, True), callback, t0)
        self.calibration = {"rho": rho, "bins": cfg.bins, "attributes": len(disc.attrs)}
        stopped = False
        try:
            self._select_and_measure(ctx)
        except _Stopped:
            stopped = True
        # the final estimate uses every measurement made (all of them when stopped early)
        self.model = ctx.estimate(cfg.iters if ctx.measurements else 1, warm=ctx.model)
        if not stopped:  # the last event closes the bar: planned rounds AIM did not need are dropped
            ctx.total_steps = ctx.step + 1
            try:
                ctx.event("estimate")
            except _Stopped:
                stopped = True
        self.calibration.update(ctx.summary())
        self.fit_result = FitResult(epsilon=ctx.meter(), delta=b.delta, steps=ctx.step, stopped=stopped,
                                    seconds=time.perf_counter() - t0)
        return self.fit_result

    def _select_and_measure(self, ctx: "_Context") -> None:
        raise NotImplementedError

    # ------------------------------------------------------------------ protocol
    def sample(self, n: int, seed: int | None = None) -> Dataset:
        """Rows drawn from the graphical model (mbi's randomised rounding), decoded to the schema."""
        self._check_fitted()
        n = check_int("n", n, minimum=0)
        rng = np.random.default_rng(seed)
        if n == 0:
            codes = {a: np.zeros(0, np.int64) for a in self.disc.names}
        else:
            codes = _draw(self.model, n, int(rng.integers(2 ** 32)))
        feats, labels = self.disc.decode(codes, n, rng, self.config.numeric_decode)
        return self.template.with_features(feats, labels)

    def privacy_ledger(self) -> PrivacyLedger:
        return self.ledger

    def _check_fitted(self) -> None:
        if self.model is None:
            raise RunError(f"{self.name} is not fitted yet: call fit() first")

    # ------------------------------------------------------------------ persistence
    def save(self, directory) -> None:
        """weights.safetensors (the model's log-potentials per clique) + model.json."""
        import torch
        from pathlib import Path

        self._check_fitted()
        d = Path(directory)
        cliques = [list(cl) for cl in self.model.cliques]
        tensors = {f"potential.{i}": torch.as_tensor(np.array(self.model.potentials.tables[tuple(cl)].values))
                   for i, cl in enumerate(cliques)}
        C.save_tensors(d / "weights.safetensors", tensors)
        C.atomic_write_json(d / "model.json", {
            "model": self.name, "config": C.config_to_dict(self.config),
            "n_features": self.n_features, "n_classes": self.n_classes, "width": self.n_features,
            "template": C.template_to_json(self.template), "ledger": self.ledger.to_list(),
            "calibration": self.calibration, "released_rows": self.released_rows,
            "fit_result": None if self.fit_result is None else dataclasses.asdict(self.fit_result),
            "attributes": self.disc.to_list(), "cliques": cliques, "total": float(self.model.total),
        })

    @classmethod
    def load(cls, directory, template: Dataset | None = None):
        from pathlib import Path

        d = Path(directory)
        meta = C.read_model_meta(d, cls.name)
        where = str(d / "model.json")
        self = cls(C.config_from_dict(cls.config_class, meta["config"]))
        self.n_features, self.n_classes = meta["n_features"], meta["n_classes"]
        self.disc = Discretizer.from_list(meta.get("attributes"), self.n_features, where)
        cliques, total = meta.get("cliques"), meta.get("total")
        names = set(self.disc.names)
        if (not isinstance(cliques, list) or not all(isinstance(c, list) and c and set(c) <= names for c in cliques)
                or not isinstance(total, (int, float)) or not math.isfinite(total) or total <= 0):
            raise RunError(f"{where}: 'cliques' must list attributes and 'total' be a positive number")
        t = C.load_tensors(d / "weights.safetensors")
        mbi = _mbi()
        import jax.numpy as jnp

        domain = mbi.Domain(self.disc.names, self.disc.shape)
        tables = {}
        for i, cl in enumerate(cliques):
            arr = t.get(f"potential.{i}")
            sub = domain.project(tuple(cl))
            if arr is None or tuple(arr.shape) != tuple(sub.shape):
                raise RunError(f"{where}: potential {i} is missing or has the wrong shape")
            tables[tuple(cl)] = mbi.Factor(sub, jnp.asarray(arr.numpy(), dtype=jnp.float64))
        pot = mbi.CliqueVector(domain, [tuple(c) for c in cliques], tables)
        marg = mbi.marginal_oracles.message_passing_stable(pot, float(total))
        self.model = mbi.MarkovRandomField(potentials=pot, marginals=marg, total=float(total))
        self.ledger = PrivacyLedger.from_list(meta["ledger"])
        self.calibration = meta.get("calibration") or {}
        self.released_rows = meta.get("released_rows")
        if meta.get("fit_result"):
            self.fit_result = FitResult(**{k: C.as_float(v) if k in ("epsilon", "delta") else v
                                           for k, v in meta["fit_result"].items()})
        self.template = template if template is not None else C.template_from_json(meta["template"])
        return self


def _draw(model, n: int, seed: int) -> dict[str, np.ndarray]:
    """mbi's sampler draws from numpy's global generator: seed it for this call, then restore it."""
    state = np.random.get_state()
    try:
        np.random.seed(seed)
        data = model.synthetic_data(rows=n, method="round")
    finally:
        np.random.set_state(state)
    return {a: np.asarray(v, np.int64) for a, v in data.to_dict().items()}


class _Context:
    """One fit's state: the discrete data, the budget, measurements, ledger writes and events."""

    def __init__(self, owner: MarginalSynthesizer, mbi, domain, data, rho: float, noise: NoiseSource,
                 meter, callback, t0: float):
        self.owner, self.mbi, self.domain, self.data, self.rho = owner, mbi, domain, data, rho
        self.meter, self.callback, self.t0 = meter, callback, t0
        self.measure_rng = noise.numpy(f"{owner.name} measurements")
        self.select_rng = noise.numpy(f"{owner.name} selections")
        self.kind = noise.kind
        self.measurements: list = []
        self.rho_used = 0.0
        self.step = 0
        self.total_steps = 1
        self.selected: list[tuple] = []
        self.model = None  # the latest intermediate estimate (AIM's warm start)
        self._true: dict[tuple, np.ndarray] = {}

    @property
    def total(self) -> float:
        return float(self.owner.released_rows)

    def true_marginal(self, clique: tuple) -> np.ndarray:
        if clique not in self._true:
            shape = [self.domain[a] for a in clique]
            idx = np.ravel_multi_index(tuple(self.data.data[a] for a in clique), shape)
            self._true[clique] = np.bincount(idx, minlength=int(np.prod(shape))).astype(np.float64)
        return self._true[clique]

    def measure(self, cliques: list[tuple], sigma: float, record: str) -> None:
        """Gaussian mechanism on each clique's count vector (L2 sensitivity 1), one record each."""
        for cl in cliques:
            x = self.true_marginal(cl)
            y = x + sigma * self.measure_rng.standard_normal(x.shape)
            self.owner.ledger.add(MechanismRecord(record, "gaussian", float(sigma), sensitivity=1.0,
                                                  noise=self.kind))
            self.rho_used += 1.0 / (2.0 * sigma * sigma)
            self.measurements.append(self.mbi.LinearMeasurement(y, cl, stddev=float(sigma)))
        self.event("measure", {"marginals": float(len(self.measurements))})

    def select(self, scores: np.ndarray, epsilon0: float, sensitivity: float, record: str) -> int:
        """Exponential mechanism: index i with probability ∝ exp(ε₀·score_i / (2Δ)); one record."""
        s = np.asarray(scores, np.float64)
        logits = epsilon0 * (s - s.max()) / (2.0 * sensitivity)
        i = int(np.argmax(logits + self.select_rng.gumbel(size=s.shape)))  # Gumbel-max = softmax draw
        self.owner.ledger.add(exponential_record(record, epsilon0, noise=self.kind))
        self.rho_used += epsilon0 ** 2 / 8.0
        return i

    def estimate(self, iters: int, warm=None):
        """mbi mirror descent on every measurement so far; known total = ñ (released)."""
        est = self.mbi.estimation.MirrorDescent()
        if not self.measurements:
            return est.estimate(self.domain, [], known_total=self.total, iters=1)
        return est.estimate(self.domain, list(self.measurements), known_total=self.total,
                            iters=max(1, int(iters)), warm_start=warm)

    def model_marginals(self, model, cliques: list[tuple], rows: int) -> dict[tuple, np.ndarray]:
        """Marginals of `model` on many cliques from `rows` drawn rows, scaled to the model's total.

        Why draws and not exact inference: mbi compiles one program per query shape (10+ s for a
        few hundred pairs on a CPU); a draw costs ~1 s. Post-processing of the noisy model: free.
        """
        codes = _draw(model, rows, int(self.step))
        scale = float(model.total) / rows
        out = {}
        for cl in cliques:
            shape = [self.domain[a] for a in cl]
            idx = np.ravel_multi_index(tuple(codes[a] for a in cl), shape)
            out[cl] = np.bincount(idx, minlength=int(np.prod(shape))).astype(np.float64) * scale
        return out

    def event(self, phase: str, losses: dict | None = None) -> None:
        self.step += 1
        self.total_steps = max(self.total_steps, self.step)
        ev = TrainingEvent(phase=phase, step=self.step, total_steps=self.total_steps,
                           losses={k: float(v) for k, v in (losses or {}).items()}, epsilon=self.meter())
        if not emit(self.callback, ev):
            raise _Stopped()

    def summary(self) -> dict:
        return {"rho_used": self.rho_used, "measurements": len(self.measurements),
                "selected": [list(c) for c in self.selected]}
