"""The interactive head view (chapter 9): self-contained HTML that carries the weights it is given.

What the page does with a mouse is tested in Chromium by tests/site/test_browser.py."""

import json
import re

import pytest
import torch

from companion.course import head_view


def weights(num_layers=2, num_heads=3, t=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.softmax(torch.randn(1, num_heads, t, t, generator=g), dim=-1) for _ in range(num_layers)]


def data_of(view):
    block = re.search(r'<script type="application/json" class="hv-data">(.*?)</script>', view.html, re.S)
    return json.loads(block.group(1))


def test_the_view_carries_every_weight_to_three_decimals():
    w = weights()
    view = head_view(["[CLS]", "it", "was", "[SEP]"], w, layer=1, head=2, query=1)
    data = data_of(view)
    assert data["tokens"] == ["[CLS]", "it", "was", "[SEP]"] and data["query"] == 1
    got = torch.tensor(data["weights"], dtype=torch.float64) / 1000  # (num_layers, num_heads, t, t)
    expected = torch.cat(w).double()
    assert got.shape == (2, 3, 4, 4)
    assert (got - expected).abs().max() <= 0.0005 + 1e-12
    assert '<option value="2" selected>2</option>' in view.html.split('class="hv-head"')[0]  # layer 2
    assert '<option value="3" selected>3</option>' in view.html.split('class="hv-head"')[1]  # head 3
    assert view._repr_html_() == view.html == str(view)


def test_a_stacked_tensor_gives_the_same_view():
    w = weights()
    assert data_of(head_view(list("abcd"), torch.cat(w)))["weights"] == data_of(head_view(list("abcd"), w))["weights"]


def test_the_view_is_self_contained_and_escapes_tokens():
    view = head_view(["<b>", "</script>", "a&b", '"q"'], weights())
    assert not re.search(r'(src|href)\s*=\s*"?(https?:)?//', view.html), "nothing may load from outside"
    assert re.search(r'class="hv-token hv-q" data-i="0"[^>]*>&lt;b&gt;<', view.html)  # shown, not parsed
    assert re.search(r'class="hv-token hv-k" data-i="2">a&amp;b<', view.html)
    assert view.html.count("</script>") == 2  # the data block and the code, nothing from a token
    assert data_of(view)["tokens"] == ["<b>", "</script>", "a&b", '"q"']


def test_two_views_on_one_page_have_different_ids():
    a, b = head_view(list("abcd"), weights()), head_view(list("abcd"), weights())
    id_a = re.search(r'id="([^"]+)"', a.html).group(1)
    id_b = re.search(r'id="([^"]+)"', b.html).group(1)
    assert id_a != id_b
    assert f'getElementById("{id_a}")' in a.html and id_b not in a.html


@pytest.mark.parametrize("tokens, attentions, kwargs, message", [
    (list("abc"), weights(), {}, "t = len(tokens) = 3"),
    (list("abcd"), [torch.rand(2, 3, 4, 4)], {}, "for a batch, pass one sentence"),
    (list("abcd"), [torch.rand(3, 4, 4), torch.rand(2, 4, 4)], {}, "the same shape"),
    (list("abcd"), [torch.randn(3, 4, 4) * 5], {}, "were scores or logits passed"),
    (list("abcd"), weights(), {"layer": 2}, "layer must be an int in [0, 2)"),
    (list("abcd"), weights(), {"head": -1}, "head must be an int in [0, 3)"),
    (list("abcd"), weights(), {"query": 4}, "query must be an int in [0, 4)"),
    (list("abcd"), torch.rand(3, 4, 4), {}, "(num_layers, num_heads, t, t)"),
    (list("abcd"), [w * 0.5 for w in weights()], {}, "must sum to 1"),
])
def test_bad_input_is_named(tokens, attentions, kwargs, message):
    with pytest.raises(ValueError) as err:
        head_view(tokens, attentions, **kwargs)
    assert message in str(err.value)


def test_numpy_and_tensor_integers_choose_the_start():
    import numpy as np

    view = head_view(list("abcd"), weights(), layer=np.int64(1), head=torch.tensor(2), query=np.int32(3))
    assert data_of(view)["query"] == 3
    assert '<option value="3" selected>3</option>' in view.html.split('class="hv-head"')[1]


def test_tokens_must_be_strings():
    with pytest.raises(TypeError, match="list of strings"):
        head_view("abcd", weights())
    with pytest.raises(TypeError, match="list/tuple"):
        head_view(list("abcd"), "weights")
