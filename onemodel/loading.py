"""``om.load`` and ``om.load_onnx``: model files back as TracedModels."""
from __future__ import annotations

import os

from .runtime.traced_model import TracedModel


def load(path: str | os.PathLike) -> TracedModel:
    """A TracedModel from a OneModel file (no code from the file is ever run)."""
    from .formats import load_graph

    return TracedModel(load_graph(path))


def load_onnx(path: str | os.PathLike) -> TracedModel:
    """A TracedModel from an ONNX file (every unsupported op type is listed, with its count)."""
    from .formats import load_onnx as _load_onnx

    return TracedModel(_load_onnx(path))
