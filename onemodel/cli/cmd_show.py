"""``onemodel show FILE``: the graph as readable text, or ``--dot`` for Graphviz."""
from __future__ import annotations

from ._models import load_model


def add_parser(sub):
    p = sub.add_parser("show", help="print a model's graph",
                       description="Print the graph of a .onemodel or .onnx file.",
                       epilog="examples:\n  onemodel show model.onemodel\n"
                              "  onemodel show model.onnx --dot | dot -Tsvg > graph.svg")
    p.add_argument("file", help="a .onemodel or .onnx file")
    p.add_argument("--dot", action="store_true", help="print Graphviz dot instead of text")
    p.add_argument("--sources", action="store_true", help="show the source line of each node")
    return p


def to_dot(graph) -> str:
    q = lambda s: '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'  # noqa: E731
    lines = ["digraph onemodel {", "  rankdir=TB;", "  node [fontname=Helvetica, fontsize=10];"]
    for v in graph.inputs:
        lines.append(f"  {q('v:' + v.name)} [shape=ellipse, label={q(f'{v.name}: {v.type}')}];")
    producer = {}
    for i, n in enumerate(graph.nodes):
        nid = f"n{i}"
        for o in n.outputs:
            producer[o] = nid
        lines.append(f"  {nid} [shape=box, style=rounded, label={q(n.op)}];")
        for inp in n.inputs:
            if inp is None or inp in graph.initializers:
                continue
            src = producer.get(inp, "v:" + inp)
            label = graph.values[inp].type
            lines.append(f"  {q(src)} -> {nid} [label={q(label)}];")
    for oname, v in graph.outputs:
        lines.append(f"  {q('o:' + oname)} [shape=ellipse, label={q(f'{oname}: {graph.values[v].type}')}];")
        lines.append(f"  {q(producer.get(v, 'v:' + v))} -> {q('o:' + oname)};")
    lines.append("}")
    return "\n".join(lines)


def run(args) -> int:
    graph = load_model(args.file).graph
    print(to_dot(graph) if args.dot else graph.format(sources=args.sources))
    return 0
