"""An interactive view of every attention head, for the page and the notebook (chapter 9).

``head_view(tokens, attentions)`` returns an object that Jupyter, Colab and the built website
all display as one self-contained block of HTML, CSS and JavaScript: no CDN, no server, no
widget library. Pick a layer and a head; hover (or focus, or click to pin) a token on the
left, and every token on the right is shaded by the weight with which the hovered token
attends to it, with a line whose opacity is that weight. The weights are printed beside the
keys, so the picture can be read as numbers.

The view only displays weights that a model has already returned
(``BertEncoder(..., need_weights=True).attentions``): there is no second forward path.
"""

from __future__ import annotations

import hashlib
import html
import itertools
import json
import operator
from typing import Sequence

import torch

__all__ = ["head_view", "HeadView"]

_COUNTER = itertools.count()

_STYLE = """
#ID { font-family: var(--pst-font-family-base, sans-serif); margin: 0.5em 0 1em; max-width: 44em; }
#ID .hv-controls { display: flex; flex-wrap: wrap; gap: 1em; align-items: center; margin-bottom: 0.5em; }
#ID .hv-controls select { font: inherit; padding: 0.1em 0.3em; }
#ID .hv-readout { color: #555; font-size: 0.9em; }
#ID .hv-body { position: relative; display: grid; grid-template-columns: max-content 10em max-content;
  align-items: start; }
#ID .hv-col { display: flex; flex-direction: column; gap: 2px; }
#ID .hv-token { font-family: var(--pst-font-family-monospace, monospace); font-size: 0.9em; padding: 1px 6px;
  border-radius: 3px; line-height: 1.5; white-space: pre; }
#ID .hv-q { cursor: pointer; text-align: right; }
#ID .hv-q.hv-active { background: rgba(31, 119, 180, 0.2); }
#ID .hv-q.hv-pinned { outline: 2px solid #1f77b4; }
#ID .hv-q:focus-visible { outline: 2px dashed #555; }
#ID .hv-k { display: flex; justify-content: space-between; gap: 1em; }
#ID .hv-w { color: #555; font-variant-numeric: tabular-nums; }
#ID svg { width: 10em; align-self: stretch; overflow: visible; }
"""

_SCRIPT = r"""
(function () {
  var root = document.getElementById("__VIEW_ID__");
  if (!root || root.dataset.ready) { return; }
  root.dataset.ready = "1";
  var data = JSON.parse(root.querySelector("script.hv-data").textContent);
  var layerSelect = root.querySelector("select.hv-layer");
  var headSelect = root.querySelector("select.hv-head");
  var queries = root.querySelectorAll(".hv-q");
  var keys = root.querySelectorAll(".hv-k");
  var svg = root.querySelector("svg");
  var readout = root.querySelector(".hv-readout");
  var pinned = data.query;
  function weights(i) {
    // the options count from 1, the data from 0: the keys' weights, per mille
    return data.weights[+layerSelect.value - 1][+headSelect.value - 1][i];
  }
  function draw(i) {
    var w = weights(i);
    var box = svg.getBoundingClientRect();
    var lines = [];
    queries.forEach(function (q, k) {
      q.classList.toggle("hv-active", k === i);
      q.classList.toggle("hv-pinned", k === pinned);
    });
    keys.forEach(function (key, j) {
      var p = w[j] / 1000;
      key.dataset.weight = p.toFixed(3);
      key.style.background = "rgba(255, 127, 14, " + p.toFixed(3) + ")";
      key.querySelector(".hv-w").textContent = p.toFixed(2);
      var a = queries[i].getBoundingClientRect(), b = key.getBoundingClientRect();
      var y1 = a.top + a.height / 2 - box.top, y2 = b.top + b.height / 2 - box.top;
      lines.push('<line x1="0" y1="' + y1 + '" x2="' + box.width + '" y2="' + y2 +
        '" stroke="rgb(255, 127, 14)" stroke-width="2" stroke-opacity="' + p.toFixed(3) + '"/>');
    });
    svg.innerHTML = lines.join("");
    root.dataset.query = i;
    readout.textContent = "layer " + layerSelect.value + ", head " + headSelect.value +
      ": how \u201c" + data.tokens[i] + "\u201d attends (hover or tab to a token on the left; click or Enter to pin)";
  }
  queries.forEach(function (q, i) {
    q.addEventListener("mouseenter", function () { draw(i); });
    q.addEventListener("focus", function () { draw(i); });
    q.addEventListener("mouseleave", function () { draw(pinned); });
    q.addEventListener("click", function () { pinned = i; draw(i); });
    q.addEventListener("keydown", function (event) {
      if (event.key === "Enter" || event.key === " ") { event.preventDefault(); pinned = i; draw(i); }
    });
    q.addEventListener("blur", function () { draw(pinned); });
  });
  layerSelect.addEventListener("change", function () { draw(pinned); });
  headSelect.addEventListener("change", function () { draw(pinned); });
  function start() { draw(pinned); }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", start); } else { start(); }
  window.addEventListener("resize", start);
})();
"""


