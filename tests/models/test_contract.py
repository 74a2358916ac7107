"""The contract every registered model keeps: one parametrised run per name in the registry, so a
model added with `register_model` is checked here without a line of test code.

The toy model below is written the way a new model is (a config with declared fields, a class on
the base, one registry call); the last tests check that the CLI, the Train page and the plan pick
it up. Toy releases the column means of the rows with the Gaussian mechanism (features in [0, 1],
so one row moves the sum by at most √D) divided by the noisy count ñ, and samples around them.
"""
import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import pytest

from dpcore.models import MODELS, get_model, load_model, register_model
from dpcore.privacy.accountant import epsilon as accountant_epsilon
from dpcore.models.params import (REPRODUCIBLE_NOISE_HELP, ModelConfig, delta_field, device_field,
                                  epsilon_field, hparam, positive, seed_field)
from dpcore.models.rows import model_matrix, split_output
from dpcore.models.synthesizer import ROLES, BaseSynthesizer, Plan


@dataclass(frozen=True)
class ToyConfig(ModelConfig):
    epsilon: float = epsilon_field(1.0, "total privacy budget ε")
    delta: float = delta_field()
    spread: float = positive(0.1, "standard deviation of the sampled rows around the noisy mean",
                             group="main")
    seed: int = seed_field()
    device: str = device_field()
    reproducible_noise: bool = hparam(False, REPRODUCIBLE_NOISE_HELP)


def _sigma(epsilon: float, delta: float, spent) -> float:
    """Noise multiplier of one Gaussian release that brings spent + it to ε (bisection)."""
    from dpcore.privacy.accountant import epsilon as accountant_epsilon
    from dpcore.privacy.ledger import MechanismRecord, PrivacyLedger

    def eps(sigma):
        led = PrivacyLedger.from_list(list(spent))
        led.add(MechanismRecord("toy-sum", "gaussian", sigma))
        return accountant_epsilon(led, delta)

    lo, hi = 0.05, 1e4
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if eps(mid) > epsilon else (lo, mid)
    return hi


class Toy(BaseSynthesizer):
    name = "toy"
    label = "Toy means"
    description = "Toy: noisy column means, rows drawn around them."
    config_class = ToyConfig
    private = True

    def __init__(self, config=None, **overrides):
        super().__init__(config, **overrides)
        self.mean: np.ndarray | None = None

    @classmethod
    def _preview(cls, config, facts) -> Plan:
        from dpcore.privacy.dataset_size import with_count

        spent = with_count(facts.spent_ledger()).to_list()
        return Plan(cls.name, config, 1, noise={"σ  (mean)": _sigma(config.epsilon, config.delta, spent)},
                    epsilon=config.epsilon, delta=config.delta)

    def _fit(self, run) -> None:
        from dpcore.privacy.mechanisms import gaussian_mechanism

        X, _ = model_matrix(run.train)
        prog = run.start(1)
        sigma = _sigma(run.epsilon, run.delta, self.ledger.to_list())
        total = gaussian_mechanism(X.sum(0), math.sqrt(X.shape[1]), sigma, run.noise.numpy("toy-sum"),
                                   ledger=self.ledger, name="toy-sum")
        self.mean = (total / run.released_n).astype(np.float32)
        self.calibration = {"sigma": sigma}
        prog.event("mean", {"loss": 0.0})

    def sample(self, n: int, seed: int | None = None):
        self._check_fitted()
        rng = np.random.default_rng(seed)
        out = self.mean + self.config.spread * rng.standard_normal((n, len(self.mean))).astype(np.float32)
        feats, labels = split_output(out, self.n_features, self.n_classes)
        return self.template.with_features(feats, labels)

    def _is_fitted(self) -> bool:
        return self.mean is not None

    def _state_tensors(self) -> dict:
        return {"mean": self.mean}

    def _restore(self, tensors, meta) -> None:
        self.mean = tensors["mean"].numpy()


# Small settings by field name; each model takes the ones its config has.
TINY = {"hidden": 16, "epochs": 1, "batch_size": 200, "warmup_steps": 3, "pca_dim": 4, "latent_dim": 3,
        "em_iters": 3, "steps": 3, "n_discriminators": 4, "critic_steps": 1, "critic_batch": 8,
        "gen_hidden": 16, "critic_hidden": 8, "bins": 4, "rounds": 2, "round_iters": 5, "iters": 10,
        "max_time": 5.0}


@pytest.fixture(scope="module", autouse=True)
def toy_registered():
    register_model("toy", Toy)  # the one call a new model needs
    yield
    MODELS._specs.pop("toy", None)
    MODELS._loaded.pop("toy", None)


def _names():
    return sorted({*MODELS, Toy.name})  # the toy is registered by the fixture above


def _private_names():
    return [n for n in _names() if (Toy if n == Toy.name else MODELS[n]).private]


def tiny(name, **extra):
    cls = get_model(name)
    fields = {f.name for f in dataclasses.fields(cls.config_class)}
    return cls(cls.config_class(**{k: v for k, v in {**TINY, **extra}.items() if k in fields}))


@pytest.fixture(scope="module")
def data_for(digits):
    """Training rows for model `name`: digits, or a small table for models of tables only."""
    from dpcore.data import load_split

    table = load_split("two-gaussians", dim=5, n=300, seed=0)[0]

    def get(name):
        return digits[0] if get_model(name).takes_images else table
    return get


@pytest.fixture(scope="module")
def fitted(data_for):
    cache = {}

    def get(name):
        if name not in cache:
            model, events = tiny(name), []
            result = model.fit(data_for(name), callback=events.append)
            cache[name] = model, events, result
        return cache[name]
    return get


