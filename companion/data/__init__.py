"""Data sets, tokenisation and the course's synthetic tasks. Data code knows no model.

- :mod:`companion.data.imdb`: the IMDB reviews (chapter 7), downloaded, checked and cached.
- :mod:`companion.data.text`: tokenizer, vocabulary and padding of id sequences.
- :mod:`companion.data.word_pairs`: the frequent word-pair (bigram) table of chapter 7 (not a language model: those are :mod:`companion.models.ngram_lm`).
- :mod:`companion.data.retrieval`: find the key a query was copied from (chapter 3).
- :mod:`companion.data.two_relations`: read the left neighbour and a marked token at once (chapter 4).
- :mod:`companion.data.which_first`: which of two markers comes first, a task only order solves (chapter 5).
- :mod:`companion.data.chars`: characters as tokens, for chapter 8's language model.
- :mod:`companion.data.reversal`: write a sequence backwards, with fixed splits and a longer test split (chapter 6).
- :mod:`companion.data.repeated`: random tokens, then the same tokens again (chapter 11).
"""

from .imdb import load_imdb, read_imdb
from .word_pairs import count_bigrams
from .retrieval import random_rotation, retrieval_batch
from .two_relations import two_relations_batch
from .which_first import which_first_batch
from .reversal import reversal_pairs, reversal_splits
from .repeated import repeat_batch, repeated_tokens
from .chars import CharVocab, random_windows, reviews_to_text
from .text import Vocab, pad_batch, tokenize

__all__ = ["load_imdb", "read_imdb", "tokenize", "Vocab", "pad_batch", "count_bigrams", "random_rotation", "retrieval_batch", "two_relations_batch", "which_first_batch", "reversal_pairs", "reversal_splits", "CharVocab", "reviews_to_text", "random_windows", "repeated_tokens", "repeat_batch"]
