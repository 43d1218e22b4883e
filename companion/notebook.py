"""Helpers for the chapter notebooks: reproducible set-up and showing the package's source."""

from __future__ import annotations

import inspect
import random

import numpy as np
import torch

__all__ = ["setup", "show_source"]


def setup(seed: int = 0) -> torch.device:
    """Seed every random generator and pick the device (every chapter).

    Returns:
        ``cuda`` when a GPU is available (Colab with a GPU runtime), else ``cpu``.
    """
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def show_source(obj) -> object:
    """Display the real source of a companion function, class or method (every chapter).

    Chapters show the package's code with this instead of copying it, so the page always
    shows what actually runs. Returns an object that Jupyter renders with syntax
    highlighting (plain text outside Jupyter).
    """
    source = inspect.getsource(obj)
    try:
        from IPython.display import Code
    except ImportError:  # plain Python: print it
        print(source)
        return None
    return Code(source, language="python")