class HeadView:
    """The view :func:`head_view` returns; Jupyter shows it through ``_repr_html_`` (chapter 9).

    Attributes:
        html: the self-contained HTML, also what ``str(view)`` gives (write it to a file
            and open it in a browser to use it outside Jupyter).
    """

    def __init__(self, html_text: str) -> None:
        self.html = html_text

    def _repr_html_(self) -> str:
        return self.html

    def __str__(self) -> str:
        return self.html


def head_view(tokens: Sequence[str], attentions, *, layer: int = 0, head: int = 0, query: int = 0,
              title: str | None = None) -> HeadView:
    """An interactive view of the attention weights of every layer and head (chapter 9).

    Args:
        tokens: the ``t`` tokens of one sentence, as strings (e.g. the tokenizer's tokens).
        attentions: the weights of every layer: a sequence of ``num_layers`` tensors
            ``(num_heads, t, t)`` or ``(1, num_heads, t, t)`` (one sentence of
            ``BertOutput.attentions``), or one tensor ``(num_layers, num_heads, t, t)``.
            Row ``i`` of a head is how token ``i`` (the query) spreads its attention over
            the keys; each row sums to 1.
        layer, head: what the view shows first, counted from 0.
        query: the token whose attention is shown first (its index, from 0).
        title: a line above the view.

    Returns:
        A :class:`HeadView`; the last expression of a cell displays it.

    Raises:
        ValueError: shapes that do not fit together, weights outside [0, 1] or not finite,
            or a start layer/head/query out of range; the message says which.
    """
    if isinstance(tokens, str) or not all(isinstance(s, str) for s in tokens):
        raise TypeError(f"tokens must be a list of strings (one sentence), got {type(tokens).__name__}")
    tokens = list(tokens)
    weights = _stack(attentions)  # (num_layers, num_heads, t, t)
    num_layers, num_heads, t_q, t_k = weights.shape
    if t_q != t_k or t_q != len(tokens):
        raise ValueError(f"attentions must be (num_layers, num_heads, t, t) with t = len(tokens) = {len(tokens)}, "
                         f"got {tuple(weights.shape)}; pass one sentence's weights, without padding")
    if not bool(torch.isfinite(weights).all()) or float(weights.min()) < 0 or float(weights.max()) > 1 + 1e-6:
        raise ValueError("attention weights must be finite and in [0, 1] (rows of a softmax); "
                         "were scores or logits passed instead of weights?")
    sums = weights.double().sum(dim=-1)  # (num_layers, num_heads, t): 1 for every query (0: fully masked)
    if not bool(((sums - 1).abs() < 1e-3).logical_or(sums == 0).all()):
        raise ValueError(f"every row of attention weights must sum to 1 (a softmax over the keys), got sums from "
                         f"{float(sums.min()):.4f} to {float(sums.max()):.4f}; pass the weights as the model "
                         "returned them")
    starts = {}
    for name, value, size in (("layer", layer, num_layers), ("head", head, num_heads), ("query", query, t_q)):
        try:
            index = operator.index(value)  # an int, a NumPy integer or a 0-d integer tensor
        except TypeError:
            index = None
        if isinstance(value, bool) or index is None or not 0 <= index < size:
            raise ValueError(f"{name} must be an int in [0, {size}), got {value!r}")
        starts[name] = index
    layer, head, query = starts["layer"], starts["head"], starts["query"]

    per_mille = torch.round(weights.double() * 1000).long().tolist()  # 3 decimals, as ints: a small page
    data = json.dumps({"tokens": tokens, "weights": per_mille, "query": query}, separators=(",", ":"))
    # unique on a page, and the same on every run (a re-executed notebook changes only where data does)
    view_id = f"course-head-view-{next(_COUNTER)}-{hashlib.sha1(data.encode()).hexdigest()[:8]}"
    data = data.replace("</", "<\\/")  # a token such as "</script>" cannot end the data block

    def options(size, selected, label):
        return "".join(f'<option value="{i + 1}"{" selected" if i == selected else ""}>{i + 1}</option>'
                       for i in range(size))

    def span(cls, i, token, extra=""):
        return (f'<span class="hv-token {cls}" data-i="{i}"{extra}>{html.escape(token)}'
                + ('<span class="hv-w"></span>' if cls == "hv-k" else "") + "</span>")

    q_column = "".join(span("hv-q", i, tok, ' tabindex="0" role="button"') for i, tok in enumerate(tokens))
    k_column = "".join(span("hv-k", j, tok) for j, tok in enumerate(tokens))
    heading = f'<div class="hv-title"><strong>{html.escape(title)}</strong></div>' if title else ""
    parts = [
        f'<div class="course-head-view" id="{view_id}">',
        f"<style>{_STYLE.replace('#ID', '#' + view_id)}</style>",
        heading,
        '<div class="hv-controls">',
        f'<label>layer <select class="hv-layer" aria-label="layer">{options(num_layers, layer, "layer")}</select></label>',
        f'<label>head <select class="hv-head" aria-label="head">{options(num_heads, head, "head")}</select></label>',
        '<span class="hv-readout" aria-live="polite">the view needs JavaScript: in Jupyter, run this cell '
        '(or trust the notebook) to make it interactive</span>',
        "</div>",
        '<div class="hv-body">',
        f'<div class="hv-col hv-queries" title="queries">{q_column}</div>',
        '<svg aria-hidden="true" height="100%"></svg>',
        f'<div class="hv-col hv-keys" title="keys">{k_column}</div>',
        "</div>",
        f'<script type="application/json" class="hv-data">{data}</script>',
        f"<script>{_SCRIPT.replace('__VIEW_ID__', view_id)}</script>",
        "</div>",
    ]
    return HeadView("\n".join(parts))


