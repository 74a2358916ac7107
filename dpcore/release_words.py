"""The reports' opening in plain words: what the data is, how private, how useful — one paragraph a
board member reads before any technical term — and the shared usefulness score's section.

Why: the shareable release opened with "the accountant's number for the run's privacy ledger",
"Neighbouring datasets" and "keyed hash"; a reader who is not a privacy engineer stopped there. The
technical summary is still in the report, folded under this paragraph. Usefulness is said with the
one measure (`dpcore.evaluate.usefulness`); the shared value is that measure with noise.
"""
from __future__ import annotations

import html
import math
from collections.abc import Sequence

import dpcore.evaluate.usefulness as usefulness

# ε bands a reader is told: common practice calls ε ≤ 1 strong and ε > 10 weak protection
BANDS = ((1.0, "strong"), (3.0, "good"), (10.0, "moderate"))


def epsilon_words(epsilon: float, *, private: bool = True, seeded_noise: bool = False,
                  what: str = "this file") -> str:
    """How private, in two sentences without a technical term (ε named once, with its scale); `what`
    is what the promise is about (the private report's real rows are not: "the synthetic rows")."""
    if seeded_noise:
        return ("None to rely on. This was a debugging run whose random noise can be reproduced, so its "
                "privacy promise does not hold.")
    if not private or not math.isfinite(epsilon):
        return ("None. The model was trained without privacy protection, so the synthetic rows may copy or "
                "reveal real people.")
    strength = next((word for top, word in BANDS if epsilon <= top), "weak")
    scale = f"(ε = {epsilon:.2g}; smaller is more private: 1 or less is strong, above 10 is weak)"
    effect = ("so little that nobody can tell from it whether a given person was in the data"
              if strength in ("strong", "good") else
              "only to a limited degree: it gives limited evidence about whether a person was in the data"
              if strength == "moderate" else
              "noticeably: it may reveal whether a given person was in the data")
    return (f"{strength.capitalize()} {scale}. Adding or removing any one person's record changes what "
            f"{what} shows {effect}.")


def shared_score(bundle):
    """(released score, its own ε) of a private run, or None (none released, or not private)."""
    from dpcore.runs.evaluation import load_evaluation
    from dpcore.runs.run_score import stored_score

    if not bundle.private or bundle.seeded_noise:
        return None
    return stored_score(bundle.run, load_evaluation(bundle.run.path))


def shared_sentence(score, target: str | None) -> str:
    """The released score in plain words: the measure, its noise, what guessing scores."""
    what = target or "the target"
    if score.balanced_accuracy is None and score.per_class is None and score.accuracy is not None:
        return (f"A prediction model trained on these synthetic rows predicts {what} for real people "
                f"kept aside from training with plain accuracy "
                f"{usefulness.noisy_text(score.accuracy, score.plus_minus)} (a score shared before the "
                f"{usefulness.NAME} the data owner's pages show).")
    if score.balanced_accuracy is None:
        return ("A usefulness score was shared, but too few people were kept aside for testing to read it "
                "beside its noise.")
    guess = "" if score.chance is None else f" ({score.chance:.2f} = guessing)"
    return (f"A prediction model trained on these synthetic rows predicts {what} for real people kept "
            f"aside from training with {usefulness.NAME} "
            f"{usefulness.noisy_text(score.balanced_accuracy, score.balanced_plus_minus)}{guess}: the data "
            "owner's usefulness number, with noise added so it can be shared.")


def data_words(bundle, synthetic) -> str:
    """What the data is: the synthetic rows, the model, the table, its columns (the public schema)."""
    s = bundle.run.summary()
    model = getattr(bundle.model, "label", None) or s.model
    if synthetic.is_image:
        return (f"This file shows synthetic images made by {model} from {s.dataset}: made-up images, not "
                "anyone's real one.")
    cols = [str(c.name) for c in getattr(getattr(synthetic, "schema", None), "columns", [])]
    shown = ", ".join(cols[:4]) + (" …" if len(cols) > 4 else "")
    return (f"This file holds {synthetic.n:,} synthetic rows made by {model} from {s.dataset}: made-up records "
            f"with the same {len(cols)} columns ({shown}), not anyone's real record.")


