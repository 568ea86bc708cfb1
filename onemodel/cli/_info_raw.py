"""What ``onemodel info`` can say about a file it cannot load because an op's plugin is missing
(a OneModel file) or an ONNX op has no import rule: read from the file itself, without the ops.

Only data is read (the JSON manifest, the ONNX protobuf); nothing from the file is run.
"""
from __future__ import annotations

import json
import zipfile

from ..core.dtype import DType, DTypeError
from ..errors import FormatError

MAX_MANIFEST = 256 * 1024 * 1024


def _manifest(path: str) -> dict:
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("manifest.json")
        if info.file_size > MAX_MANIFEST:
            raise FormatError(f"{path}: manifest.json is too large to inspect")
        m = json.loads(zf.read(info))
    if not isinstance(m, dict) or not isinstance(m.get("graph"), dict):
        raise FormatError(f"{path}: manifest.json holds no graph")
    return m


def _counts(names) -> dict[str, int]:
    out: dict[str, int] = {}
    for n in names:
        out[n] = out.get(n, 0) + 1
    return out


def _symbols(shapes) -> list[str]:
    return sorted({d for s in shapes for d in s if isinstance(d, str)})


def missing_ops_onemodel(path: str) -> dict[str, dict] | None:
    """Ops of a OneModel file that no installed plugin provides (with who provided them when
    saved), or None when the file is no readable OneModel file."""
    from .. import registry

    try:
        m = _manifest(path)
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, FormatError):
        return None
    ops = registry.ops()
    providers = m.get("ops") if isinstance(m.get("ops"), dict) else {}
    missing = {}
    for n in m["graph"].get("nodes") or []:
        op = n.get("op") if isinstance(n, dict) else None
        if isinstance(op, str) and op not in ops:
            p = providers.get(op) if isinstance(providers.get(op), dict) else {}
            missing[op] = {"distribution": p.get("distribution"), "version": p.get("version"),
                           "plugin": p.get("plugin")}
    return missing


def describe_onemodel(path: str, missing: dict[str, dict]) -> dict:
    m = _manifest(path)
    g = m["graph"]
    produced = {o.get("name"): o for n in g.get("nodes") or [] for o in n.get("outputs") or []}
    produced.update({i.get("name"): i for i in g.get("inputs") or []})
    inits = g.get("initializers") or []
    outputs = []
    for o in g.get("outputs") or []:
        v = produced.get(o.get("value"), {})
        outputs.append({"name": o.get("name"), "dtype": v.get("dtype", "?"),
                        "shape": v.get("shape", [])})
    params = 0
    for t in inits:
        size = 1
        for d in t.get("shape") or []:
            size *= int(d)
        params += size
    inputs = [{"name": i.get("name"), "dtype": i.get("dtype"), "shape": i.get("shape", [])}
              for i in g.get("inputs") or []]
    return {
        "file": path, "format": "onemodel", "format_version": m.get("format_version"),
        "producer": m.get("producer"), "loaded": False,
        "missing_ops": missing,
        "inputs": inputs, "outputs": outputs,
        "symbolic_axes": _symbols(x["shape"] for x in inputs),
        "nodes": len(g.get("nodes") or []),
        "ops": _counts(n.get("op") for n in g.get("nodes") or []),
        "initializers": len(inits), "parameters": params,
        "parameter_bytes": sum(int(t.get("byte_length", 0)) for t in inits),
    }


def describe_onnx(path: str, why: str) -> dict:
    import numpy as np
    import onnx
    from onnx import helper

    m = onnx.load(path, load_external_data=False)
    g = m.graph
    init_names = {t.name for t in g.initializer}

    def io(v):
        t = v.type.tensor_type
        try:
            npd = np.dtype(helper.tensor_dtype_to_np_dtype(t.elem_type))
        except (KeyError, TypeError, ValueError):
            npd = None
        try:
            dtype = str(DType.from_numpy(npd)) if npd is not None else "?"
        except DTypeError:
            dtype = str(npd)
        shape = [d.dim_param or (d.dim_value if d.HasField("dim_value") else "?")
                 for d in t.shape.dim]
        return {"name": v.name, "dtype": dtype, "shape": shape}

    inputs = [io(v) for v in g.input if v.name not in init_names]
    params = sum(int(np.prod(t.dims, dtype=np.int64)) for t in g.initializer)
    nbytes = 0
    for t in g.initializer:
        try:
            item = np.dtype(helper.tensor_dtype_to_np_dtype(t.data_type)).itemsize
        except (KeyError, TypeError, ValueError):
            item = 0
        nbytes += int(np.prod(t.dims, dtype=np.int64)) * item
    opset = next((o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), None)
    return {
        "file": path, "format": "onnx", "opset": opset, "ir_version": m.ir_version,
        "producer": f"{m.producer_name} {m.producer_version}".strip() or None, "loaded": False,
        "not_loaded_because": why,
        "inputs": inputs, "outputs": [io(v) for v in g.output],
        "symbolic_axes": _symbols(x["shape"] for x in inputs),
        "nodes": len(g.node), "ops": _counts(n.op_type for n in g.node),
        "initializers": len(g.initializer), "parameters": params, "parameter_bytes": nbytes,
    }
