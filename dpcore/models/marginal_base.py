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

import math
import time
import warnings

import numpy as np

from dpcore.data.dataset import Dataset
from dpcore.errors import InvalidParameter, RunError, check_int
from dpcore.models.compress import (  # noqa: F401 (level_groups, expand: re-exported)
    compressed_shape,
    expand,
    level_groups,
    merged_from_json,
)
from dpcore.models.level_floor import (
    drop_unseen_missing,
    floor_kind,
    floors_from_json,
    level_floors,
    missing_scores,
    raise_to_floor,
    scores_from_json,
)
from dpcore.models.marginal_data import Discretizer
from dpcore.models.synthesizer import BaseSynthesizer, DataFacts, FitRun, Plan
from dpcore.privacy.ledger import MechanismRecord, exponential_record


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


def tables_only(name: str, data: Dataset | DataFacts, bins: int) -> int | None:
    """Refuse images (and tables without a tabular encoder or declared bounds) before any work;
    the number of discrete attributes when the rows' schema is at hand (a Dataset, or facts that
    carry it), else None."""
    if isinstance(data, Dataset):
        return len(Discretizer.for_dataset(data, bins, name).attrs)
    if data.image_shape is not None:
        raise InvalidParameter(f"{name} works on tables (a CSV or a tabular built-in), not on images")
    return data.attributes


