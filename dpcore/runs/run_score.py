"""A run's released usefulness score, the store side (the mechanism is dpcore.evaluate.released_score).

Spend it (release a run's score under DP), store it with the run (ledger.json, evaluation.json) and
read it back. Why in the run store: the score is one more mechanism on the run's data, so it is
appended to the run's ledger (the accountant's ε over the whole ledger is the run's ε from then on)
and its noisy counts are kept beside the other scores; the shareable release reads only those noisy
counts (dpcore.release). The maths is dpcore.evaluate.released_score, the one released-score module.
"""
from __future__ import annotations

import math

from dpcore.errors import InvalidParameter
from dpcore.evaluate.released_score import (
    RELEASED_KEY,
    SCORE_CLASSIFIER,
    SCORE_RECORD,
    ReleasedScore,
    from_noisy_class_counts,
    from_noisy_counts,
    held_out_class_counts,
    release_class_counts,
    score_record,
)

DEFAULT_SCORE_EPSILON = 0.1
MAX_SCORE_EPSILON = 10.0  # the page's input allows up to this
# records read before the split from every row; a run saved before they were marked "all" holds
# them unmarked, and its score is then composed sequentially (never an under-count)
ALL_ROWS_RECORDS = ("preprocessing: noisy bounds", "file-size (row limit)")


def _all_rows_marked(ledger) -> bool:
    """Every record that read all rows says so (a run saved before they were marked does not)."""
    return not any(r.name in ALL_ROWS_RECORDS and r.partition != "all" for r in ledger)


def score_partition(ledger, test, key_id: str | None) -> str | None:
    """"heldout" (parallel composition) when the held-out rows come from the file's keyed split,
    drawn by the key the run recorded it trained with (`key_id`: config.json's data.split_key_id),
    and every record that read all rows says so; None (sequential) otherwise. Why the id: a key
    that was deleted and redrawn puts training rows among the "held-out" ones; a run saved before
    key ids records none, and its score composes sequentially (never an under-count)."""
    meta = test.meta or {}
    same_key = key_id is not None and meta.get("split_key_id") == key_id
    return "heldout" if meta.get("split") == "keyed" and same_key and _all_rows_marked(ledger) else None


def keyed_heldout(run, ledger=None) -> bool:
    """What `score_partition` finds once the rows are loaded, told from the run's config and
    `ledger` (default: the run's) alone: the page sets its default before loading anything (a key
    that is not the run's any more is refused when the rows load: dpcore.runs.uploads)."""
    data = run.config.data
    return data.keyed_split and data.split_key_id is not None and _all_rows_marked(
        run.ledger() if ledger is None else ledger)


def default_score_epsilon(run) -> float:
    """The ε a run's score is offered at: where it composes in parallel, the largest (to 0.01 below)
    that leaves the run's ε as it is; DEFAULT_SCORE_EPSILON where it adds to it.

    Why: at 0.1 (σ ≈ 34) a class of ~80 held-out people (300 held out, 28 % readmitted) is below
    twice its noise in ~38 % of releases and gets no balanced accuracy. On a keyed split the score
    composes with the records that read every row (DP bounds, the row count) but not with the
    training, so up to a point it costs the run nothing; that point is found with the accountant
    (`free_score_noise`), not assumed to be the run's ε (a score at the run's ε once took 1.0 to 1.09)."""
    ledger = run.ledger()
    if not keyed_heldout(run, ledger):
        return DEFAULT_SCORE_EPSILON
    check = run.check()  # the run's ε and δ, read once
    z = free_score_noise(ledger, check.delta, check.epsilon)
    if z is None:
        return DEFAULT_SCORE_EPSILON
    from dpcore.privacy.accountant import epsilon as accountant_epsilon
    from dpcore.privacy.ledger import PrivacyLedger

    alone = float(accountant_epsilon(PrivacyLedger([score_record(z, "heldout")]), check.delta))
    return min(max(math.floor(alone * 100) / 100, 0.01), MAX_SCORE_EPSILON)  # what the page shows, never above


