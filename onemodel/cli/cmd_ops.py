"""``onemodel ops``: the registry as a table that fits the terminal; ``NAME`` for one op's
details (``--long``: every op's), ``--json`` for programs, ``--markdown`` for the docs."""
from __future__ import annotations

import json

from .. import registry
from ..registry import REQUIRED
from ._table import render, wrap_text

SHORT = ["op", "plugin", "grad", "trace", "ONNX", "kernels"]
LONG = ["op", "torch", "plugin", "gradient", "traceable", "ONNX", "backend kernels"]

EPILOG = """columns:
  grad     yes: differentiable (a gradient rule)
  trace    yes, no, or params: refused with some values (--long says why)
  ONNX     export, import, both, or -
  kernels  backends with a specialised kernel (every backend can run every op)
  torch    (NAME, --markdown) PyTorch's counterpart: F. is torch.nn.functional,
           Tensor. a method; none: torch has no such op

examples:
  onemodel ops               one line per op
  onemodel ops layer_norm    one op: signature, doc, parameters, ONNX, kernels
  onemodel ops --long        every op in detail (trace refusals, ONNX op types)
  onemodel ops --json        for programs
  onemodel ops --markdown    the table in docs/guide/tracing.md
"""


def _plugin(op) -> str:
    return (op.provider or "?").split(" ")[0]


def _refusal(op) -> str | None:
    if op.untraceable is None or isinstance(op.untraceable, str):
        return op.untraceable
    defaults = {k: p.default for k, p in op.params.items() if p.default is not REQUIRED}
    return op.trace_refusal(defaults)


def _traceable(op) -> str:
    if op.untraceable is None:
        return "yes"
    if isinstance(op.untraceable, str):
        return f"no: {op.untraceable}"
    reason = _refusal(op)
    return f"depends on params; with defaults: no: {reason}" if reason else "depends on params"


def _trace_short(op) -> str:
    if op.untraceable is None:
        return "yes"
    return "no" if isinstance(op.untraceable, str) else "params"


def _onnx(op) -> str:
    spec = op.onnx
    if spec is None:
        return "export by decomposition" if op.decomposition is not None else "-"
    if spec.doc:
        return spec.doc
    parts = ["export" if spec.export is not None else
             ("export by decomposition" if op.decomposition is not None else "")]
    if spec.imports:
        parts.append("import " + ", ".join(sorted(spec.imports)))
    return "; ".join(p for p in parts if p) or "-"


def _onnx_short(op) -> str:
    spec = op.onnx
    exports = op.decomposition is not None or (spec is not None and spec.export is not None)
    if spec is None:
        return "export" if exports else "-"
    ways = [w for w, on in (("export", exports), ("import", bool(spec.imports))) if on]
    return "both" if len(ways) == 2 else (ways[0] if ways else ("doc" if spec.doc else "-"))


def torch_names(op) -> str:
    """PyTorch's counterpart as the record states it (`OpDef.torch`): its names, "none" when
    torch has no such op, "?" when the record does not say."""
    if op.torch is None:
        return "none"
    return ", ".join(op.torch) if op.torch else "?"


def _kernels(name: str, kernels) -> list[str]:
    return sorted(b for (b, o) in kernels if o == name)


def table_rows(long: bool = True, plugins=None) -> list[list[str]]:
    """One row per op. ``plugins`` (distribution names) keeps only the ops and kernels those
    provide: the docs' table is the project's own, whatever else is installed."""
    kernels = registry.kernels()
    if plugins is not None:
        kernels = {k: rec for k, rec in kernels.items() if _plugin(rec) in plugins}
    rows = []
    for name, op in sorted(registry.ops().items()):
        if plugins is not None and _plugin(op) not in plugins:
            continue
        backends = ", ".join(_kernels(name, kernels)) or "-"
        grad = "yes" if op.vjp is not None else "no"
        if long:
            rows.append([name, torch_names(op), _plugin(op), grad, _traceable(op), _onnx(op),
                         backends])
        else:
            rows.append([name, _plugin(op), grad, _trace_short(op), _onnx_short(op), backends])
    return rows


def ops_markdown(plugins=None) -> str:
    return render(LONG, table_rows(long=True, plugins=plugins), markdown=True)


def describe(name: str) -> dict:
    """One op as JSON-ready data (what ``--json`` prints per op)."""
    from ..core.op_signature import signature

    op = registry.get_op(name)
    spec = op.onnx
    return {
        "name": name,
        "signature": f"{name}{signature(op)}",
        "doc": op.doc,
        "plugin": _plugin(op),
        "provider": op.provider,
        "inputs": list(op.inputs),
        "params": {k: {"kind": p.kind, "default": None if p.required else repr(p.default),
                       "required": p.required, "choices": list(p.choices) if p.choices else None,
                       "doc": p.doc} for k, p in op.params.items()},
        "gradient": op.vjp is not None,
        "traceable": {"yes": True, "no": False, "params": "depends on params"}[_trace_short(op)],
        "trace_refusal": _refusal(op),
        "onnx": None if spec is None and op.decomposition is None else {
            "export": op.decomposition is not None or spec.export is not None,
            "imports": sorted(spec.imports) if spec else [], "doc": spec.doc if spec else ""},
        "decomposition": op.decomposition is not None,
        "torch": None if op.torch is None else list(op.torch),
        "methods": [m for m in (*op.methods, *op.reflected, *op.inplace)],
        "kernels": _kernels(name, registry.kernels()),
    }


def details(name: str) -> str:
    d = describe(name)
    op = registry.get_op(name)
    fields = [("plugin", d["provider"]), ("torch", torch_names(op)),
              ("gradient", "yes" if d["gradient"] else "no"),
              ("traceable", _traceable(op)), ("ONNX", _onnx(op)),
              ("kernels", ", ".join(d["kernels"]) or "- (the reference kernel on every backend)")]
    if d["methods"]:
        fields.append(("methods", ", ".join(d["methods"])))
    lines = [wrap_text(d["signature"], " " * 4), "", wrap_text(d["doc"] or "(no doc)"), ""]
    lines += [wrap_text(f"{k + ':':<11} {v}", " " * 12) for k, v in fields]
    if d["params"]:
        rows = [[k, p["kind"], "required" if p["required"] else p["default"],
                 ", ".join(map(repr, p["choices"])) if p["choices"] else "", p["doc"]]
                for k, p in d["params"].items()]
        lines += ["", render(["param", "kind", "default", "choices", "doc"], rows)]
    return "\n".join(lines)


def add_parser(sub):
    p = sub.add_parser("ops", help="list every op in the registry",
                       description="List every op: plugin, gradient, trace legality, ONNX mapping "
                                   "and backends with a specialised kernel.",
                       epilog=EPILOG)
    p.add_argument("names", nargs="*", metavar="NAME", help="show these ops in detail")
    form = p.add_mutually_exclusive_group()
    form.add_argument("--long", action="store_true",
                      help="every op in detail, as NAME shows one")
    form.add_argument("--json", action="store_true", help="print JSON instead of a table")
    form.add_argument("--markdown", action="store_true", help="print a Markdown table")
    return p


def run(args) -> int:
    names = args.names or sorted(registry.ops())
    for n in args.names:
        registry.get_op(n)  # an unknown name: an error saying what is close
    if args.json:
        print(json.dumps([describe(n) for n in names], indent=2))
    elif args.markdown:
        rows = [r for r in table_rows(long=True) if r[0] in names]
        print(render(LONG, rows, markdown=True))
    elif args.names or args.long:
        print("\n\n".join(details(n) for n in names))
    else:
        print(render(SHORT, table_rows(long=False)))
    return 0
