"""A run's two HTML exports: the shareable release (only what ε covers) and the private report.

Why two: the full report embeds real training rows, raw per-step losses, the real → real reference
and membership-attack statistics, none of which the run's ε covers (`dpcore.privacy.coverage`).
The shareable release holds only covered outputs — settings, ε/δ and the ledger breakdown, the
bound curves the ledger implies, synthetic samples drawn in a fixed number (so they do not reveal
the row count) — and lists what it omits. The private report keeps everything and marks every
section as private, for the data owner only. Both are one self-contained file (plotly.js once).
"""
from __future__ import annotations

import html
import math
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from dpcore.privacy import coverage
from dpcore.release_html import CSS as _CSS
from dpcore.release_html import (  # noqa: F401 - the reports' tables, re-exported for their callers
    TABLE_ROWS,
    cell,
    fmt,
    folded,
    numbers_table,
    rows_table,
    settings_in_words,
    shown_decimals,
    utility_table,
)

KINDS = ("shareable", "private")
PRIVATE_MARK = "PRIVATE — contains data not covered by ε; for the data owner only, do not share."
REPORT_ROWS = 1000  # default synthetic rows in a report's download: small, and not the training size


def synthetic_rows_section(data, name: str) -> str:
    """The first rows of a synthetic table and all of its rows as an embedded CSV download (formula
    cells neutralised, values already rounded to the declared precision by the decoder)."""
    import base64

    from dpcore.runs.export import csv_bytes

    if data.is_image:
        return ""
    link = base64.b64encode(csv_bytes(data)).decode()
    fname = html.escape(f"{name}-synthetic-{data.n}.csv", quote=True)
    return (f"<p><a download='{fname}' href='data:text/csv;base64,{link}'>Download the {data.n:,} synthetic rows "
            f"(CSV)</a> — first {min(TABLE_ROWS, data.n)} below.</p>"
            + rows_table(data.to_frame(as_written=True), schema=getattr(data, "schema", None)))


def summary_list(items: Sequence[tuple[str, str]]) -> str:
    """The summary block that opens a report: (label, plain-text sentence) pairs, escaped here."""
    lis = "".join(f"<li><b>{html.escape(k)}:</b> {html.escape(v)}</li>" for k, v in items)
    return f"<div class='summary'><h2>Summary</h2><ul>{lis}</ul></div>"


def coverage_sentence(private: bool, seeded_noise: bool = False, preprocessing_private: bool = True) -> str:
    """What the run's ε covers in one sentence, in the catalogue's words (`dpcore.privacy.coverage`)."""
    if seeded_noise:
        return f"{coverage.NOT_PRIVATE.capitalize()}: {coverage.SEEDED_EXPLAINER}"
    if not private:
        return "Nothing: this model was trained without differential privacy (ε = ∞)."
    out = ("Covered: " + "; ".join(o.label for o in coverage.covered()) + ". Not covered (data owner only): "
           + "; ".join(o.label for o in coverage.not_covered()) + ".")
    if not preprocessing_private:
        out += " Preprocessing not covered by ε: some bounds or categories were read from the private data."
    return out


def _tidy(fig):
    """A copy of a figure whose titles, tick labels and axis titles are never clipped in the page."""
    import plotly.graph_objects as go

    f = go.Figure(fig)
    m = f.layout.margin
    f.update_layout(margin=dict(l=max(m.l or 0, 60), r=max(m.r or 0, 30), t=max(m.t or 0, 70), b=max(m.b or 0, 60)),
                    title=dict(automargin=True, yref="container"))
    f.update_xaxes(automargin=True)
    f.update_yaxes(automargin=True)
    return f


SCHEMA_DEPENDENT = ("synthetic_rows", "model_weights")  # carry the schema's categories and ranges
INFERRED_WHY = ("its categories and value ranges come from a schema read from the private rows (a category "
                "seen in one row, the exact min/max), outside the ledger")
GREEN_BADGE = "Shareable release — every output in this file is listed as covered by ε below."