@pytest.mark.parametrize("name", _names())
def test_declares_itself(name):
    cls = get_model(name)
    assert issubclass(cls, BaseSynthesizer) and cls.name == name
    assert cls.label and cls.description and isinstance(cls.private, bool)
    for p in cls.parameters():
        assert p.help, f"{name}.{p.name} has no help text"
        assert p.default is not dataclasses.MISSING
        if p.choices is not None:
            assert p.default in p.choices
    assert ("epsilon" in {p.name for p in cls.parameters()}) or not cls.private
    # what is particular to it is declared, for the CLI, the pages and the reports to read
    assert cls.role in ROLES and (cls.role == "private") == cls.private
    assert isinstance(cls.notes, tuple) and all(isinstance(n, str) and n for n in cls.notes)


@pytest.mark.parametrize("name", _names())
def test_fit_streams_the_planned_steps(name, fitted, data_for):
    model, events, result = fitted(name)
    train = data_for(name)
    assert not result.stopped and events and result.steps == events[-1].step == len(events)
    assert [e.step for e in events] == list(range(1, len(events) + 1))
    cls = type(model)
    if not (cls.private and cls.counts_rows):  # private runs plan with ñ, not the exact n
        assert cls.plan(tiny(name).config, train).steps == events[-1].total_steps


@pytest.mark.parametrize("name", _names())
def test_samples_in_the_schema_and_repeat_with_the_seed(name, fitted, data_for, tmp_path):
    model, _, _ = fitted(name)
    train = data_for(name)
    none = model.sample(0, seed=1)
    assert none.n == 0 and none.features.shape == (0, train.n_features)
    rows = model.sample(12, seed=3)
    assert rows.features.shape == (12, train.n_features) and rows.labels.shape == (12,)
    assert rows.label_names == train.label_names and rows.image_shape == train.image_shape
    assert np.isfinite(rows.features).all()
    np.testing.assert_array_equal(model.sample(12, seed=3).features, rows.features)
    model.save(tmp_path / "m")
    again = load_model(tmp_path / "m")
    assert type(again) is type(model) and again.config == model.config
    assert again.privacy_ledger().to_list() == model.privacy_ledger().to_list()
    assert again.fit_result == model.fit_result and again.calibration == model.calibration
    np.testing.assert_array_equal(again.sample(12, seed=3).features, rows.features)
    np.testing.assert_array_equal(again.sample(12, seed=3).labels, rows.labels)


@pytest.mark.parametrize("name", _names())
def test_private_ledger_keeps_the_budget_with_secret_noise(name, fitted):
    model, _, result = fitted(name)
    ledger = model.privacy_ledger()
    claim = model.privacy_claim()  # a claim beside ε only for a non-private model, in words
    assert claim is None or (not model.private and claim["summary"] and claim["label"])
    if not model.private:
        assert math.isinf(result.epsilon) and len(ledger) == 0
        return
    target = model.config.epsilon
    assert result.epsilon == accountant_epsilon(ledger, result.delta) <= target * (1 + 1e-6)
    assert len(ledger) and not ledger.reproducible_noise


@pytest.mark.parametrize("name", _private_names())
def test_reproducible_noise_is_labelled_seeded(name, data_for):
    model = tiny(name, reproducible_noise=True)
    model.fit(data_for(name))
    assert model.privacy_ledger().reproducible_noise


@pytest.mark.parametrize("name", _names())
def test_stop_from_the_callback_leaves_a_usable_model(name, data_for):
    model = tiny(name)
    seen = []
    result = model.fit(data_for(name), callback=lambda ev: seen.append(ev) is not None)  # False: stop
    assert result.stopped and len(seen) == result.steps == 1
    assert model.sample(4, seed=0).n == 4


# ----------------------------------------------------------------------------- the toy everywhere
def test_toy_gets_cli_flags_and_trains(tmp_path, capsys):
    from dpcore.cli import main

    with pytest.raises(SystemExit) as e:
        main(["train", "--model", "toy", "--help"])
    assert e.value.code == 0
    assert "--spread" in capsys.readouterr().out
    assert main(["train", "--model", "toy", "--dataset", "digits", "--spread", "0.2", "--epsilon", "2",
                 "--out", str(tmp_path / "toy"), "--json"]) == 0
    import json

    out = json.loads(capsys.readouterr().out)
    assert out["model"] == "toy" and out["params"]["spread"] == 0.2 and out["status"] == "done"
    assert out["epsilon"] == pytest.approx(2.0, rel=1e-6)


def test_toy_on_the_train_page_and_in_its_plan(tmp_path, monkeypatch, digits):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    plan = Toy.plan(ToyConfig(epsilon=0.5), digits[0])
    assert plan.steps == 1 and plan.noise["σ  (mean)"] > 0
    monkeypatch.setenv("DPCORE_RUNS_DIR", str(tmp_path))
    app = str(Path(__file__).resolve().parents[2] / "app.py")
    at = AppTest.from_file(app, default_timeout=120).run()
    at.switch_page("app_pages/train.py").run()
    at.selectbox(key="train.model").set_value("toy").run()
    assert not at.exception and not at.error
    assert any(c.value == Toy.description for c in at.caption)
    assert at.checkbox(key="train.toy.adv.reproducible_noise").value is False
    spread = at.number_input(key="train.toy.spread")  # group "main": the Model column
    assert spread.value == 0.1
    labels = {m.label: m.value for m in at.metric}
    assert "σ  (mean)" in labels and labels["ε by the accountant"] == "1.000"
