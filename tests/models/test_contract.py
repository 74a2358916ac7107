"""The contract every registered model keeps: one parametrised run per name in the registry, so a
model added with `register_model` is checked here without a line of test code.

The throwaway model is docs/CONTRIBUTING.md's add-a-model walkthrough, run as written: its module
block is executed here and the model registered by the fixture below (the one call a new model
needs); the last tests train it with the CLI and open it on the Train page and in its plan, so the
walkthrough cannot drift from what the contract, the CLI and the page accept.
"""
import dataclasses
import math
import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from dpcore.models import MODELS, family, get_model, load_model, register_model
from dpcore.models.synthesizer import ROLES, BaseSynthesizer
from dpcore.privacy.accountant import epsilon as accountant_epsilon

CONTRIBUTING = Path(__file__).resolve().parents[2] / "docs" / "CONTRIBUTING.md"


def _walkthrough_module() -> types.ModuleType:
    """The model module of CONTRIBUTING's "Adding a model" (its first python block), as a module."""
    section = CONTRIBUTING.read_text(encoding="utf-8").split("## Adding a model", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    module = types.ModuleType("contributing_walkthrough")
    sys.modules[module.__name__] = module  # dataclasses look their class's module up
    exec(compile(code, str(CONTRIBUTING), "exec"), module.__dict__)
    return module


walkthrough = _walkthrough_module()
Toy, ToyConfig = walkthrough.NoisyMeans, walkthrough.NoisyMeansConfig


# Small settings by field name; each model takes the ones its config has.
TINY = {"hidden": 16, "epochs": 1, "batch_size": 200, "warmup_steps": 3, "pca_dim": 4, "latent_dim": 3,
        "em_iters": 3, "steps": 3, "n_discriminators": 4, "critic_steps": 1, "critic_batch": 8,
        "gen_hidden": 16, "critic_hidden": 8, "bins": 4, "rounds": 2, "round_iters": 5, "iters": 10,
        "max_time": 5.0}


@pytest.fixture(scope="module", autouse=True)
def toy_registered():
    register_model(Toy.name, Toy)  # the one call a new model needs
    yield
    MODELS._specs.pop(Toy.name, None)
    MODELS._loaded.pop(Toy.name, None)


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
    if cls.role == "ceiling":  # the noise-free twin of a registered private model: one curve with it
        assert get_model(cls.ceiling_of).private and family(name) == cls.ceiling_of
    else:
        assert cls.ceiling_of is None and family(name) == name
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
def test_toy_gets_cli_flags_and_trains(tmp_path, run_cli):
    rc, out, _ = run_cli(["train", "--model", Toy.name, "--help"])
    assert rc == 0 and "--spread" in out and "standard deviation of the sampled rows" in out
    rc, out, err = run_cli(["train", "--model", Toy.name, "--dataset", "digits", "--spread", "0.2",
                            "--epsilon", "2", "--out", str(tmp_path / "toy"), "--json"])
    assert rc == 0, err
    import json

    out = json.loads(out)
    assert out["model"] == Toy.name and out["params"]["spread"] == 0.2 and out["status"] == "done"
    assert out["epsilon"] == pytest.approx(2.0, rel=1e-6)
    assert [r["name"] for r in out["ledger"]][-1] == walkthrough.RECORD
    rc, _, err = run_cli(["train", "--model", Toy.name, "--dataset", "digits", "--spread", "-1",
                          "--out", str(tmp_path / "bad")])
    assert rc == 2 and "spread" in err and len(err.strip().splitlines()) == 1


def test_toy_on_the_train_page_and_in_its_plan(tmp_path, monkeypatch, digits):
    from streamlit.testing.v1 import AppTest

    plan = Toy.plan(ToyConfig(epsilon=0.5), digits[0])
    assert plan.steps == 1 and plan.noise["σ  (mean)"] > 0
    assert 0.49 <= plan.epsilon <= 0.5  # the accountant's, of the planned ledger
    monkeypatch.setenv("DPCORE_RUNS_DIR", str(tmp_path))
    app = str(Path(__file__).resolve().parents[2] / "app.py")
    at = AppTest.from_file(app, default_timeout=120).run()
    at.switch_page("app_pages/train.py").run()
    at.selectbox(key="train.model").set_value(Toy.name).run()
    assert not at.exception and not at.error
    assert any(c.value == Toy.description for c in at.caption)
    k = f"train.{Toy.name}."
    assert at.checkbox(key=k + "adv.reproducible_noise").value is False
    spread = at.number_input(key=k + "spread")  # group "main": the Model column
    assert spread.value == 0.1
    labels = {m.label: m.value for m in at.metric}
    assert "σ  (mean)" in labels and 0.99 <= float(labels["ε by the accountant"]) <= 1.0  # σ keeps ε ≤ 1
