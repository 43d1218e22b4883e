"""Whole models assembled from the building blocks, with their configurations and training
recipes: one module per model the course trains.

- :mod:`companion.models.retriever`: a one-head retrieval model, with and without 1/sqrt(d_k) (chapter 3).
- :mod:`companion.models.two_relations`: one multi-head layer whose heads specialise (chapter 4).
- :mod:`companion.models.which_first`: one encoder with each kind of position encoding (chapter 5).
- :mod:`companion.models.classifier`: the Transformer sentiment classifier (chapter 7).
- :mod:`companion.models.training`: its length-bucketed training loop and prediction.
- :mod:`companion.models.sentiment`: chapter 7's configurations, split, save and load.

Models import the blocks (``companion.*``) and the data wing (``companion.data``), never the
course wing (``companion.course``).
"""

from .classifier import POOLINGS, TransformerClassifier
from .retriever import SCALINGS, Retriever, train_retriever
from .two_relations import TwoRelations, train_two_relations, two_relations_accuracy
from .which_first import POSITIONS, WhichFirst, train_which_first, which_first_accuracy

__all__ = ["TransformerClassifier", "POOLINGS", "Retriever", "SCALINGS", "train_retriever", "TwoRelations", "train_two_relations",
           "two_relations_accuracy", "POSITIONS", "WhichFirst", "train_which_first", "which_first_accuracy"]
