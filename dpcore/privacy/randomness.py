"""Randomness a privacy proof relies on: secret generators, one independent stream per mechanism.

Why: a Gaussian mechanism hides a row only if the attacker cannot re-draw its noise. Seeding the
noise from the run's public `seed` (stored in config.json, model.json and the run name) lets an
attacker who knows every row but one subtract the noise exactly and read that row off the release;
two runs of an ε sweep with one seed share a draw, so their difference gives the exact row sum.

`NoiseSource.secret()` (what private models use) gives every named stream its own 256 bits of OS
entropy (`secrets`), never stored, logged or derived from the seed:
- numpy: PCG64 (128-bit state and increment) through a SeedSequence of that entropy;
- torch CPU: `manual_seed` takes 64 bits only, so the mt19937 state (624 words of 32 bits, the
  layout of torch's CPUGeneratorImplState, checked on torch 2.13) is filled from the entropy
  and the generator twists it before its first output;
- torch CUDA (Philox): a 64-bit key plus a random offset (multiple of 4), 126 bits in all.
`NoiseSource.seeded(seed)` is the debugging mode (`reproducible_noise=True`): every stream is
derived from (seed, stream name); such a run is NOT private and its ledger records say "seeded".
`noise_kind(generator)` tells which kind a generator is; mechanisms record it in the ledger.

Defended: re-drawing the noise from anything published (seed, config, run name, another run).
Not defended: attacks on floating-point sampling (Mironov 2012: the low bits of a float Gaussian
leak the unnoised value); side channels; an attacker who sees raw generator output (mt19937 and
PCG64 are not cryptographic PRNGs; here the attacker only ever sees noised releases).
Public randomness stays on the seed: weight initialisation, reparameterisation draws, post-
processing, evaluation splits and `sample(n, seed)`.
"""
from __future__ import annotations

import hashlib
import secrets
import weakref

import numpy as np

from dpcore.errors import InvalidParameter

SECRET, SEEDED = "secret", "seeded"
NOISE_KINDS = (SECRET, SEEDED)
ENTROPY_BITS = 256          # per stream; PCG64 keeps 256 bits of state, mt19937 19 968
_MT_WORDS = 624             # mt19937 state words
_MT_STATE_BYTES = 5056      # sizeof(CPUGeneratorImplState) in torch 2.x
_MT_STATE_OFFSET = 24       # the_initial_seed (8), left (4), seeded (4), next (8), then state[624]


class _SecretNumpy(np.random.Generator):
    """Marker type: a numpy Generator seeded from OS entropy by this module (`noise_kind` says
    "secret"; layers below dpcore.privacy, which cannot import it, read `dp_noise_kind`)."""

    dp_noise_kind = SECRET


_SECRET_TORCH: weakref.WeakSet = weakref.WeakSet()


def noise_kind(generator) -> str:
    """"secret" for a generator this module seeded from OS entropy, else "seeded" (including
    torch's global RNG, whose default seed is a constant, and any user-seeded generator)."""
    if isinstance(generator, _SecretNumpy):
        return SECRET
    try:
        return SECRET if generator in _SECRET_TORCH else SEEDED
    except TypeError:  # not weak-referenceable: not one of ours
        return SEEDED


def combined_kind(*generators) -> str:
    """"secret" only when every generator is secret (one seeded draw suffices to attack)."""
    return SECRET if all(noise_kind(g) == SECRET for g in generators) else SEEDED


def _name_words(name: str) -> list[int]:
    if not isinstance(name, str) or not name:
        raise InvalidParameter(f"stream name must be a non-empty string, got {name!r}")
    digest = hashlib.sha256(name.encode()).digest()
    return [int.from_bytes(digest[i:i + 4], "little") for i in range(0, 32, 4)]


