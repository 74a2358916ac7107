"""Secret randomness: OS-entropy streams differ, look uniform, and are labelled; seeded ones repeat."""
import numpy as np
import pytest
import torch

from dpcore.errors import InvalidParameter
from dpcore.privacy.dpsgd import DPSGD
from dpcore.privacy.ledger import MechanismRecord, PrivacyLedger
from dpcore.privacy.mechanisms import gaussian_mechanism
from dpcore.privacy.randomness import NoiseSource, combined_kind, noise_kind


def test_secret_torch_streams_differ_and_look_uniform():
    src = NoiseSource.secret()
    a, b = src.torch("dp-sgd-noise"), src.torch("dp-sgd-noise")
    ua, ub = torch.rand(200_000, generator=a), torch.rand(200_000, generator=b)
    assert not torch.equal(ua[:8], ub[:8])
    for u in (ua, ub):  # mean 1/2, variance 1/12, flat deciles (standard errors ~6e-4, 2e-4)
        assert abs(float(u.mean()) - 0.5) < 0.005 and abs(float(u.var()) - 1 / 12) < 0.002
        hist = torch.histc(u, bins=10, min=0, max=1) / u.numel()
        assert float((hist - 0.1).abs().max()) < 0.005
    z = torch.randn(200_000, generator=a)
    assert abs(float(z.mean())) < 0.01 and abs(float(z.std()) - 1) < 0.01
    assert abs(float(torch.corrcoef(torch.stack([ua[:-1], ua[1:]]))[0, 1])) < 0.01


def test_secret_torch_state_is_the_whole_mt19937_state_from_entropy():
    g = NoiseSource.secret().torch("x")
    state = g.get_state().numpy()
    words = state[24:24 + 8 * 624].view(np.uint64)
    assert words.max() < 2 ** 32 and len(np.unique(words)) > 600  # 624 random 32-bit words
    assert g.initial_seed() == 0  # nothing seed-like to leak: the seed field is unused


def test_seeded_streams_repeat_per_name_and_secret_ones_never_do():
    seeded = NoiseSource.seeded(0)
    assert torch.equal(torch.rand(5, generator=seeded.torch("a")), torch.rand(5, generator=seeded.torch("a")))
    assert not torch.equal(torch.rand(5, generator=seeded.torch("a")), torch.rand(5, generator=seeded.torch("b")))
    assert seeded.numpy("a").normal() == seeded.numpy("a").normal() != NoiseSource.seeded(1).numpy("a").normal()
    secret = NoiseSource.secret()
    assert secret.numpy("a").normal() != secret.numpy("a").normal()
    streams = secret.numpy_streams("critics", 3)
    assert len({s.random() for s in streams}) == 3


def test_kinds_are_read_from_the_generators():
    secret, seeded = NoiseSource.secret(), NoiseSource.seeded(3)
    assert noise_kind(secret.numpy("a")) == noise_kind(secret.torch("a")) == "secret"
    assert noise_kind(secret.numpy_streams("a", 2)[1]) == "secret"
    for g in (seeded.numpy("a"), seeded.torch("a"), np.random.default_rng(0), torch.Generator(), None):
        assert noise_kind(g) == "seeded"
    assert combined_kind(secret.torch("a"), seeded.torch("b")) == "seeded"
    assert (secret.kind, seeded.kind) == ("secret", "seeded") and "3" not in repr(seeded) + repr(secret)
    with pytest.raises(InvalidParameter, match="seed"):
        NoiseSource(-1)


def test_for_config_is_secret_for_private_models_unless_debugging():
    class Cfg:
        seed, reproducible_noise = 4, False

    assert NoiseSource.for_config(Cfg()).kind == "secret"
    assert NoiseSource.for_config(Cfg(), private=False).kind == "seeded"
    Cfg.reproducible_noise = True
    assert NoiseSource.for_config(Cfg()).kind == "seeded"


def test_mechanisms_record_the_kind_of_noise_they_drew():
    led = PrivacyLedger()
    gaussian_mechanism(np.zeros(3), 1.0, 2.0, None, ledger=led, name="a")
    gaussian_mechanism(np.zeros(3), 1.0, 2.0, 0, ledger=led, name="b")
    assert [r.noise for r in led] == ["secret", "seeded"] and led.reproducible_noise
    net = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    kw = dict(noise_multiplier=1.0, max_grad_norm=1.0, n=10, expected_batch_size=2, ledger=None)
    assert DPSGD(net, opt, **kw).record().noise == "secret"  # no generator: secret streams
    assert DPSGD(net, opt, generator=torch.Generator().manual_seed(0), **kw).record().noise == "seeded"


def test_ledger_noise_field_and_legacy_records():
    rec = MechanismRecord("q", "gaussian", 1.0)
    assert rec.noise == "secret" and rec.to_dict()["noise"] == "secret"
    assert MechanismRecord.from_dict(rec.to_dict()) == rec
    legacy = {k: v for k, v in rec.to_dict().items() if k != "noise"}
    assert MechanismRecord.from_dict(legacy).noise == "seeded"  # saved before: drawn from the seed
    assert not PrivacyLedger([rec]).reproducible_noise
    assert PrivacyLedger.from_list([rec.to_dict(), legacy]).reproducible_noise
    led = PrivacyLedger([rec])
    led.add(MechanismRecord("q", "gaussian", 1.0, noise="seeded"))
    assert len(led) == 2  # different kinds never merge
    with pytest.raises(InvalidParameter, match="noise"):
        MechanismRecord("q", "gaussian", 1.0, noise="public")
