"""The one usefulness measure: balanced accuracy of one classifier trained on the synthetic rows and
tested on the real held-out rows, beside the same classifier trained on the real rows, with its
chance level and the sentence that says what it means.

Why one: a run once showed "Quality 79 %" (Compare), "balanced accuracy 0.54 ± 0.03" (the release)
and "mean auroc 0.400 (47 % of it)" (the private report), and nobody could tell if it was useful.
Every page, the Runs table, both reports and the released score now read this module.

Why balanced accuracy, not AUROC: the usefulness score that can be shared
(`dpcore.evaluate.released_score`) releases, per class of the target, the counts of held-out rows
predicted right and wrong, each plus Gaussian noise: one held-out row moves one count by 1, whatever
the classifier. Balanced accuracy — the mean over classes of the share predicted right — is computed
from those counts alone, so the shared value is this very number with noise. AUROC ranks every
positive against every negative: one row moves it by up to 1/(the smaller class's count), a private
number, so it has no fixed sensitivity to calibrate noise to. AUROC stays in the utility table as a
detail. Balanced accuracy is 1/K for any guess that ignores the row (K = the target's declared
levels), however rare a class: plain accuracy of "always no" on a 12 %-yes target reads 0.88.

Why logistic regression: it is the released score's classifier (`released_score.SCORE_CLASSIFIER`);
`dpcore.evaluate.scoring.score_utility` computes the exact value from the same
`held_out_class_counts` the release adds noise to. Images have no released score; there the
measure is the image classifier's (`IMAGE_CLASSIFIER`) balanced accuracy. This module only
does arithmetic and words (numpy, nothing else), so the Runs table reads it without torch.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from dpcore.io import finite

METRIC = "balanced_accuracy"
NAME = "balanced accuracy"
IMAGE_CLASSIFIER = "mlp"
SAVED_KEY = "usefulness"  # in a saved utility dict (evaluation.json's "utility")


@dataclass(frozen=True)
class Usefulness:
    """value: synthetic → real; reference: real → real (None without real training rows);
    chance: 1/K; target: the target column's name (None for images)."""

    value: float | None
    reference: float | None
    chance: float | None
    classifier: str
    target: str | None = None
    metric: str = METRIC

    def to_dict(self) -> dict:
        return asdict(self)


def from_counts(counts) -> float | None:
    """Balanced accuracy from a (K, 2) table of (right, wrong) per class: the mean over the classes
    present in the held-out rows of right / (right + wrong); None when no class is present."""
    c = np.asarray(counts, dtype=float).reshape(-1, 2)
    total = c.sum(axis=1)
    present = total > 0
    return float(np.mean(c[present, 0] / total[present])) if present.any() else None


def from_predictions(truth, pred, k: int) -> float | None:
    """Balanced accuracy of predicted classes `pred` against `truth` (K = k classes)."""
    truth, pred = np.asarray(truth, dtype=np.int64), np.asarray(pred, dtype=np.int64)
    right = np.bincount(truth[pred == truth], minlength=k)
    return from_counts(np.stack([right, np.bincount(truth, minlength=k) - right], axis=1))


def of_counts(counts, reference_counts, k: int, classifier: str, target: str | None = None) -> Usefulness:
    """The measure from (K, 2) tables of (right, wrong) per class: synthetic → real and, when
    given, real → real; chance 1/k (k: the target's declared levels)."""
    ref = None if reference_counts is None else from_counts(reference_counts)
    return Usefulness(from_counts(counts), ref, 1.0 / k if k >= 2 else None, classifier, target)


def of_values(value, reference, k: int, classifier: str, target: str | None = None) -> Usefulness:
    """The measure from balanced accuracies already computed (the image classifier's)."""
    return Usefulness(finite(value), finite(reference), 1.0 / k if k >= 2 else None, classifier, target)


def from_saved(utility: dict | None) -> Usefulness | None:
    """The measure kept in a saved utility dict; None for one saved before it (re-score the run)."""
    d = (utility or {}).get(SAVED_KEY)
    if not isinstance(d, dict) or d.get("metric") != METRIC:
        return None
    target = d.get("target")
    return Usefulness(finite(d.get("value")), finite(d.get("reference")), finite(d.get("chance")),
                      str(d.get("classifier") or ""), target if isinstance(target, str) else None)


# ----------------------------------------------------------------------------- words
def verdict(value: float | None, reference: float | None, chance: float | None) -> str:
    """How well synthetic rows predict, in words: the share of the way from guessing to the real rows."""
    if value is None or chance is None:
        return "could not be measured"
    if value <= chance + 0.02:
        return "no better than guessing"
    if reference is None or reference <= chance:
        return "better than guessing"
    share = (value - chance) / (reference - chance)
    return ("as well as the real rows" if share >= 0.97 else "almost as well as the real rows" if share >= 0.8
            else "less well than the real rows" if share >= 0.4 else "only a little better than guessing")


def sentence(u: Usefulness | None) -> str:
    """One sentence a non-expert reads, e.g. "Synthetic rows predict deny almost as well as the real
    rows (balanced accuracy 0.77 vs 0.85; 0.50 = guessing)."."""
    if u is None or u.value is None:
        return "Usefulness could not be measured: the synthetic rows have too few classes, or there is no target."
    what = u.target or "the class"
    words = verdict(u.value, u.reference, u.chance)
    ref = "" if u.reference is None else f" vs {u.reference:.2f} for the real rows"
    guess = "" if u.chance is None else f"; {u.chance:.2f} = guessing"
    return f"Synthetic rows predict {what} {words} ({NAME} {u.value:.2f}{ref}{guess})."


def noisy_text(value: float, plus_minus: float | None) -> str:
    """A released value as shown everywhere: "0.74 ± 0.03"."""
    return f"{value:.2f}" + ("" if plus_minus is None else f" ± {plus_minus:.2f}")


def shared_words(score, eps: float, run_epsilon: float) -> str:
    """Where the released score's ε sits: inside the run's ε (parallel: it reads only held-out people,
    whom the training never saw), or added to it (sequential)."""
    if score.partition == "heldout":
        return (f"It is part of the run's ε = {run_epsilon:.2f}, not extra spending: it reads only the held-out "
                "people, whom the training never saw.")
    return f"Sharing it spent ε = {eps:.2g}, included in the run's ε = {run_epsilon:.2f}."


def beside(exact: float | None, score) -> str:
    """The shared noisy value beside the exact private one, for the data owner's pages: "The
    shareable release shows 0.74 ± 0.03: the same number (0.77 here), with noise for sharing."."""
    shared = getattr(score, "balanced_accuracy", None)
    if shared is None:
        return ""
    here = "" if exact is None else f" ({exact:.2f} here)"
    return (f"The shareable release shows {noisy_text(shared, score.balanced_plus_minus)}: the same "
            f"number{here}, with noise for sharing.")


def tiles(u: Usefulness | None, score=None) -> dict:
    """What a page shows (Compare; the Story can call it too): "label"/"value" (synthetic → real),
    "reference_label"/"reference" and "delta" (None when a side is missing: no "+nan" tile),
    "sentence" and "shared" (the released value beside the exact one, "" when none was released)."""
    value = None if u is None else u.value
    ref = None if u is None else u.reference
    return {"label": f"{NAME.capitalize()}, synthetic → real", "value": "—" if value is None else f"{value:.2f}",
            "reference_label": f"{NAME.capitalize()}, real → real",
            "reference": None if u is None or u.reference is None else f"{ref:.2f}",
            "delta": None if value is None or ref is None else f"{value - ref:+.2f}",
            "sentence": sentence(u), "shared": "" if score is None else beside(value, score)}
