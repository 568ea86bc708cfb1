"""``onemodel info FILE``: what a model file holds.

Inputs and outputs with dtypes and (symbolic) shapes, the symbolic axes, node counts by op,
and the parameters (initializers): count of values and bytes. Works on ``.onemodel`` and
``.onnx`` files; ``--json`` prints the same as JSON.
"""
from __future__ import annotations

import json
import os
import zipfile

from ..core.symbolic import Dim
from ._table import human_bytes, render, wrap_text


def add_parser(sub):
    p = sub.add_parser("info", help="inputs, outputs, op counts and parameters of a model file",
                       description="Describe a .onemodel or .onnx file: inputs and outputs with "
                                   "symbolic axes, node counts by op, parameter count and bytes.",
                       epilog="examples:\n  onemodel info model.onemodel\n"
                              "  onemodel info model.onnx --json")
    p.add_argument("file", metavar="FILE", help="a .onemodel or .onnx file")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    return p


def _shape(shape) -> list:
    return [str(d) if isinstance(d, Dim) else int(d) for d in shape]


def _file_meta(path: str) -> dict:
    """Format name, version and producer, read without loading the model twice."""
    if path.lower().endswith(".onnx"):
        import onnx

        m = onnx.load(path, load_external_data=False)
        opset = next((o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), None)
        producer = f"{m.producer_name} {m.producer_version}".strip()
        return {"format": "onnx", "opset": opset, "ir_version": m.ir_version,
                "producer": producer or None}
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("manifest.json")
        if info.file_size > 256 * 1024 * 1024:
            return {"format": "onemodel"}
        manifest = json.loads(zf.read(info))
    return {"format": "onemodel", "format_version": manifest.get("format_version"),
            "producer": manifest.get("producer")}


def describe(path: str) -> dict:
    from ..formats import load

    graph = load(path)
    params = sum(int(a.size) for a in graph.initializers.values())
    nbytes = sum(int(a.nbytes) for a in graph.initializers.values())
    return {
        "file": path,
        **_file_meta(path),
        "inputs": [{"name": v.name, "dtype": str(v.dtype), "shape": _shape(v.shape)}
                   for v in graph.inputs],
        "outputs": [{"name": o, "dtype": str(graph.values[v].dtype),
                     "shape": _shape(graph.values[v].shape)} for o, v in graph.outputs],
        "symbolic_axes": graph.symbols(),
        "nodes": len(graph.nodes),
        "ops": graph.op_counts(),
        "initializers": len(graph.initializers),
        "parameters": params,
        "parameter_bytes": nbytes,
        "backend": _auto_backend(graph),
        "platform": _auto_platform(graph),
    }


def _auto_platform(graph) -> dict | None:
    """What the backend auto takes runs on here (`BackendDef.platform`), when it says."""
    from ..core.backend_choice import choose_backend
    from ..errors import OneModelError
    from ..registry import REGISTRY
    from ..tools.machine import backend_platforms

    try:
        name = choose_backend(graph, REGISTRY.tables().backends).chosen
    except OneModelError:
        return None
    return backend_platforms().get(name)


def _auto_backend(graph) -> str:
    """What a session with the default ``backend="auto"`` would run the model on."""
    from ..core.backend_choice import choose_backend
    from ..errors import OneModelError
    from ..registry import REGISTRY

    try:
        return str(choose_backend(graph, REGISTRY.tables().backends))
    except OneModelError as exc:
        return f"none ({exc})"


def describe_any(path: str) -> dict:
    """`describe`, or what the file itself says when an op's plugin is missing (a OneModel
    file) or an ONNX op has no import rule (``"loaded": false`` and what is missing)."""
    from ..errors import OneModelError
    from . import _info_raw

    try:
        return {**describe(path), "loaded": True}
    except OneModelError as exc:
        if path.lower().endswith(".onnx"):
            from ..formats.onnx_import import OnnxUnsupportedError

            if isinstance(exc, OnnxUnsupportedError):
                return _info_raw.describe_onnx(path, str(exc).strip().splitlines()[0])
            raise
        missing = _info_raw.missing_ops_onemodel(path)
        if not missing:
            raise
        return _info_raw.describe_onemodel(path, missing)


def _missing_line(d: dict) -> str:
    if "missing_ops" in d:
        parts = []
        for op, who in sorted(d["missing_ops"].items()):
            if who.get("distribution"):
                by = f"distribution {who['distribution']} {who.get('version') or ''}".strip()
            elif who.get("plugin"):
                by = f"plugin {who['plugin']!r}, registered at run time"
            else:
                by = "an unrecorded plugin"
            parts.append(f"{op} (from {by})")
        return ("cannot load it here: no installed plugin provides " + "; ".join(parts)
                + ". Install it to load, run or convert the model; what the file says:")
    return f"cannot load it here: {d['not_loaded_because']}; what the file says:"


def run(args) -> int:
    if not os.path.exists(args.file):
        raise FileNotFoundError(2, "No such file", args.file)
    d = describe_any(args.file)
    if args.json:
        print(json.dumps(d, indent=2))
        return 0
    head = f"{d['file']}: {d['format']}"
    if d.get("format_version"):
        head += f" format {d['format_version']}"
    if d.get("opset"):
        head += f" opset {d['opset']}"
    if d.get("producer"):
        head += f", written by {d['producer']}"
    print(wrap_text(head, " " * 4))
    if not d["loaded"]:
        print(wrap_text(_missing_line(d)))

    def io_rows(items):
        return [[x["name"], x["dtype"], "[" + ", ".join(map(str, x["shape"])) + "]"]
                for x in items]

    print("\ninputs:")
    print(render(["name", "dtype", "shape"], io_rows(d["inputs"])))
    print("\noutputs:")
    print(render(["name", "dtype", "shape"], io_rows(d["outputs"])))
    print("\n" + wrap_text(f"symbolic axes: {', '.join(d['symbolic_axes']) or '(none)'}",
                           " " * 4))
    print(f"\nnodes: {d['nodes']}")
    print(render(["op", "count"], [[k, v] for k, v in
                                   sorted(d["ops"].items(), key=lambda kv: (-kv[1], kv[0]))]))
    print("\n" + wrap_text(f"parameters: {d['parameters']:,} values, "
                           f"{human_bytes(d['parameter_bytes'])} ({d['parameter_bytes']:,} bytes) in "
                           f"{d['initializers']} initializers", " " * 4))
    if d.get("backend"):
        print("\n" + wrap_text(f"backend: {d['backend']}", " " * 4))
    if d.get("platform"):
        from ..tools.machine import platform_text

        print(wrap_text(f"platform: {platform_text(d['platform'])}", " " * 4))
    return 0