def free_score_noise(ledger, delta: float, run_epsilon: float) -> float | None:
    """The smallest noise multiplier of a held-out score record that keeps the accountant's ε over
    `ledger` plus the record at `run_epsilon` (bisection on log σ; the accountant is monotone in
    σ); None when no such σ up to 10⁴ exists or the run's ε is not finite."""
    from dpcore.privacy.accountant import epsilon as accountant_epsilon
    from dpcore.privacy.ledger import PrivacyLedger

    if not (math.isfinite(run_epsilon) and run_epsilon > 0):
        return None

    def fits(z: float) -> bool:
        total = accountant_epsilon(PrivacyLedger([*ledger.records, score_record(z, "heldout")]), delta)
        return total <= run_epsilon * (1 + 1e-12)

    lo, hi = 0.05, 1e4
    if not fits(hi):
        return None
    for _ in range(50):  # σ to a relative 1e-4: far finer than the 0.01 steps of ε shown
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if fits(mid) else (mid, hi)
        if hi / lo < 1 + 1e-4:
            break
    return hi


def score_refusal(bundle) -> str | None:
    """Why this run's release cannot take a usefulness score (None when it can), said in one line
    before any classifier is trained: an image run, no target, no held-out rows, or one already
    released (a second would spend its own ε on top; the run keeps the first)."""
    if bundle.train.is_image:
        return ("a usefulness score is for tables: an image run has no held-out table to classify "
                "(its release shows sample images)")
    if bundle.train.labels is None or bundle.test is None or bundle.test.labels is None:
        return ("the run has no target column: a usefulness score predicts one; choose a target on the Data "
                "page and train again" if bundle.train.labels is None else
                "the run has no held-out rows (test size 0); a usefulness score needs them")
    from dpcore.runs.evaluation import load_evaluation

    found = stored_score(bundle.run, load_evaluation(bundle.run.path))
    if found is not None:
        return (f"this run's release already has a usefulness score (ε = {found[1]:.2g}); a second one would "
                "add its own ε to the run's")
    return None


def release_score(run_dir, epsilon: float = DEFAULT_SCORE_EPSILON, *, classifier: str = SCORE_CLASSIFIER,
                  seed: int = 0, bundle=None) -> dict:
    """Score the run's synthetic rows on its held-out rows, release the noisy counts at `epsilon`
    (the record's own ε by the accountant at the run's δ), append the record to the ledger and store
    the released numbers in evaluation.json. Returns the stored dict (with the run's new ε)."""
    from dpcore.privacy.accountant import calibrate_gaussian
    from dpcore.privacy.accountant import epsilon as accountant_epsilon
    from dpcore.privacy.ledger import PrivacyLedger
    from dpcore.privacy.randomness import NoiseSource
    from dpcore.runs.evaluation import load_bundle, save_evaluation
    from dpcore.runs.verify import require_consistent

    eps = float(epsilon)
    if not (0 < eps < math.inf):
        raise InvalidParameter(f"--score-epsilon must be a finite number > 0, got {epsilon!r}")
    b = bundle if bundle is not None else load_bundle(run_dir, seed=seed)
    run = b.run
    check = require_consistent(run)
    if not check.private:
        raise InvalidParameter("a released score needs a private run (this one's ε is not a guarantee)")
    ledger = run.ledger()
    if ledger.selection is not None:
        raise InvalidParameter("a run released by private selection takes no more records")
    if why := score_refusal(b):
        raise InvalidParameter(why)
    delta = check.delta
    z = calibrate_gaussian(eps, delta)
    partition = score_partition(ledger, b.test, run.config.data.split_key_id)
    counts = held_out_class_counts(b.synthetic, b.test, classifier, seed)
    noisy = release_class_counts(counts, z, NoiseSource.secret().numpy("usefulness-score"),
                                 partition=partition, ledger=ledger)
    index = len(ledger) - 1
    run.save_ledger(ledger, delta, private=True)  # atomic: the record is in before any number is kept
    score = from_noisy_class_counts(noisy, z, classifier, partition)
    record_eps = float(accountant_epsilon(PrivacyLedger([ledger.records[index]]), delta))
    stored = {**score.to_dict(), "record_index": index, "epsilon": record_eps, "delta": delta,
              "run_epsilon": float(accountant_epsilon(ledger, delta))}
    save_evaluation(run.path, **{RELEASED_KEY: stored})
    return stored


