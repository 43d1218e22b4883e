"""companion: the from-scratch attention and Transformer code of the course
*Attention and Transformers from Scratch*.

Every chapter notebook imports from here; each object's docstring names the chapter that
introduces it. The mask convention everywhere is PyTorch's
``F.scaled_dot_product_attention`` one: a bool tensor, ``True`` = may attend.

The layout shows the design:

- ``companion/*.py``: the building blocks the chapters teach, one module per idea
  (attention, masks, multi-head attention, positions, feed-forward, layers, stacks, ...).
  They import nothing from the wings below.
- ``companion.models``: whole models assembled from the blocks, with their training recipes.
- ``companion.data``: data sets, tokenisation and synthetic tasks (knows no model).
- ``companion.course``: exercises, grading and notebook helpers (nothing else imports it).

Every public name below is importable as ``from companion import ...``.
"""

# the building blocks, in the order the course meets them
from .attention import hardargmax, scaled_dot_product_attention, softargmax
from .masks import causal_mask, from_key_padding_mask, padding_mask, sliding_window_mask
from .multihead import MultiHeadAttention
from .positional import LearnedPositionalEmbedding, SinusoidalPositionalEncoding, sinusoidal_encoding, sinusoidal_shift
from .rotary import apply_rotary, rotary_angles
from .embedding import TokenEmbedding
from .feedforward import ACTIVATIONS, PositionwiseFeedForward, SwiGLU, swiglu_width
from .layers import DecoderLayer, EncoderLayer, make_norm
from .transformer import Decoder, Encoder, LayerStack, Transformer, apply_layers
from .recurrent import AdditiveAttention
from .decoding import beam_search, greedy_decode
from .kv_cache import KVCache, MemoryCache
from .sampling import next_token_probs, sample_next_token
from .bigram_embedding import BigramEmbedding
from .pooling import masked_mean
from .norms import RMSNorm
from .gqa import GroupedQueryAttention, repeat_kv
from .memory_efficient import TiledAttention, online_softmax, tiled_attention
from .linear_attention import LinearAttention, elu_feature_map, linear_attention, linear_attention_weights
from .interop import copy_weights, torch_state_dict
from .head_scores import induction_score, previous_token_score

# the wings: whole models and data
from .models import (fit, FitLog, warmup_cosine, POOLINGS, POSITIONS, SCALINGS, Retriever, TransformerClassifier, TwoRelations, WhichFirst,
                     train_retriever, train_two_relations, train_which_first, two_relations_accuracy,
                     which_first_accuracy, GRUSeq2Seq, train_seq2seq, translate, exact_match, TransformerLM, generate,
                     train_language_model, evaluate_bits_per_char, NGramLM, fit_ngram, KneserNeyLM, fit_kneser_ney, BertConfig, BertEncoder,
                     BertOutput, MINILM_ID, load_pretrained, checkpoint_folder, minilm_path, read_checkpoint, layer_state_dict,
                     encode_sentences, mean_pool, sentence_embedding, AttentionOnlyLM)
from .data import (Vocab, count_bigrams, load_imdb, pad_batch, random_rotation, read_imdb, retrieval_batch, tokenize,
                   two_relations_batch, which_first_batch, reversal_pairs, reversal_splits, CharVocab,
                   reviews_to_text, random_windows, repeat_batch, repeated_tokens)

__version__ = "0.1.0"

__all__ = [
    # chapter 1: attention as a key-value store
    "softargmax",
    "hardargmax",
    # pooling a padded sequence (chapters 7 and 9)
    "masked_mean",
    # chapters 2-3: self/cross attention, scaling, masks
    "scaled_dot_product_attention",
    "causal_mask",
    "padding_mask",
    "from_key_padding_mask",
    # the one training loop every model uses (chapters 3 to 8)
    "fit",
    "FitLog",
    "warmup_cosine",
    # chapter 3: the retrieval task that needs sharp attention
    "random_rotation",
    "retrieval_batch",
    "Retriever",
    "SCALINGS",
    "train_retriever",
    # chapter 4: multi-head attention
    "MultiHeadAttention",
    "two_relations_batch",
    "TwoRelations",
    "train_two_relations",
    "two_relations_accuracy",
    # chapter 5: positional encoding
    "sinusoidal_encoding",
    "sinusoidal_shift",
    "SinusoidalPositionalEncoding",
    "LearnedPositionalEmbedding",
    "rotary_angles",
    "apply_rotary",
    "which_first_batch",
    "WhichFirst",
    "POSITIONS",
    "train_which_first",
    "which_first_accuracy",
    "TokenEmbedding",
    # chapter 6: encoder/decoder
    "PositionwiseFeedForward",
    "ACTIVATIONS",
    "EncoderLayer",
    "DecoderLayer",
    "Encoder",
    "Decoder",
    "Transformer",
    "LayerStack",
    "apply_layers",
    "AdditiveAttention",
    "GRUSeq2Seq",
    "greedy_decode",
    "beam_search",
    "reversal_pairs",
    "reversal_splits",
    "train_seq2seq",
    "translate",
    "exact_match",
    # chapter 7: classification
    "TransformerClassifier",
    "POOLINGS",
    "load_imdb",
    "read_imdb",
    "tokenize",
    "Vocab",
    "pad_batch",
    "count_bigrams",
    "BigramEmbedding",
    # chapter 8: a generative Transformer
    "TransformerLM",
    "KVCache",
    "MemoryCache",
    "next_token_probs",
    "sample_next_token",
    "generate",
    "train_language_model",
    "evaluate_bits_per_char",
    "random_windows",
    "NGramLM",
    "fit_ngram",
    "KneserNeyLM",
    "fit_kneser_ney",
    "CharVocab",
    "reviews_to_text",
    # chapter 9: a pretrained Transformer (the optional libraries: the extra [pretrained])
    "BertConfig",
    "BertEncoder",
    "BertOutput",
    "MINILM_ID",
    "load_pretrained",
    "checkpoint_folder",
    "minilm_path",
    "read_checkpoint",
    "layer_state_dict",
    "encode_sentences",
    "mean_pool",
    "sentence_embedding",
    # chapter 10: the modern Transformer
    "online_softmax",
    "tiled_attention",
    "TiledAttention",
    "GroupedQueryAttention",
    "repeat_kv",
    "sliding_window_mask",
    "linear_attention",
    "linear_attention_weights",
    "LinearAttention",
    "elu_feature_map",
    "RMSNorm",
    "SwiGLU",
    "swiglu_width",
    "make_norm",
    # chapter 11: what attention learns
    "AttentionOnlyLM",
    "repeated_tokens",
    "repeat_batch",
    "previous_token_score",
    "induction_score",
    # equality with PyTorch
    "copy_weights",
    "torch_state_dict",
]
