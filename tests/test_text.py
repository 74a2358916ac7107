"""Text from data is never markup: Markdown escaping and HTML/Plotly label escaping."""
import numpy as np
import pandas as pd

from dpcore.text import html_text, md

PAYLOADS = ["![t](http://127.0.0.1:9/track.png)", "<a href='http://127.0.0.1:9/x'>click</a>",
            "<span style='color:red'>red</span>", "[link](http://127.0.0.1:9/)", ":red[alarm]", "a\nb"]


def test_md_leaves_no_markdown():
    import html
    import string

    for p in PAYLOADS:
        out = md(p)
        assert "\n" not in out and html.unescape(out).replace("\u2060", "") == " ".join(p.split())
        assert "://" not in html.unescape(out) and "www." not in html.unescape(md("www.x.org"))
        # no punctuation is left for Markdown (links, images, autolinks, directives) to act on
        assert not set(out.replace("&#", "").replace(";", "")) & set(string.punctuation), out


def test_plotly_labels_from_data_are_escaped():
    from dpcore.data import dataset_from_frame
    from dpcore.figures.data import one_way_figure, two_way_heatmap

    col, cat = "<a href='http://127.0.0.1:9/c'>c</a>", "<span style='color:red'>v</span>"
    frame = pd.DataFrame({col: [cat, "b"] * 20, "y": [0, 1] * 20})
    ds = dataset_from_frame(frame, name="<b>x</b>", target="y")
    fig = one_way_figure(ds, ds, col)
    text = fig.to_json()
    assert "<a href" not in text and "<span" not in text
    assert html_text(cat) in list(fig.data[0].x)
    heat = two_way_heatmap(pd.DataFrame(np.zeros((1, 1)), index=[col], columns=[cat]))
    assert "<a href" not in heat.to_json() and "<span" not in heat.to_json()
