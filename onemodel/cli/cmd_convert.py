"""``onemodel convert IN OUT``: between the OneModel format (``.onemodel``) and ONNX (``.onnx``).

The output format follows OUT's extension; ``--opset`` picks the ONNX opset. The model is loaded
and checked like any load (a OneModel file's version and ops, an ONNX file's supported ops), and
the output is written atomically.
"""
from __future__ import annotations

import os

from ..tools.progress import Stages
from . import CliError

FORMATS = {".onemodel": "OneModel", ".onnx": "ONNX"}


def add_parser(sub):
    p = sub.add_parser("convert", help="convert between .onemodel and .onnx",
                       description="Convert a model between the OneModel format (.onemodel) "
                                   "and ONNX (.onnx); the extensions decide the formats.",
                       epilog="examples:\n  onemodel convert model.onemodel model.onnx\n"
                              "  onemodel convert model.onnx model.onemodel\n"
                              "  onemodel convert model.onemodel model.onnx --opset 17")
    p.add_argument("input", metavar="IN", help="the model to read (.onemodel or .onnx)")
    p.add_argument("output", metavar="OUT", help="the file to write (.onemodel or .onnx)")
    p.add_argument("--opset", type=int, default=None,
                   help="ONNX opset for a .onnx output (default: the exporter's default)")
    return p


def _kind(path: str, role: str) -> str:
    ext = os.path.splitext(path)[1].lower()
    if ext not in FORMATS:
        raise CliError(f"{role} {path!r}: unknown extension {ext or '(none)'!r}; use "
                       f"{' or '.join(FORMATS)}")
    return ext


def run(args) -> int:
    from ..formats import load_graph, load_onnx, save_graph, save_onnx

    src, dst = _kind(args.input, "IN"), _kind(args.output, "OUT")
    if not os.path.exists(args.input):
        raise FileNotFoundError(2, "No such file", args.input)
    if args.opset is not None and dst != ".onnx":
        raise CliError("--opset only applies to a .onnx output")
    if os.path.abspath(args.input) == os.path.abspath(args.output):
        raise CliError("IN and OUT are the same file")
    progress = Stages(2)  # a big model takes a while to read and to write: say which
    try:
        progress.stage(f"loading {args.input}")
        graph = load_onnx(args.input) if src == ".onnx" else load_graph(args.input)
        progress.stage(f"writing {args.output} ({len(graph.nodes)} nodes)")
        if dst == ".onnx":
            from ..formats.onnx_export import DEFAULT_OPSET

            save_onnx(graph, args.output, opset=args.opset)
            detail = f"ONNX opset {args.opset or DEFAULT_OPSET}"
        else:
            save_graph(graph, args.output)
            from ..formats import FORMAT_VERSION

            detail = f"OneModel format {FORMAT_VERSION}"
    finally:
        progress.finish()
    print(f"wrote {args.output} ({detail}): {len(graph.nodes)} nodes, "
          f"{len(graph.initializers)} initializers")
    return 0
