"""Checks an ONNX model must pass before conversion starts.

What ``onnx.checker`` refuses and the import would otherwise paper over (the last of two
definitions of a value silently winning), sizes a OneModel file cannot hold (a model that
imports must also save and load back), node arities against the schema, and external data that
must stay inside the model's folder: each is an `OnnxImportError` naming the place.
"""
from __future__ import annotations

import os
import re

from ..onemodel_file import MAX_DIM
from .decode import _text
from .errors import OnnxImportError

#: opset versions outside 1..MAX_OPSET are refused (ONNX is at 28 in 2026; one a year or two)
MAX_OPSET = 1000


def check_model(onnx, model, label: str) -> None:
    """Raise `OnnxImportError` for bad opsets, sizes out of range, and values defined twice."""

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


def _check_external(onnx, model, base_dir: str) -> None:
    base = os.path.realpath(base_dir)
    tensors = list(onnx.external_data_helper._get_all_tensors(model))
    for t in tensors:
        if t.data_location != onnx.TensorProto.EXTERNAL:
            continue
        what = f"tensor {t.name!r}: external data"
        info = {_text(e.key, what): _text(e.value, what) for e in t.external_data}
        loc = info.get("location", "")
        if "\x00" in loc:
            raise OnnxImportError(f"tensor {t.name!r}: external data location {loc!r} contains a "
                                  f"NUL byte")
        if (not loc or os.path.isabs(loc) or loc.startswith(("/", "\\"))
                or re.match(r"[A-Za-z]:", loc)):
            raise OnnxImportError(f"tensor {t.name!r}: external data location {loc!r} must be a "
                                  f"relative path inside the model's folder")
        full = os.path.realpath(os.path.join(base, loc))
        if os.path.commonpath([full, base]) != base:
            raise OnnxImportError(f"tensor {t.name!r}: external data {loc!r} points outside the "
                                  f"model's folder {base_dir!r}; refused")
        if not os.path.isfile(full):
            raise OnnxImportError(f"tensor {t.name!r}: external data file {loc!r} not found")
        size = os.path.getsize(full)
        try:
            offset = int(info.get("offset", 0) or 0)
            length = None if info.get("length") is None else int(info["length"])
        except ValueError:
            raise OnnxImportError(f"{what} offset {info.get('offset')!r:.40} or length "
                                  f"{info.get('length')!r:.40} is not an integer") from None
        if (offset < 0 or offset > size or (length is not None
                                            and (length < 0 or offset + length > size))):
            raise OnnxImportError(f"tensor {t.name!r}: external data range (offset {offset}, "
                                  f"length {length}) exceeds the file {loc!r} ({size} bytes)")


def _check_arity(onnx, n, opset: int | None, where: str) -> None:
    """Input and output counts against the ONNX schema of the node's domain at the version the
    model imports (import rules index ``node.inputs``)."""
    if opset is None:
        return  # a domain the model does not import: nothing claims it, refused later
    domain = "" if n.domain == "ai.onnx" else n.domain
    try:
        schema = onnx.defs.get_schema(n.op_type, opset, domain)
    except Exception:  # noqa: BLE001 - SchemaError: unknown here, reported as unsupported later
        return
    for what, names, lo, hi, formal in (("inputs", n.input, schema.min_input, schema.max_input,
                                         schema.inputs),
                                        ("outputs", n.output, schema.min_output,
                                         schema.max_output, schema.outputs)):
        if not lo <= len(names) <= hi:
            bound = f"{lo}" if lo == hi else f"{lo} to {hi}"
            raise OnnxImportError(f"{where}: has {len(names)} {what}; {n.op_type}-{opset} takes "
                                  f"{bound}")
        single = onnx.defs.OpSchema.FormalParameterOption.Single
        for i, (name, p) in enumerate(zip(names, formal)):
            if not name and p.option == single and what == "inputs":
                raise OnnxImportError(f"{where}: required input {i} ({p.name}) is empty")
