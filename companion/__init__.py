"""companion: the from-scratch attention and Transformer code of the course
*Attention and Transformers from Scratch*.

Every chapter notebook imports from here; each object's docstring names the chapter that
introduces it. The mask convention everywhere is PyTorch's
``F.scaled_dot_product_attention`` one: a bool tensor, ``True`` = may attend.
"""

from .attention import hardargmax, scaled_dot_product_attention, softargmax
from .classifier import POOLINGS, TransformerClassifier
from .embedding import TokenEmbedding
from .feedforward import ACTIVATIONS, PositionwiseFeedForward
from .imdb import load_imdb, read_imdb
from .text import Vocab, pad_batch, tokenize
from .interop import copy_weights, torch_state_dict
from .layers import DecoderLayer, EncoderLayer
from .masks import causal_mask, from_key_padding_mask, padding_mask
from .multihead import MultiHeadAttention
from .ngrams import BigramEmbedding, count_bigrams
from .positional import LearnedPositionalEmbedding, SinusoidalPositionalEncoding, sinusoidal_encoding
from .transformer import Decoder, Encoder, Transformer

__version__ = "0.1.0"

__all__ = [
    # chapter 1: attention as a key-value store
    "softargmax",
    "hardargmax",
    # chapters 2-3: self/cross attention, scaling, masks
    "scaled_dot_product_attention",
    "causal_mask",
    "padding_mask",
    "from_key_padding_mask",
    # chapter 4: multi-head attention
    "MultiHeadAttention",
    # chapter 5: positional encoding
    "sinusoidal_encoding",
    "SinusoidalPositionalEncoding",
    "LearnedPositionalEmbedding",
    "TokenEmbedding",
    # chapter 6: encoder/decoder
    "PositionwiseFeedForward",
    "ACTIVATIONS",
    "EncoderLayer",
    "DecoderLayer",
    "Encoder",
    "Decoder",
    "Transformer",
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
    # equality with PyTorch
    "copy_weights",
    "torch_state_dict",
]
