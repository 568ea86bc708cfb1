"""Constant folding: a pure node whose inputs are all constants becomes a constant.

Never folds a node that reads a graph input, has a symbolic size in its params or its output
type (it depends on the feeds), is impure (``OpDef.pure=False``: random ops), or would produce a
result larger than ``FOLD_MAX_BYTES`` (the one folding limit, `core.kernel_call`). A kernel that
raises, or returns something its inference did not promise, leaves the node alone (it will
report itself, with its source line, when the graph runs).
"""
from __future__ import annotations

import numpy as np

from ..core.graph import Graph
from ..core.kernel_call import FOLD_MAX_BYTES, check_outputs, fold_fits
from ..registry import REGISTRY
from ..registry.records import PassDef
from ._rewrite import Rewriter, params_symbolic

MAX_BYTES = FOLD_MAX_BYTES  # the limit in force (kept under its old name)


def fold_constants(graph: Graph) -> Graph:
    ops = REGISTRY.tables().ops
    rw = Rewriter(graph)
    for node in graph.nodes:
        op = ops.get(node.op)
        arrays = [rw.const(i) for i in node.inputs]
        foldable = (
            op is not None and op.is_pure(node.params)
            and all(a is not None for i, a in zip(node.inputs, arrays) if i is not None)
            and not params_symbolic(node)
            and fold_fits([graph.values[o].type for o in node.outputs]))
        if foldable and op is not None:
            try:
                results = check_outputs(op.kernel(*arrays, **dict(node.params)),
                                        [graph.values[o].type for o in node.outputs], op.name,
                                        op.provider)
            except Exception:  # noqa: BLE001 - leave it to fail, with its source line, at run time
                results = None
            if results is not None:
                for name, a in zip(node.outputs, results):
                    a = np.array(a)  # never the kernel's own array (it may keep or share it)
                    a.flags.writeable = False
                    rw.inits[name] = a
                rw.changed = True
                continue
        rw.emit(node)
    return rw.finish() if rw.changed else graph


PASS = PassDef(name="constant_folding", level="basic", run=fold_constants, order=10,
               doc="Evaluate pure nodes whose inputs are all constants.")
