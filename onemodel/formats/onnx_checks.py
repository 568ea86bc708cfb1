"""Checks an ONNX model must pass before conversion starts.

What ``onnx.checker`` refuses and the import would otherwise paper over (the last of two
definitions of a value silently winning), and sizes a OneModel file cannot hold (a model that
imports must also save and load back): each is an `OnnxImportError` naming the place.
"""
from __future__ import annotations

from .onemodel_file import MAX_DIM

#: opset versions outside 1..MAX_OPSET are refused (ONNX is at 28 in 2026; one a year or two)
MAX_OPSET = 1000


def check_model(onnx, model, label: str) -> None:
    """Raise `OnnxImportError` for bad opsets, sizes out of range, and values defined twice."""
    from .onnx_import import OnnxImportError

    def fail(what: str):
        raise OnnxImportError(f"{label}: {what}")

    for o in model.opset_import:
        if not 1 <= o.version <= MAX_OPSET:
            fail(f"opset_import of domain {o.domain or 'ai.onnx'!r:.80} has version {o.version}; "
                 f"versions run from 1 to {MAX_OPSET}")
    g = model.graph

    def check_dims(dims, where: str) -> None:
        for axis, d in enumerate(dims):
            if not 0 <= d <= MAX_DIM:
                fail(f"{where} axis {axis} has size {d}; sizes run from 0 to {MAX_DIM}")

    def check_value_info(vi, where: str) -> None:
        # a negative dim_value is an exporter's "unknown" (paddle2onnx writes -1; ONNX Runtime
        # takes any size there): the import reads it as a symbolic axis
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape"):
            check_dims([d.dim_value for d in vi.type.tensor_type.shape.dim
                        if d.HasField("dim_value") and d.dim_value >= 0],
                       f"{where} {vi.name!r:.80}")

    defined: dict = {}
    for t in g.initializer:
        if t.name in defined:
            fail(f"initializer name {t.name!r:.80} is not unique")
        defined[t.name] = "an initializer"
        check_dims(t.dims, f"initializer {t.name!r:.80}")
    for vi in g.input:
        check_value_info(vi, "input")
        defined.setdefault(vi.name, "a graph input")  # an input may name its initializer
    for vi in list(g.output) + list(g.value_info):
        check_value_info(vi, "value")
    tensor_kinds = (onnx.AttributeProto.TENSOR, onnx.AttributeProto.TENSORS)
    for k, n in enumerate(g.node):
        where = f"node {k} ({n.op_type!r:.40})"
        for a in n.attribute:
            if a.type in tensor_kinds:
                for t in [a.t] if a.type == onnx.AttributeProto.TENSOR else list(a.tensors):
                    check_dims(t.dims, f"{where} attribute {a.name!r:.40}")
        for out in n.output:
            if not out:
                continue  # an omitted optional output
            if out in defined:
                fail(f"{where} defines {out!r:.80}, already defined by {defined[out]}; a value "
                     f"has one definition (single static assignment)")
            defined[out] = where
