"""Model files: the OneModel format (`save_graph` / `load_graph`) and ONNX (`save_onnx` /
`load_onnx`). The ONNX modules import ``onnx`` only when used; plugins' ONNX mappings use
`onnx_api`, the public API for op authors."""
from __future__ import annotations

from .onemodel_file import FORMAT_VERSION, dumps, load_graph, loads, save_graph


def save_onnx(graph, path, opset=None):
    """Export a Graph (or TracedModel) to an ONNX file; see `onnx_export.save_onnx`."""
    from .onnx_export import save_onnx as _save

    return _save(graph, path, opset=opset)


def load_onnx(path):
    """Import an ONNX file as a Graph; see `onnx_import.load_onnx`."""
    from .onnx_import import load_onnx as _load

    return _load(path)


__all__ = ["save_graph", "load_graph", "dumps", "loads", "save_onnx", "load_onnx", "load", "save",
           "FORMAT_VERSION"]


def load(path):
    """A Graph from a model file: ONNX for ``.onnx``, the OneModel format for ``.onemodel``;
    another extension is sniffed (a zip is a OneModel file, anything else ONNX)."""
    import os

    from ._atomic import check_path

    p = check_path(path, "load")
    if p.lower().endswith(".onnx"):
        return load_onnx(p)
    if not p.lower().endswith(".onemodel") and os.path.isfile(p):
        with open(p, "rb") as f:
            magic = f.read(4)
        if magic[:2] != b"PK" and magic:
            return load_onnx(p)
    return load_graph(p)


def save(graph, path, opset=None):
    """Write a Graph (or TracedModel): ONNX for ``.onnx``, else the OneModel format."""
    import os

    if os.fspath(path).lower().endswith(".onnx"):
        return save_onnx(graph, path, opset=opset)
    return save_graph(graph, path)
