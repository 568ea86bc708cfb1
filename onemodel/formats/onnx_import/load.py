"""The entry points: `load_onnx` (a file, with its external data checked) and `from_onnx`."""
from __future__ import annotations

import os

from attrs import evolve

from ...core.graph import Graph
from .checks import _check_external
from .convert import _convert
from .errors import OnnxImportError, _onnx


def load_onnx(path: str | os.PathLike) -> Graph:
    """Read an ONNX file into a OneModel Graph (verified)."""
    from .._atomic import check_path

    onnx = _onnx()
    path = check_path(path, "load_onnx")
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such file: {path!r}")
    try:
        model = onnx.load(path, load_external_data=False)
    except Exception as exc:  # noqa: BLE001 - protobuf raises many things
        raise OnnxImportError(f"{path}: not a readable ONNX model: {exc}") from None
    base = os.path.dirname(os.path.abspath(path))
    if any(t.data_location == onnx.TensorProto.EXTERNAL
           for t in onnx.external_data_helper._get_all_tensors(model)):
        _check_external(onnx, model, base)
        try:
            onnx.external_data_helper.load_external_data_for_model(model, base)
        except Exception as exc:  # noqa: BLE001 - a malformed reference, an unreadable file
            raise OnnxImportError(f"{path}: external data cannot be read: "
                                  f"{type(exc).__name__}: {exc}") from None
    return from_onnx(model, label=path)


def from_onnx(model, label: str = "<model>") -> Graph:
    """Convert an `onnx.ModelProto` into a verified OneModel Graph. Size conditions the ops'
    inference states while converting (a slice of a fixed axis up to a symbolic size) become
    the graph's guards, with those the file carries (see onemodel/core/guards.py)."""
    from ...core import guards as size_guards

    stated: list = []
    previous = size_guards.start(stated)
    try:
        graph = _convert(model, label)
    finally:
        size_guards.stop(previous)
    found = size_guards.merge(graph.guards, stated)
    return evolve(graph, guards=found) if found != tuple(graph.guards) else graph