def coverage_table(private: bool, preprocessing_private: bool = True) -> str:
    """The catalogue for this run: each output kind, covered or not, and why. With an inferred
    schema the synthetic rows and the generator are not covered (they carry its categories and
    min/max)."""
    def row(o) -> str:
        inferred = not preprocessing_private and o.key in SCHEMA_DEPENDENT
        ok = o.covered and private and not inferred
        why = INFERRED_WHY if inferred and o.covered and private else o.why
        return (f"<tr><td>{html.escape(o.label)}</td><td>{'covered' if ok else 'not covered'}</td>"
                f"<td>{html.escape(why)}</td></tr>")

    rows = "".join(row(o) for o in coverage.CATALOGUE)
    note = "" if private else "<p class='note'>ε = ∞: this model was trained without DP, so nothing is covered.</p>"
    return (f"<p class='note'>{html.escape(coverage.NEIGHBOURING)}</p>{note}"
            f"<table><tr><th>output</th><th>ε</th><th>why</th></tr>{rows}</table>")


def uncovered_parts(bundle) -> list[str]:
    """What keeps a shareable release from being wholly covered by ε, in the badge's words
    ([]: every output in it is covered). Reads the model and its ledger only, no real row."""
    out = []
    if not bundle.private:
        out.append("ε = ∞ (trained without differential privacy: nothing is covered)")
    elif bundle.seeded_noise:
        out.append("seeded noise (reproducible from the seed, a debugging mode: ε is no guarantee)")
    if not preprocessing_private(bundle):
        from dpcore.release_words import read_from_rows

        out.append(f"inferred schema ({read_from_rows(_schema(bundle))}, read from the private rows, are in "
                   "the synthetic rows and the generator)")
    return out


def _schema(bundle):
    """The run's schema as its saved model's template keeps it (never the training rows': the
    release reads no real row), or None."""
    return getattr(getattr(bundle.model, "template", None), "schema", None)


def preprocessing_private(bundle) -> bool:
    """False when the run's schema (bounds, categories) was read from the private rows: the saved
    model's template says so; the training split is asked only when the model has no template."""
    template = getattr(bundle.model, "template", None)
    if template is not None and hasattr(template, "preprocessing_private"):
        return bool(template.preprocessing_private)
    return bool(getattr(bundle.train, "preprocessing_private", True))


def page(title: str, intro: str, numbers: dict[str, Any], sections: Sequence[tuple[str, Any]],
         *, private: bool, summary: str = "", uncovered: Sequence[str] = (),
         lead: Sequence[tuple[str, str]] = (),
         items: Sequence[tuple[str, str]] = ()) -> str:
    """One self-contained HTML page. sections: (caption, plotly figure or ready-escaped HTML or None).

    `summary` (ready-escaped HTML, `summary_list`) comes first, right under the title; the numbers
    table and the sections are the details after it. With `lead` (plain text) the summary is that
    paragraph (label, text per line), with `items` and `intro` folded under it (`release_words.lead_summary`). A private
    page repeats `PRIVATE_MARK` above the title, in a bar fixed on every printed page, and above
    every section.
    """
    if lead:
        from dpcore.release_words import lead_summary

        # the release's intro is technical (folded); the private report's warning stays in view
        summary, intro = lead_summary(lead, items, "" if private else intro), intro if private else ""
    mark = f"<div class='private'>{html.escape(PRIVATE_MARK)}</div>" if private else ""
    if private:
        badge = f"<div class='private page'>{html.escape(PRIVATE_MARK)}</div>"
    elif uncovered:  # never green: the badge itself names what ε does not cover
        badge = ("<div class='partial'>Shareable release — NOT covered by ε: "
                 + html.escape("; ".join(uncovered)) + ". See 'What ε covers' below.</div>")
    else:
        badge = f"<div class='shareable'>{html.escape(GREEN_BADGE)}</div>"
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
             f"<style>{_CSS}</style></head><body>", badge, f"<h1>{html.escape(title)}</h1>",
             f"<p class='note'>Generated {datetime.now().isoformat(timespec='seconds')} by the DP Generative "
             f"Workbench. {html.escape(intro)}".rstrip() + "</p>"]
    if summary:
        parts += [mark, summary, mark, "<h2>Details</h2>"]
    parts.append(numbers_table(numbers))
    first = True
    for caption, content in sections:
        if content is None:
            continue
        parts += [mark, f"<h2>{html.escape(caption)}</h2>"]
        if isinstance(content, str):
            parts.append(content)
        else:
            parts.append(_tidy(content).to_html(full_html=False, include_plotlyjs=first))
            first = False
    parts.append("</body></html>")
    return "\n".join(parts)


