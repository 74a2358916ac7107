"""Text that comes from data, shown literally: never as Markdown, HTML or Plotly markup.

Why one helper: column names, category values, run and dataset names come from files a user did not
write; in Streamlit's Markdown `![t](http://…)` becomes an image the browser fetches, and in Plotly
labels and the HTML report `<a href=…>` or `<span style=…>` become live links and styles. Every place
that puts such text into markup goes through `md` (Streamlit Markdown) or `html_text` (HTML and
Plotly labels: titles, axis titles, tick labels, trace names, table cells).
"""
from __future__ import annotations

import html
import re
import string

_WJ = "\u2060"  # WORD JOINER: invisible, not a word character
_MD_SPECIAL = re.compile("[" + re.escape(string.punctuation) + "]")


def md(text) -> str:
    """`text` as literal Streamlit Markdown: every ASCII punctuation mark as a numeric character
    reference (no links, bare-URL autolinks, images, emphasis, headings, `:color[…]` or `:icon:`),
    line breaks as spaces. GFM turns bare `http://…`, `www.…` and `a@b.c` in *text* into links
    after parsing, so an invisible word joiner (U+2060) breaks those patterns."""
    s = " ".join(str(text).split())
    s = re.sub(r"(?i)www\.", lambda m: m.group()[:3] + _WJ + ".", s.replace(":", ":" + _WJ).replace("@", _WJ + "@"))
    return _MD_SPECIAL.sub(lambda m: f"&#{ord(m.group())};", s)


def html_text(text) -> str:
    """`text` as literal HTML (and Plotly label) text: & < > " ' as entities."""
    return html.escape(str(text), quote=True)


def html_list(values) -> list:
    """`html_text` of each string in `values` (numbers stay numbers, for numeric axes)."""
    return [html_text(v) if isinstance(v, str) else v for v in values]