def read_from_rows(schema) -> str:
    """What of the schema was read off the private rows, named per column ("the categories of
    lender and deny"; "the range of lvr"), or the general "the columns' ranges and categories" when
    the schema is not at hand. Why: with DP bounds (the default) only the categories come from the
    rows; a release saying "ranges and categories" overstates what ε leaves out, and hides which
    columns to declare."""
    columns = getattr(schema, "columns", None)
    if not columns:
        return "the columns' ranges and categories"
    read = [c for c in columns if c.origin == "data"]
    cats = [c.name for c in read if not c.is_continuous]
    ranges = [c.name for c in read if c.is_continuous]

    def names(xs):
        xs = [str(x) for x in xs]
        return xs[0] if len(xs) == 1 else f"{', '.join(xs[:-1])} and {xs[-1]}"

    parts = ([f"the categories of {names(cats)}"] if cats else []) + (
        [f"the {'range' if len(ranges) == 1 else 'ranges'} of {names(ranges)}"] if ranges else [])
    return " and ".join(parts) or "the columns' ranges and categories"


Lead = list[tuple[str, str]]  # (label, plain-text sentences): one line each of the first paragraph


def shareable_lead(bundle, synthetic, *, inferred: bool = False) -> Lead:
    """The release's first paragraph (plain text: the page escapes it); `inferred`: the schema was
    read from the private rows (`release.preprocessing_private` is False)."""
    parts = [("What it is", data_words(bundle, synthetic)),
             ("How private", epsilon_words(bundle.run.epsilon, private=bundle.private,
                                           seeded_noise=bundle.seeded_noise))]
    if bundle.private and inferred:
        schema = getattr(synthetic, "schema", None)
        parts.append(("Caution", f"{read_from_rows(schema)} were read from the real rows without that protection."))
    found = shared_score(bundle)
    target = getattr(getattr(synthetic, "schema", None), "target", None)
    parts.append(("How useful", shared_sentence(found[0], target) if found is not None else
                  "No score is shared in this file; the data owner's private report measures it."))
    return parts


def private_lead(bundle, synthetic, evaluation: dict) -> Lead:
    """The private report's first paragraph: the data, how private, the one usefulness sentence and,
    when a score was shared, that it is the same number with noise."""
    s = bundle.run.summary()
    model = getattr(bundle.model, "label", None) or s.model
    test = 0 if bundle.test is None else bundle.test.n
    parts = [("What it is", f"synthetic data made by {model} from {s.dataset} ({bundle.train.n:,} real rows "
                            f"trained on, {test:,} kept aside for testing), and how it compares with them."),
             ("How private", epsilon_words(s.epsilon, private=bundle.private, seeded_noise=bundle.seeded_noise,
                                           what="the synthetic data"))]
    use = usefulness.from_saved(evaluation.get("utility"))
    if use is not None:
        found = shared_score(bundle)
        shared = found is not None and found[0].balanced_accuracy is not None
        parts.append(("How useful", usefulness.sentence(use)
                      + (" " + usefulness.beside(use.value, found[0]) if found is not None and shared else "")))
    return parts


def lead_summary(lead: Sequence[tuple[str, str]], items: Sequence[tuple[str, str]], intro: str = "") -> str:
    """The summary block: the plain paragraph first (a line per part), the technical lines and
    `intro` folded below."""
    lis = "".join(f"<li><b>{html.escape(k)}:</b> {html.escape(v)}</li>" for k, v in items)
    note = f"<p class='note'>{html.escape(intro)}</p>" if intro else ""
    text = "<br>".join(f"<b>{html.escape(k)}:</b> {html.escape(v)}" for k, v in lead)
    return (f"<div class='summary'><h2>Summary</h2><p class='lead'>{text}</p>"
            f"<details><summary>The same in technical terms</summary>{note}<ul>{lis}</ul></details></div>")


def usefulness_section(bundle, target: str | None) -> tuple[str, str] | None:
    """The shared usefulness score: the plain sentence, where its ε sits, and the technical note
    (dpcore.runs.run_score.describe) folded; only its noisy counts and ledger record are read,
    never a real row. None when the run shared none."""
    from dpcore.runs.run_score import describe

    found = shared_score(bundle)
    if found is None:
        return None
    score, eps = found
    target = target or bundle.run.config.data.target
    where = usefulness.shared_words(score, eps, bundle.run.epsilon)
    _, note = describe(score, eps)
    return ("Usefulness (covered by ε)",
            f"<p>{html.escape(shared_sentence(score, target))} {html.escape(where)}</p>"
            f"<details><summary>How this score was shared</summary><p class='note'>{html.escape(note)}</p>"
            "</details>")