def _stack(attentions) -> torch.Tensor:
    """``(num_layers, num_heads, t, t)`` from a tensor or a sequence of per-layer tensors."""
    if isinstance(attentions, torch.Tensor):
        if attentions.dim() != 4:
            raise ValueError(f"attentions as one tensor must be (num_layers, num_heads, t, t), "
                             f"got shape {tuple(attentions.shape)}")
        return attentions.detach().float().cpu()
    if not isinstance(attentions, (list, tuple)) or not attentions or \
            not all(isinstance(a, torch.Tensor) for a in attentions):
        raise TypeError("attentions must be a tensor (num_layers, num_heads, t, t) or a non-empty list/tuple "
                        f"of per-layer tensors, got {type(attentions).__name__}")
    layers = []
    for i, a in enumerate(attentions):
        if a.dim() == 4 and a.size(0) == 1:
            a = a[0]  # (1, num_heads, t, t) -> (num_heads, t, t): one sentence of a batch
        if a.dim() != 3:
            raise ValueError(f"layer {i}'s weights must be (num_heads, t, t) or (1, num_heads, t, t), got shape "
                             f"{tuple(a.shape)}; for a batch, pass one sentence: [w[b] for w in attentions]")
        layers.append(a.detach().float().cpu())
    if len({tuple(a.shape) for a in layers}) != 1:
        raise ValueError(f"every layer's weights must have the same shape, got {[tuple(a.shape) for a in layers]}")
    return torch.stack(layers)  # (num_layers, num_heads, t, t)