def stored_score(run, evaluation: dict) -> tuple[ReleasedScore, float] | None:
    """(score, its ε by the accountant over its own ledger record) from evaluation.json, or None
    when none is stored or its record is not the ledger's (an edited file is never shown)."""
    from dpcore.privacy.accountant import epsilon as accountant_epsilon
    from dpcore.privacy.ledger import PrivacyLedger

    d = evaluation.get(RELEASED_KEY)
    if not isinstance(d, dict):
        return None
    led = run.ledger()
    i = d.get("record_index")
    if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(led):
        return None
    rec = led.records[i]
    if rec.name != SCORE_RECORD or not math.isclose(rec.noise_multiplier, float(d.get("noise_multiplier", -1))) \
            or rec.partition != d.get("partition"):
        return None
    if d.get("per_class") is not None:  # checked on load (dpcore.runs.safety)
        score = from_noisy_class_counts(d["per_class"], rec.noise_multiplier, str(d.get("classifier", "")),
                                        rec.partition)
    else:  # released before per-class counts: (C̃, W̃) only
        score = from_noisy_counts(d["correct"], d["wrong"], rec.noise_multiplier, str(d.get("classifier", "")),
                                  rec.partition)
    return score, float(accountant_epsilon(PrivacyLedger([rec]), run.delta))


def describe(score: ReleasedScore, eps: float) -> tuple[str, str]:
    """(the sentence, the note under it) for the shareable release; from the noisy counts alone."""
    how = ("it composes in parallel with the training (each person is a training row or a held-out row, "
           "never both)" if score.partition == "heldout" else
           "it composes sequentially with the training (this split does not keep each person on one side)")
    if score.balanced_accuracy is not None:
        text = (f"A classifier trained on these rows reaches balanced accuracy {score.balanced_accuracy:.2f} ± "
                f"{score.balanced_plus_minus:.2f} on held-out people (ε = {eps:.2g}); guessing scores "
                f"{score.chance:.2f}.")
        what = ("Balanced accuracy is the mean over the target's classes of the share predicted right, so a guess "
                "that ignores the person scores 1/(number of classes) however rare a class is"
                + (f" (plain accuracy: {score.accuracy:.2f} ± {score.plus_minus:.2f})." if score.accuracy is not None
                   else "."))
    elif score.accuracy is None:
        text = (f"A score on held-out people was released (ε = {eps:.2g}), but its noisy count of held-out "
                f"rows ({score.correct + score.wrong:.0f}) is too small beside its noise to give an accuracy.")
        what = ("Any accuracy read from it would be mostly noise; a score at a larger ε, or more held-out rows, "
                "would give one.")
    else:
        text = (f"A classifier trained on these rows reaches accuracy {score.accuracy:.2f} ± "
                f"{score.plus_minus:.2f} on held-out people (ε = {eps:.2g}).")
        what = ("Accuracy counts every held-out person the same: where one class is rare, always guessing the "
                "common class also scores high" + (" (a class's noisy count was too small for a balanced accuracy)."
                                                   if score.per_class else "."))
    counts = "per class of the target, the counts" if score.per_class else "the counts"
    note = (f"{counts[0].upper()}{counts[1:]} of right and wrong predictions on held-out rows (never used in "
            f"training) were released with their own Gaussian noise (σ = {score.noise_multiplier:.3g}), recorded in "
            f"the privacy ledger; {how}. " + ("± is one standard deviation from that noise and the number of "
                                              "held-out rows; the scores and ± are computed from the noisy counts "
                                              "alone. " if score.accuracy is not None else "")
            + what).strip()
    return text, note
