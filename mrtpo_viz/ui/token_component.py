"""The interactive token view: one ``gr.HTML`` (Gradio 6 ``html_template`` / ``css_template`` / ``js_on_load``) that
draws a :mod:`mrtpo_viz.viz.token_view` payload in the browser.

One row of tokens per verifier, coloured by relevance (Viridis, as the heatmaps); hover a token, or click it (or
focus it with Tab and the arrow keys, then Enter or Space) to pin a detail panel: its relevance to every verifier,
its log-prob with and without each verifier's information, the top predictions both ways and its advantage under
each method. Escape or the panel's button unpins. Use it in any tab::

    view = token_view(heading="A", elem_id="ab-tokens-a")
    button.click(handler, inputs, view)          # the handler returns view_value(payload) (None: the placeholder)
    ...                                          # or gr.update(value=view_value(payload), adv=None)
    other.change(fn, inputs, view)               # fn returns gr.update(adv=advantages_json(...)): only the panel's
                                                 # advantages change, the tokens are not sent again

The payload travels as one JSON string (a dict would reach the browser as a deep reactive object that Gradio
clones and compares element by element: about twice the time from click to drawn on a 2-core machine). The
templates hold no data: in Gradio 6.31 ``${...}`` inside ``html_template`` is evaluated, so token text never goes
there; the script sets it with ``textContent`` only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

import gradio as gr

from ..viz.colours import SCALE
from ..viz.token_view import advantages_entry, encode

_HERE = Path(__file__).resolve().parent
PLACEHOLDER = "Replay a response to see its tokens."


def _scale_stops() -> list[list[int]]:
    """The Viridis stops as [r, g, b], so the token rows match the heatmaps' colours exactly."""
    from plotly.colors import sequential

    hexes = getattr(sequential, SCALE)
    return [[int(h[i : i + 2], 16) for i in (1, 3, 5)] for h in hexes]


def _read(name: str) -> str:
    text = (_HERE / name).read_text(encoding="utf-8")
    if name.endswith((".html", ".css")) and any(bad in text for bad in ("${", "{{", "`", "\\")):
        # both go through Handlebars and a JS template literal in the browser
        raise ValueError(f"{name} must not contain '${{', '{{{{', '`' or backslashes (gr.HTML templates them)")
    return text


HTML_TEMPLATE = _read("token_view.html")
CSS_TEMPLATE = _read("token_view.css")
JS_ON_LOAD = _read("token_view.js").replace("__VIRIDIS__", json.dumps(_scale_stops()))


def view_value(payload: Optional[Mapping[str, Any]]) -> Optional[str]:
    """What a handler returns for a token view: the payload as one JSON string (None: the placeholder)."""
    return encode(payload)


def token_view(
    value: Optional[Mapping[str, Any]] = None,
    *,
    heading: str = "",
    placeholder: str = PLACEHOLDER,
    link: str = "",
    **kwargs,
) -> gr.HTML:
    """A token view; ``heading`` is shown above its rows (e.g. "A" and "B" side by side); views with the same
    ``link`` pin (and unpin) the same position together; ``kwargs`` go to ``gr.HTML`` (``elem_id``, ``label``,
    ``visible``, ...).

    A plain ``gr.HTML``, not a subclass: Gradio writes a ``.pyi`` stub beside the source of every component
    subclass when it is defined, which would leave a stray file in the package (or fail in a read-only install).
    """
    kwargs.setdefault("elem_classes", ["mrtpo-token-view"])
    return gr.HTML(
        view_value(value),
        html_template=HTML_TEMPLATE,
        css_template=CSS_TEMPLATE,
        js_on_load=JS_ON_LOAD,
        apply_default_css=False,
        heading=heading,
        placeholder=placeholder,
        adv=None,
        link=link,
        **kwargs,
    )


def advantages_json(advantages: Optional[Mapping[str, Any]], T: int) -> Optional[str]:
    """The ``adv`` prop: each method's advantage (a number, or T numbers), as the view reads it."""
    entry = advantages_entry(advantages, T)
    return None if entry is None else json.dumps(entry, separators=(",", ":"))