class NoiseSource:
    """Named, independent random streams: secret (OS entropy) or seeded (debug, not private).

    Each call makes a fresh stream; ask once per mechanism (e.g. "dp-pca", "dp-sgd-noise").
    """

    def __init__(self, seed: int | None = None):
        if seed is not None and (isinstance(seed, bool) or int(seed) != seed or seed < 0):
            raise InvalidParameter(f"seed must be a non-negative integer or None, got {seed!r}")
        self._seed = None if seed is None else int(seed)

    @classmethod
    def secret(cls) -> NoiseSource:
        return cls(None)

    @classmethod
    def seeded(cls, seed: int) -> NoiseSource:
        return cls(seed)

    @classmethod
    def for_config(cls, config, private: bool = True) -> NoiseSource:
        """Secret for a private model unless its config asks for `reproducible_noise` (debug);
        non-private models (ε = ∞) keep their seed, so their runs repeat exactly."""
        if private and not getattr(config, "reproducible_noise", False):
            return cls.secret()
        return cls.seeded(getattr(config, "seed", 0))

    @property
    def kind(self) -> str:
        return SECRET if self._seed is None else SEEDED

    def __repr__(self) -> str:  # never shows entropy; the seed is public anyway
        return f"NoiseSource({self.kind})"

    def _sequence(self, name: str) -> np.random.SeedSequence:
        words = _name_words(name)
        if self._seed is None:
            return np.random.SeedSequence(secrets.randbits(ENTROPY_BITS))
        return np.random.SeedSequence([self._seed & 0xFFFFFFFF, self._seed >> 32, *words])

    def numpy(self, name: str) -> np.random.Generator:
        """A numpy Generator (PCG64) for stream `name`."""
        bits = np.random.PCG64(self._sequence(name))
        return _SecretNumpy(bits) if self._seed is None else np.random.Generator(bits)

    def numpy_streams(self, name: str, count: int) -> list[np.random.Generator]:
        """`count` independent numpy streams (SeedSequence.spawn of one stream's sequence)."""
        cls = _SecretNumpy if self._seed is None else np.random.Generator
        return [cls(np.random.PCG64(s)) for s in self._sequence(name).spawn(int(count))]

    def torch(self, name: str, device="cpu"):
        """A torch.Generator on `device` for stream `name` (see the module docstring)."""
        import torch

        device = torch.device(device)
        words = self._sequence(name).generate_state(_MT_WORDS, np.uint32)
        if device.type == "cpu":
            gen = _mt19937_generator(words)
        else:
            gen = torch.Generator(device=device)
            gen.manual_seed(int(words[0]) | int(words[1]) << 32)
            gen.set_offset(4 * (int(words[2]) | int(words[3] & 0x3FFFFFFF) << 32))
        if self._seed is None:
            _SECRET_TORCH.add(gen)
        return gen


def _mt19937_generator(words: np.ndarray):
    """A CPU torch.Generator whose whole mt19937 state is `words` (624 × 32 bits).

    left = 1 makes the first draw twist the state, as after `manual_seed`; `seeded` must be 1.
    The layout is checked by reading the state back (a torch that changed it fails loudly).
    """
    import torch

    gen = torch.Generator()
    state = gen.get_state().numpy().copy()
    if state.size != _MT_STATE_BYTES:
        raise RuntimeError(f"unknown torch CPU generator state layout ({state.size} bytes)")
    head = np.zeros(3, np.uint64)
    head.view(np.uint32)[2:4] = (1, 1)          # left = 1, seeded = 1 (the_initial_seed = 0)
    state[:16] = head.view(np.uint8)[:16]
    state[16:_MT_STATE_OFFSET] = 0             # next = 0
    end = _MT_STATE_OFFSET + 8 * _MT_WORDS
    state[_MT_STATE_OFFSET:end] = np.asarray(words, np.uint64).view(np.uint8)
    state[end:] = 0                             # no cached normal sample
    gen.set_state(torch.from_numpy(state))
    if not np.array_equal(gen.get_state().numpy(), state):
        raise RuntimeError("torch rejected the mt19937 state written by dpcore.privacy.randomness")
    return gen