def _run_facts(bundle) -> dict[str, Any]:
    s = bundle.run.summary()
    return {"run": s.name, "model": s.model, "dataset": s.dataset, "status": s.status,
            "ε (accountant)": s.epsilon, "δ": s.delta if bundle.private else "—"}


def settings_section(bundle) -> tuple[str, str]:
    """The run's settings; a size-dependent auto field reads "auto → V from ñ" (config.json keeps it
    auto, the model the value the run resolved from its released noisy count)."""
    params = dict(bundle.run.config.params)
    trained = getattr(getattr(bundle, "model", None), "config", None)
    for name in getattr(type(getattr(bundle, "model", None)), "size_auto_fields", ()):
        if params.get(name) is None and getattr(trained, name, None) is not None:
            params[name] = f"auto → {getattr(trained, name)} from ñ"
    config_class = type(getattr(getattr(bundle, "model", None), "config", None))
    if not hasattr(config_class, "__dataclass_fields__"):
        config_class = None
    return ("Settings", folded(f"The {len(params)} settings this model was trained with",
                               settings_in_words(params, config_class)))


def summary_items(bundle, *, n_synthetic: int) -> list[tuple[str, str]]:
    """The summary lines every report opens with: model, data, ε and what it covers."""
    s = bundle.run.summary()
    model = getattr(bundle.model, "label", None) or s.model
    eps = ("∞ (not private)" if not bundle.private or math.isinf(s.epsilon) else
           f"{s.epsilon:.3g} with δ = {s.delta:.1e}, from the accountant over the privacy ledger")
    return [("Model", f"{model} ({s.model})"), ("Data", f"{s.dataset}; {n_synthetic:,} synthetic rows in this file"),
            ("ε", eps), ("What ε covers", short_coverage(bundle.private, bundle.seeded_noise,
                                                          preprocessing_private(bundle)))]


def short_coverage(private: bool, seeded_noise: bool = False, preprocessing_private: bool = True) -> str:
    """What ε covers in three short sentences (the full catalogue is further down the page)."""
    if seeded_noise or not private:
        return coverage_sentence(private, seeded_noise, preprocessing_private)
    first = ("Covered: the synthetic rows, the model and these numbers." if preprocessing_private else
             "Covered: the training itself; but the column ranges and categories were read from the "
             "private rows, which ε does not cover.")
    return (f"{first} Not in this file: scores against real rows and attack results (the data owner's "
            "private report). Adding or removing any one person changes what is here only a little, "
            "by at most the factor e^ε (plus a chance δ).")


def _ledger_sections(bundle) -> list[tuple[str, Any]]:
    from dpcore import figures
    from dpcore.evaluate.bounds import bound_curves
    from dpcore.privacy.budget import budget_share

    ledger = bundle.run.ledger()
    if not (bundle.private and len(ledger)):
        return []
    rows, _, _ = budget_share(ledger, bundle.delta)
    table = [{"mechanism": r["name"], "kind": r["mechanism"], "noise multiplier σ/Δ": r["noise_multiplier"],
              "sampling rate q": r["sampling_rate"], "steps": r["steps"], "share of budget": r["share"]}
             for r in rows]
    import pandas as pd

    bounds = figures.mia_tradeoff_figure([], bound_curves(ledger, bundle.delta))
    bounds.update_layout(title="What the guarantee allows an attacker (no attack data in this file)")
    return [("Privacy ledger", folded(f"Every noisy step of the training ({len(table)} ledger records)",
                                      rows_table(pd.DataFrame(table), max_rows=len(table)))),
            ("Privacy budget by mechanism", figures.budget_share_figure(ledger, bundle.delta)),
            ("Accounting comparison", figures.composition_figure(ledger, bundle.delta)),
            ("Trade-off bounds from the ledger (dotted: approximation, not a bound)", bounds)]


def usefulness_section(bundle, target: str | None = None) -> tuple[str, str] | None:
    """The shared usefulness score's section (`release_words.usefulness_section`); None when the run
    shared none."""
    from dpcore.release_words import usefulness_section as section

    return section(bundle, target)


