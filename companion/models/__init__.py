"""Whole models assembled from the building blocks, with their configurations and training
recipes: one module per model the course trains.

- :mod:`companion.models.train_loop`: the one training loop every model above uses (:func:`fit`).
- :mod:`companion.models.retriever`: a one-head retrieval model, with and without 1/sqrt(d_k) (chapter 3).
- :mod:`companion.models.two_relations`: one multi-head layer whose heads specialise (chapter 4).
- :mod:`companion.models.which_first`: one encoder with each kind of position encoding (chapter 5).
- :mod:`companion.models.rnn_seq2seq`: a GRU encoder-decoder, with or without additive attention (chapter 6).
- :mod:`companion.models.seq2seq`: training, greedy translation and exact match for chapter 6's models.
- :mod:`companion.models.classifier`: the Transformer sentiment classifier (chapter 7).
- :mod:`companion.models.training`: its length-bucketed training loop and prediction.
- :mod:`companion.models.sentiment`: chapter 7's configurations, split, save and load.
- :mod:`companion.models.explain`: its decision split exactly into paths: direct, attention, feed-forward.
- :mod:`companion.models.bag_of_words`: its TF-IDF + logistic regression baseline (needs scikit-learn).
- :mod:`companion.models.language_model`: the decoder-only Transformer, its training and generation (chapter 8).
- :mod:`companion.models.ngram_lm`: n-gram models, add-k and Kneser-Ney smoothing, its baselines (chapter 8).
- :mod:`companion.models.char_lm`: chapter 8's split, Transformer settings and stored benchmark results.
- :mod:`companion.models.bert`: BERT's encoder from the course's blocks (chapter 9).
- :mod:`companion.models.checkpoint`: finding, downloading and reading a real checkpoint (chapter 9).
- :mod:`companion.models.pretrained`: loading its weights into :class:`BertEncoder` (chapter 9).
- :mod:`companion.models.sentence`: tokenising sentences, the masked mean, sentence embeddings (chapter 9).
- :mod:`companion.models.attention_only`: an attention-only Transformer, where induction heads form (chapter 11).

Models import the blocks (``companion.*``) and the data wing (``companion.data``), never the
course wing (``companion.course``).
"""

from .train_loop import FitLog, fit, warmup_cosine
from .classifier import POOLINGS, TransformerClassifier
from .retriever import SCALINGS, Retriever, train_retriever
from .two_relations import TwoRelations, train_two_relations, two_relations_accuracy
from .rnn_seq2seq import GRUSeq2Seq
from .seq2seq import exact_match, train_seq2seq, translate
from .language_model import TransformerLM, evaluate_bits_per_char, generate, train_language_model
from .ngram_lm import KneserNeyLM, NGramLM, fit_kneser_ney, fit_ngram
from .bert import BertConfig, BertEncoder, BertOutput
from .checkpoint import MINILM_ID, checkpoint_folder, minilm_path, read_checkpoint
from .pretrained import layer_state_dict, load_pretrained
from .sentence import encode_sentences, mean_pool, sentence_embedding
from .which_first import POSITIONS, WhichFirst, train_which_first, which_first_accuracy
from .attention_only import AttentionOnlyLM, repeat_losses, train_on_repeats

__all__ = ["fit", "FitLog", "warmup_cosine", "TransformerClassifier", "POOLINGS", "Retriever", "SCALINGS", "train_retriever", "TwoRelations", "train_two_relations",
           "two_relations_accuracy", "POSITIONS", "WhichFirst", "train_which_first", "which_first_accuracy",
           "GRUSeq2Seq", "train_seq2seq", "translate", "exact_match", "TransformerLM", "generate",
           "train_language_model", "evaluate_bits_per_char", "NGramLM", "fit_ngram", "KneserNeyLM", "fit_kneser_ney",
           "BertConfig", "BertEncoder", "BertOutput", "MINILM_ID", "load_pretrained", "checkpoint_folder", "minilm_path", "read_checkpoint",
           "layer_state_dict", "encode_sentences", "mean_pool", "sentence_embedding", "AttentionOnlyLM", "repeat_losses",
           "train_on_repeats"]
