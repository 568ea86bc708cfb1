"""Constant folding: a pure node whose inputs are all constants becomes a constant.

Never folds a node that reads a graph input, has a symbolic size in its params or its output
type (it depends on the feeds), is impure (``OpDef.pure=False``: random ops), or would produce a
constant larger than ``MAX_BYTES``. A kernel that raises leaves the node alone (it will report
itself, with its source line, when the graph runs).
"""
from __future__ import annotations

import numpy as np

from ..core.graph import Graph
from ..core.symbolic import Dim
from ..registry import REGISTRY
from ..registry.records import PassDef
from ._rewrite import Rewriter, params_symbolic

MAX_BYTES = 64 << 20


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
            and all(not any(isinstance(d, Dim) for d in graph.values[o].shape)
                    for o in node.outputs)
            and all(graph.values[o].dtype.itemsize * int(np.prod(graph.values[o].shape))
                    <= MAX_BYTES for o in node.outputs))
        if foldable:
            try:
                out = op.kernel(*arrays, **dict(node.params))
            except Exception:  # noqa: BLE001 - leave it to fail, with its source line, at run time
                out = None
            if out is not None:
                outs = out if isinstance(out, (tuple, list)) else (out,)
                ok = len(outs) == len(node.outputs)
                results = []
                for name, a in zip(node.outputs, outs):
                    t = graph.values[name].type
                    a = np.asarray(a)
                    if a.dtype != t.dtype.numpy:
                        a = a.astype(t.dtype.numpy)
                    if a.shape != tuple(t.shape):
                        ok = False
                    results.append(np.array(a))
                if ok:
                    for name, a in zip(node.outputs, results):
                        if a.flags.writeable and a.base is None and not any(
                                a is x for x in arrays):
                            a.flags.writeable = False
                        else:
                            a = a.copy()
                            a.flags.writeable = False
                        rw.inits[name] = a
                    rw.changed = True
                    continue
        rw.emit(node)
    return rw.finish() if rw.changed else graph


PASS = PassDef(name="constant_folding", level="basic", run=fold_constants, order=10,
               doc="Evaluate pure nodes whose inputs are all constants.")