def shareable_report(bundle, seed: int = 0, rows: int = REPORT_ROWS) -> str:
    """The release: settings, ε/δ and the ledger, `rows` synthetic rows (a number the user picks,
    never the training size), and what is deliberately left out.

    Reads no real row and no evaluation: only the model, its ledger, its settings and the noisy
    counts of a released usefulness score (`usefulness_section`).
    """
    from dpcore.figures import class_mean_images_figure, image_grid_figure

    syn = bundle.model.sample(rows, seed=seed)
    sections: list[tuple[str, Any]] = []
    if syn.is_image:
        grid = image_grid_figure(syn, n=64, seed=0)
        grid.update_layout(title="Synthetic samples")
        sections.append(("Synthetic samples", grid))
        if syn.labels is not None and syn.n:
            means = class_mean_images_figure(syn)
            means.update_layout(title="Synthetic: mean image per generated class")
            sections.append(("Synthetic: mean image per generated class", means))
    else:
        sections.append(("Synthetic rows", synthetic_rows_section(syn, bundle.run.name)))
    useful = usefulness_section(bundle, getattr(getattr(syn, "schema", None), "target", None))
    if useful is not None:
        sections.append(useful)
    sections.append(settings_section(bundle))
    sections += _ledger_sections(bundle)
    inferred = not preprocessing_private(bundle)
    sections.append(("What ε covers", coverage_table(bundle.private and not bundle.seeded_noise, not inferred)))
    omitted = "".join(f"<li>{html.escape(o.label)} — {html.escape(o.why)}</li>" for o in coverage.not_covered()
                      if not (inferred and o.key == "data_preprocessing"))
    from dpcore.release_words import read_from_rows

    read = read_from_rows(_schema(bundle))
    included = (f"<p class='note'>Included although not covered: the schema was inferred from the private "
                f"rows, so {html.escape(read)} (a category even if seen in a single row; a range's exact "
                "ends) are in the synthetic rows and the generator.</p>") if inferred else ""
    sections.append(("Deliberately omitted (not covered by ε)", f"<ul>{omitted}</ul>{included}<p class='note'>The "
                     "data owner's private report holds the evaluation against real data and the attack.</p>"))
    intro = ("Shareable release: only outputs covered by ε are included. ε is the accountant's number for the "
             f"run's privacy ledger. {coverage.NEIGHBOURING}")
    if not bundle.private:
        intro = ("ε = ∞: this model was trained without differential privacy, so nothing in this file is "
                 "covered by a guarantee — the synthetic rows may reveal training rows.")
    elif bundle.seeded_noise:
        intro = f"{coverage.NOT_PRIVATE.capitalize()}. {coverage.SEEDED_EXPLAINER}"
    if inferred:
        intro += f" Read from the private rows, not covered by ε: {read}."
    nums = {**_run_facts(bundle), "synthetic rows drawn for this release": syn.n}
    from dpcore.release_words import shareable_lead

    return page(f"Shareable release: {bundle.run.name}", intro, nums, sections, private=False,
                lead=shareable_lead(bundle, syn, inferred=inferred), items=summary_items(bundle, n_synthetic=syn.n),
                uncovered=uncovered_parts(bundle))


def private_report(bundle, numbers: dict[str, Any], figures: Sequence[tuple[str, Any]],
                   notes: Sequence[str] = (), summary: Sequence[tuple[str, str]] = (),
                   lead: Sequence[tuple[str, str]] = ()) -> str:
    """The data owner's full report: the summary first (`lead`, plain words, with the `summary`
    lines folded under it), every section marked private, the catalogue at the end."""
    intro = ("Private report: it contains real rows, raw losses, evaluation against real data and attack "
             "statistics, which ε does not cover (see 'What ε covers'). Share the shareable release instead.")
    sections = [("Notes", "".join(f"<p class='note'>{html.escape(n)}</p>" for n in notes))] if notes else []
    if bundle.seeded_noise:
        intro = f"{coverage.NOT_PRIVATE.capitalize()}. {coverage.SEEDED_EXPLAINER} " + intro
    sections += list(figures) + [settings_section(bundle),
                                 ("What ε covers", coverage_table(bundle.private and not bundle.seeded_noise,
                                                                  preprocessing_private(bundle)))]
    if lead:
        return page(f"Private report: {bundle.run.name}", intro, numbers, sections, private=True, lead=lead,
                    items=summary)
    return page(f"Private report: {bundle.run.name}", intro, numbers, sections, private=True,
                summary=summary_list(summary) if summary else "")
