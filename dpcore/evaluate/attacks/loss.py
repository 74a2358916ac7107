"""Attacks with the model in hand: the data owner auditing their own VAE-family model.

- `loss`: Hilprecht et al. (2019, §4.2, the reconstruction attack): encode x, draw z from the
  posterior q(z|x) several times, decode, and average the model's own reconstruction loss
  −log p(x|z); a training row is reconstructed better. Score = −mean loss.
- `loss_reference`: the same loss calibrated by a reference model of the same class and settings
  trained on the reference rows (never targets) — score = loss_ref(x) − loss_target(x) (the
  per-example calibration of Watson et al. 2022 / GAN-Leaks' Eq. 7 for a model in hand). It costs
  one more training on the reference rows: `reference_cost_seconds` estimates it beforehand.

Models without an encoder (GS-WGAN) have no per-record loss; GS-WGAN's critics, which could score a
record, are not saved with the run, so no critic attack is possible on a saved run.
"""
from __future__ import annotations

import dataclasses
import math
import time

import numpy as np
import torch

from dpcore.errors import InvalidParameter
from dpcore.evaluate.attacks.result import attack_result
from dpcore.evaluate.attacks.targets import Targets

DRAWS = 8


def has_loss(model) -> bool:
    return getattr(model, "encoder", None) is not None or hasattr(model, "pca") and hasattr(model, "_codes")


def record_loss(model, data, draws: int = DRAWS, seed: int = 0, batch: int = 2048) -> np.ndarray:
    """Per row: −log p(x|z) of the model (its own likelihood), averaged over `draws` posterior
    draws z ~ q(z|x) (one draw at the mean when the encoder is deterministic)."""
    if not has_loss(model):
        raise InvalidParameter(f"{getattr(model, 'name', 'this model')} has no encoder: no per-record loss")
    X = model._rows(data)
    mu = model.encode(data)
    logvar = model.encode_logvar(data) if hasattr(model, "encode_logvar") else np.full_like(mu, -np.inf)
    std = np.exp(0.5 * np.asarray(logvar, np.float64)).astype(np.float32)
    decoder = model.latent_decoder() if hasattr(model, "latent_decoder") else model.decoder
    dev = model.device
    gen = torch.Generator(device="cpu").manual_seed(seed)
    k = 1 if not np.any(std > 0) else int(draws)
    out = np.zeros(len(X), np.float64)
    with torch.no_grad():
        for i in range(0, len(X), batch):
            x = torch.as_tensor(X[i:i + batch], device=dev)
            m = torch.as_tensor(mu[i:i + batch], device=dev)
            s = torch.as_tensor(std[i:i + batch], device=dev)
            tot = torch.zeros(len(x), dtype=torch.float64, device=dev)
            for _ in range(k):
                z = m + s * torch.randn(m.shape, generator=gen).to(dev)
                tot += model._recon(decoder(z), x).double()
            out[i:i + batch] = (tot / k).cpu().numpy()
    return out


def loss_attack(model, targets: Targets, *, delta=0.0, confidence=0.95, seed: int = 0):
    t0 = time.perf_counter()
    mem = -record_loss(model, targets.members, seed=seed)
    non = -record_loss(model, targets.non_members, seed=seed + 1)
    return attack_result("loss", "the model (encoder + decoder)", mem, non, delta=delta, confidence=confidence,
                         seconds=time.perf_counter() - t0, notes=[f"reconstruction loss, {DRAWS} posterior draws"],
                         member_index=targets.member_index, non_member_index=targets.non_member_index)


def reference_config(model, n_reference: int, seed: int = 1):
    """The model's own settings, with a batch that fits the reference rows and another seed."""
    cfg = model.config
    changes = {"seed": seed}
    if hasattr(cfg, "batch_size") and cfg.batch_size >= n_reference // 2:
        changes["batch_size"] = max(2, n_reference // 4)
    return dataclasses.replace(cfg, **changes)


def reference_cost_seconds(train_seconds: float | None, n_train: int, n_reference: int) -> float | None:
    """Training time scales with rows × epochs; the reference model has the run's epochs."""
    if train_seconds is None or not math.isfinite(train_seconds) or n_train <= 0:
        return None
    return float(train_seconds) * n_reference / n_train


def train_reference(model, reference, seed: int = 1):
    ref = type(model)(reference_config(model, reference.n, seed))
    ref.fit(reference)
    return ref


def loss_reference_attack(model, targets: Targets, *, delta=0.0, confidence=0.95, seed: int = 0,
                          reference_model=None):
    t0 = time.perf_counter()
    ref = reference_model if reference_model is not None else train_reference(model, targets.reference)
    trained = time.perf_counter() - t0
    mem = record_loss(ref, targets.members, seed=seed) - record_loss(model, targets.members, seed=seed)
    non = record_loss(ref, targets.non_members, seed=seed + 1) - record_loss(model, targets.non_members, seed=seed + 1)
    return attack_result("loss-reference", "the model + a reference model trained on reference rows", mem, non,
                         delta=delta, confidence=confidence, seconds=time.perf_counter() - t0,
                         notes=[f"reference model: {targets.reference.n} rows, trained in {trained:.1f} s"],
                         member_index=targets.member_index, non_member_index=targets.non_member_index)