class MarginalSynthesizer(BaseSynthesizer):
    """Base: subclasses set name/label/description/config_class, `_planned_steps(config, d)` and
    implement `_select_and_measure(ctx)`."""

    name = "marginal"
    label = "marginal"
    private = True
    counts_rows = True  # ñ is the graphical model's known total
    takes_images = False

    def __init__(self, config=None, **overrides):
        super().__init__(config, **overrides)
        self.disc: Discretizer | None = None
        self.model = None  # mbi MarkovRandomField
        self.merged: dict[str, list[int]] = {}  # attribute -> compressed code of each level
        self.level_floor: dict[str, float] = {}  # attribute -> least share of each level (level_floor.py)
        self.missing_scores: dict[str, float] = {}  # missing flag -> noisy missing count / σ (level_floor.py)

    # ------------------------------------------------------------------ plan
    @classmethod
    def plan(cls, config, data: Dataset | DataFacts) -> Plan:
        """Tables only (checked on the schema when `data` is a Dataset), then the base's plan;
        steps from the number of attributes when it is known."""
        cfg = config if config is not None else cls.config_class()
        d = tables_only(cls.name, data, cfg.bins)
        plan = super().plan(cfg, data)
        if d is not None:
            plan.steps = cls._planned_steps(plan.config, d)
            plan.details["attributes"] = d
        return plan

    @classmethod
    def _planned_steps(cls, config, d: int) -> int:
        raise NotImplementedError

    @classmethod
    def _preview(cls, config, facts: DataFacts) -> Plan:
        """ρ calibrated after the data's DP preprocessing and the count ñ; the planned ledger holds
        ρ as one Gaussian record of noise multiplier 1/√(2ρ): the same Rényi curve (αρ) as the
        run's Gaussian measurements and exponential selections together, so the same ε."""
        from dpcore.privacy.accountant import epsilon
        from dpcore.privacy.accountants.zcdp import calibrate_rho
        from dpcore.privacy.dataset_size import with_count

        ledger = with_count(facts.spent_ledger())
        rho = calibrate_rho(config.epsilon, config.delta, spent=ledger)
        ledger.add(MechanismRecord(f"{cls.name}: marginals and selections (ρ-zCDP)", "gaussian",
                                   1.0 / math.sqrt(2.0 * rho), sensitivity=1.0))
        return Plan(cls.name, config, 1, noise={"ρ  (zCDP budget)": rho},
                    epsilon=float(epsilon(ledger, config.delta)), delta=config.delta,
                    ledger=ledger.to_list(), details={"rho": rho})

    # ------------------------------------------------------------------ fit
    def fit(self, train: Dataset, budget=None, callback=None):
        tables_only(self.name, train, self.config.bins)  # before the count or any other work
        return super().fit(train, budget, callback)

    def _fit(self, run: FitRun) -> None:
        from dpcore.privacy.accountants.zcdp import calibrate_rho

        cfg, train = self.config, run.train
        disc = Discretizer.for_dataset(train, cfg.bins, self.name)
        mbi = _mbi()
        self.disc, self.merged = disc, {}
        rho = calibrate_rho(run.epsilon, run.delta, spent=self.ledger)  # the ledger holds ñ already
        domain = mbi.Domain(disc.names, disc.shape)
        prog = run.start(self._planned_steps(cfg, len(disc.attrs)))
        ctx = _Context(self, mbi, domain, disc.encode(train), rho, run, prog)
        self.calibration = {"rho": rho, "bins": cfg.bins, "attributes": len(disc.attrs)}
        try:
            self._select_and_measure(ctx)
        except _Stopped:
            pass
        # the final estimate uses every measurement made (all of them when stopped early)
        self.model = ctx.estimate(cfg.iters if ctx.measurements else 1, warm=ctx.model)
        if not prog.stopped:  # the last event closes the bar: planned rounds AIM did not need are dropped
            prog.total = prog.step + 1
            try:
                ctx.event("estimate")
            except _Stopped:
                pass
        self.calibration.update(ctx.summary())
        kinds = {a.name: floor_kind(a) for a in disc.attrs}
        ones = ctx.noisy_one_ways()  # {} when nothing was measured
        self.level_floor = level_floors(ones, kinds, ctx.total)
        self.missing_scores = missing_scores(ones, kinds)

    def _select_and_measure(self, ctx: _Context) -> None:
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
            atoms = {a: self.disc.atom_mask(a) for a in self.merged}
            codes = _draw(self.model, n, int(rng.integers(2 ** 32)))
            if self.config.level_floor and self.level_floor:
                sizes = dict(zip(self.disc.names, compressed_shape(self.disc, self.merged)))
                codes = raise_to_floor(codes, sizes, self.level_floor, rng)
            if self.config.missing_sigmas > 0 and self.missing_scores:
                codes = drop_unseen_missing(codes, self.missing_scores, self.config.missing_sigmas)
            codes = expand(codes, self.merged, rng, atoms)
        feats, labels = self.disc.decode(codes, n, rng, self.config.numeric_decode)
        return self.template.with_features(feats, labels)

    def _is_fitted(self) -> bool:
        return self.model is not None

    # ------------------------------------------------------------------ persistence
    def _cliques(self) -> list[list[str]]:
        return [list(cl) for cl in self.model.cliques]

    def _state_tensors(self) -> dict[str, np.ndarray]:
        """The model's log-potential table of each clique."""
        return {f"potential.{i}": np.array(self.model.potentials.tables[tuple(cl)].values)
                for i, cl in enumerate(self._cliques())}

    def _state_json(self) -> dict:
        return {"width": self.n_features, "attributes": self.disc.to_list(), "cliques": self._cliques(),
                "total": float(self.model.total), "merged": self.merged, "level_floors": self.level_floor,
                "missing_scores": self.missing_scores}

    def _restore(self, tensors: dict, meta: dict) -> None:
        where = "model.json"
        self.disc = Discretizer.from_list(meta.get("attributes"), self.n_features, where)
        cliques, total = meta.get("cliques"), meta.get("total")
        names = set(self.disc.names)
        if (not isinstance(cliques, list) or not all(isinstance(c, list) and c and set(c) <= names for c in cliques)
                or not isinstance(total, (int, float)) or isinstance(total, bool) or not math.isfinite(total)
                or total <= 0):
            raise RunError(f"{where}: 'cliques' must list attributes and 'total' be a positive number")
        mbi = _mbi()
        import jax.numpy as jnp

        self.merged = merged_from_json(meta.get("merged", {}), self.disc, where)
        self.level_floor = floors_from_json(meta.get("level_floors", {}), self.disc.attrs, where)  # {}: saved before it
        self.missing_scores = scores_from_json(meta.get("missing_scores", {}), self.disc.attrs, where)
        domain = mbi.Domain(self.disc.names, compressed_shape(self.disc, self.merged))
        tables = {}
        for i, cl in enumerate(cliques):
            arr = tensors.get(f"potential.{i}")
            sub = domain.project(tuple(cl))
            if arr is None or tuple(arr.shape) != tuple(sub.shape):
                raise RunError(f"{where}: potential {i} is missing or has the wrong shape")
            tables[tuple(cl)] = mbi.Factor(sub, jnp.asarray(arr.numpy(), dtype=jnp.float64))
        pot = mbi.CliqueVector(domain, [tuple(c) for c in cliques], tables)
        marg = mbi.marginal_oracles.message_passing_stable(pot, float(total))
        self.model = mbi.MarkovRandomField(potentials=pot, marginals=marg, total=float(total))


