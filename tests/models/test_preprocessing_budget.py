"""A dataset whose bounds were estimated with DP has already spent part of the budget: every private
model calibrates its noise to what is left, so the run's total ε is the requested ε."""
import numpy as np
import pytest

from dpcore.models import make_model
from dpcore.models.gswgan import GSWGAN, GSWGANConfig
from dpcore.models.protocol import PrivacyBudget
from dpcore.privacy.accountant import epsilon as accountant_epsilon
from dpcore.privacy.ledger import MechanismRecord, PrivacyLedger

EPS, DELTA = 2.0, 1e-5


@pytest.fixture(scope="module")
def train(tmp_path_factory):
    from dpcore.data import read_csv, train_test_split

    rng = np.random.default_rng(0)
    path = tmp_path_factory.mktemp("csv") / "t.csv"
    rows = ["a,b,y"] + [f"{rng.normal(50, 10):.3f},{rng.normal(0, 1):.3f},{i % 2}" for i in range(400)]
    path.write_text("\n".join(rows) + "\n")
    train, _ = train_test_split(read_csv(path, target="y", undeclared="dp", seed=0,
                                              types={"a": "numeric", "b": "numeric"}), 0.2, seed=0)
    return train


def fit(name: str, train):
    if name == "gs-wgan":
        model = GSWGAN(GSWGANConfig(steps=3, batch_size=8, n_discriminators=10, critic_steps=1,
                                    critic_batch=8, warmup_steps=1, latent_dim=4, gen_hidden=16,
                                    critic_hidden=8))
        return model, model.fit(train, PrivacyBudget(EPS, DELTA))
    extra = {"pca_dim": 2, "warmup_steps": 2} if name == "p3gm" else {"latent_dim": 2}
    model = make_model(name, epochs=1, batch_size=32, hidden=16, epsilon=EPS, delta=DELTA, **extra)
    return model, model.fit(train)


@pytest.mark.parametrize("name", ["p3gm", "dp-vae", "gs-wgan"])
def test_total_epsilon_is_the_requested_one_including_preprocessing(train, name):
    spent = [MechanismRecord.from_dict(d) for d in train.meta["privacy_records"]]
    assert spent and accountant_epsilon(PrivacyLedger(spent), DELTA) > 0.1
    model, result = fit(name, train)
    ledger = model.privacy_ledger()
    assert ledger.records[:len(spent)] == spent  # the preprocessing records come first
    assert len(ledger) > len(spent)
    assert abs(result.epsilon - EPS) <= 1e-6
    assert result.epsilon == pytest.approx(accountant_epsilon(ledger, DELTA), abs=1e-12)
    # the model's own mechanisms alone stay below the target: only the remainder was theirs
    assert accountant_epsilon(PrivacyLedger(ledger.records[len(spent):]), DELTA) < EPS - 0.01
