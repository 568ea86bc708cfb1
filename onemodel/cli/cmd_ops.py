"""``onemodel ops``: the registry as a table (``--markdown`` for the docs)."""
from __future__ import annotations

from .. import registry
from ..registry import REQUIRED
from ._table import render

HEADERS = ["op", "plugin", "eager", "gradient", "traceable", "ONNX", "backend kernels"]


def _traceable(op) -> str:
    if op.untraceable is None:
        return "yes"
    if isinstance(op.untraceable, str):
        return f"no: {op.untraceable}"
    defaults = {k: p.default for k, p in op.params.items() if p.default is not REQUIRED}
    reason = op.trace_refusal(defaults)
    return f"depends on params; with defaults: no: {reason}" if reason else "depends on params"


def _onnx(op) -> str:
    spec = op.onnx
    if spec is None:
        return "-"
    if spec.doc:
        return spec.doc
    parts = ["export" if spec.export is not None else ""]
    if spec.imports:
        parts.append("import " + ", ".join(sorted(spec.imports)))
    return "; ".join(p for p in parts if p) or "-"


def table_rows() -> list[list[str]]:
    kernels = registry.kernels()
    rows = []
    for name, op in sorted(registry.ops().items()):
        backends = sorted(b for (b, o) in kernels if o == name)
        rows.append([name, (op.provider or "?").split(" ")[0], "yes",
                     "yes" if op.vjp is not None else "no", _traceable(op), _onnx(op),
                     ", ".join(backends) or "-"])
    return rows


def ops_markdown() -> str:
    return render(HEADERS, table_rows(), markdown=True)


def add_parser(sub):
    p = sub.add_parser("ops", help="list every op in the registry",
                       description="List every op: plugin, gradient, trace legality, ONNX mapping "
                                   "and backends with a specialised kernel.",
                       epilog="example: onemodel ops --markdown > ops.md")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    return p


def run(args) -> int:
    print(render(HEADERS, table_rows(), markdown=args.markdown))
    return 0