def pooled(mbi, measurements: list) -> list:
    """Repeated plain measurements of one clique → one, their inverse-variance weighted mean at
    σ = (Σ σᵢ⁻²)^-½: the same weighted least-squares loss up to a constant, so the same estimate.
    Why: mbi compiles one program per list of measurements (~3–8 s on a CPU), so AIM's re-measured
    cliques and its final re-measurement would each compile again; pooled, only new cliques do.
    Post-processing of released measurements; the ledger keeps one record per measurement."""
    from mbi.marginal_loss import DatavectorQuery

    groups: dict = {}
    for i, m in enumerate(measurements):
        key = m.clique if isinstance(m.query, DatavectorQuery) else i  # compressed 1-ways stay apart
        groups.setdefault(key, []).append(m)
    out = []
    for ms in groups.values():
        if len(ms) == 1:
            out.append(ms[0])
            continue
        w = np.array([1.0 / float(m.stddev) ** 2 for m in ms])
        y = sum(wi * np.asarray(m.noisy_measurement, np.float64) for wi, m in zip(w, ms)) / w.sum()
        out.append(mbi.LinearMeasurement(y, ms[0].clique, stddev=float(1.0 / np.sqrt(w.sum()))))
    return out


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

    def __init__(self, owner: MarginalSynthesizer, mbi, domain, data, rho: float, run: FitRun, progress):
        self.owner, self.mbi, self.domain, self.data, self.rho = owner, mbi, domain, data, rho
        self.progress, self.released_n = progress, run.released_n
        self.t0 = time.perf_counter()
        self.measure_rng = run.noise.numpy(f"{owner.name} measurements")  # secret streams
        self.select_rng = run.noise.numpy(f"{owner.name} selections")
        self.kind = run.noise.kind
        self.measurements: list = []
        self.rho_used = 0.0
        self.selected: list[tuple] = []
        self.model = None  # the latest intermediate estimate (AIM's warm start)
        self._true: dict[tuple, np.ndarray] = {}

    @property
    def total(self) -> float:
        return float(self.released_n)

    def true_marginal(self, clique: tuple) -> np.ndarray:
        if clique not in self._true:
            shape = [self.domain[a] for a in clique]
            idx = np.ravel_multi_index(tuple(self.data[a] for a in clique), shape)
            self._true[clique] = np.bincount(idx, minlength=int(np.prod(shape))).astype(np.float64)
        return self._true[clique]

    def measure(self, cliques: list[tuple], sigma: float, record: str, queries: dict | None = None) -> None:
        """Gaussian mechanism on each clique's count vector (L2 sensitivity 1), one record each; a
        clique in `queries` has its cells summed into groups first (a 0/1 matrix with disjoint
        rows: a row still moves one count by 1, see target_pairs.GroupedQuery)."""
        for cl in cliques:
            x = self.true_marginal(cl)
            q = (queries or {}).get(cl)
            if q is not None:
                x = q.matrix @ x
            y = x + sigma * self.measure_rng.standard_normal(x.shape)
            self.owner.ledger.add(MechanismRecord(record, "gaussian", float(sigma), sensitivity=1.0,
                                                  noise=self.kind))
            self.rho_used += 1.0 / (2.0 * sigma * sigma)
            self.measurements.append(self.mbi.LinearMeasurement(y, cl, stddev=float(sigma)) if q is None
                                     else self.mbi.LinearMeasurement(y, cl, stddev=float(sigma), query=q))
        # what the live view draws: the noise of these counts and how many marginals are in (both
        # are in the ledger: a function of the budget and the pace, not of the rows)
        self.event("measure", {"marginals": float(len(self.measurements)), "sigma": float(sigma)})

    def compress(self, sigmas: float = 3.0) -> None:
        """Merge levels the noisy 1-way counts cannot tell from noise (the MST paper's compress_domain),
        so later marginals skip cells the data hardly uses, whose noise would leak mass into them.
        Post-processing of the measured 1-ways: free. See `level_groups` for how levels are merged."""
        kinds = {a.name: a.kind for a in self.owner.disc.attrs}
        mapping = {}
        for a, (y, sigma) in self.noisy_one_ways().items():
            code = level_groups(y, sigma, kinds[a] in ("bins", "int"), sigmas)
            if code is not None:
                mapping[a] = code
        if not mapping:
            return
        old = self.domain
        self.measurements = [m.compress(mapping, old) for m in self.measurements]
        self.domain = self.mbi.Domain(old.attributes, [int(mapping[a].max()) + 1 if a in mapping else old[a]
                                                       for a in old.attributes])
        self.data = {a: mapping[a][c] if a in mapping else c for a, c in self.data.items()}
        self._true, self.model = {}, None
        self.owner.merged = {a: [int(v) for v in c] for a, c in mapping.items()}

    def noisy_one_ways(self) -> dict[str, tuple[np.ndarray, float]]:
        """{attribute: (noisy 1-way counts, their noise std)}: its own 1-way measurement, else the
        first measurement that holds it, summed over the other attributes (noise σ·√cells summed).
        Post-processing of released measurements."""
        out = {}
        for m in sorted(self.measurements, key=lambda m: len(m.clique)):
            if getattr(m.query, "matrix", None) is not None:  # grouped cells: not the clique's shape
                continue
            shape = [self.domain[b] for b in m.clique]
            y = np.asarray(m.noisy_measurement, np.float64).reshape(shape)
            for k, a in enumerate(m.clique):
                if a not in out:
                    axes = tuple(j for j in range(len(shape)) if j != k)
                    cells = int(np.prod([shape[j] for j in axes])) if axes else 1
                    out[a] = (y.sum(axis=axes) if axes else y, float(m.stddev) * math.sqrt(cells))
        return out

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
        return est.estimate(self.domain, pooled(self.mbi, self.measurements), known_total=self.total,
                            iters=max(1, int(iters)), warm_start=warm)

    def model_marginals(self, model, cliques: list[tuple], rows: int) -> dict[tuple, np.ndarray]:
        """Marginals of `model` on many cliques from `rows` drawn rows, scaled to the model's total.

        Why draws and not exact inference: mbi compiles one program per query shape (10+ s for a
        few hundred pairs on a CPU); a draw costs ~1 s. Post-processing of the noisy model: free.
        """
        codes = _draw(model, rows, int(self.progress.step))
        scale = float(model.total) / rows
        out = {}
        for cl in cliques:
            shape = [self.domain[a] for a in cl]
            idx = np.ravel_multi_index(tuple(codes[a] for a in cl), shape)
            out[cl] = np.bincount(idx, minlength=int(np.prod(shape))).astype(np.float64) * scale
        return out

    def event(self, phase: str, losses: dict | None = None) -> None:
        """One progress event (the bar grows when AIM needs more rounds than planned); a stop
        request from the callback ends selection and measurement."""
        prog = self.progress
        prog.total = max(prog.total, prog.step + 1)
        if not prog.event(phase, {k: float(v) for k, v in (losses or {}).items()}):
            raise _Stopped()

    def summary(self) -> dict:
        return {"rho_used": self.rho_used, "measurements": len(self.measurements),
                "selected": [list(c) for c in self.selected]}
