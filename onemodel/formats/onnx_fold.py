"""Constant folding at ONNX import for any op type, with onnx's own reference implementation.

Exporters leave constant subgraphs of ops OneModel has no record for (``Mod`` of two constants in
torchvision's ViT, ``Sin`` of a constant table...). A node whose inputs are all constants has a
value known at import, so it is computed here and never becomes a graph node: the op type does
not need to be supported. Claimed ops fold through their own kernels (``ImportContext.emit``);
this is the fallback for the rest.
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

try:  # onnx.reference builds classes from strings while it loads its op table: do it once, now,
    # not while a file is being read (the loaders' hostile-input tests forbid exec then)
    import onnx.reference  # noqa: F401
    import onnx.reference.ops._op_list  # noqa: F401
except ImportError:  # pragma: no cover - onnx is optional; import says so when it is needed
    pass

#: ops whose result is not a function of their inputs (never folded)
NONDETERMINISTIC = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike",
                              "RandomUniformLike", "Multinomial", "Bernoulli"})


def statically_constant(nodes: Iterable, constants: set[str]) -> set[int]:
    """The ids of the nodes whose inputs are all constants (initializers, ``Constant`` outputs or
    outputs of such nodes), before any rule runs: these may use any op type."""
    known = set(constants)
    out: set[int] = set()
    for n in nodes:
        if n.domain not in ("", "ai.onnx") or n.op_type in NONDETERMINISTIC:
            continue
        ins = [i for i in n.inputs if i] + _read_by_subgraphs(n)
        if (n.op_type == "Constant" or ins) and all(i in known for i in ins):
            out.add(id(n))
            known.update(o for o in n.outputs if o)
    return out


def _read_by_subgraphs(node) -> list[str]:
    """Outer names an ``If``/``Loop``/``Scan`` body reads: inputs too, for folding."""
    from .onnx_subgraph import free_names

    return free_names(node)


def _attr(onnx, v):
    proto = getattr(v, "proto", None)  # a subgraph (onnx_subgraph.OnnxGraph): its GraphProto
    if proto is not None:
        return proto
    if isinstance(v, np.ndarray):
        return onnx.numpy_helper.from_array(v)
    if isinstance(v, list) and v and isinstance(v[0], np.ndarray):
        return [onnx.numpy_helper.from_array(x) for x in v]
    return v


def fold(onnx, node, arrays: list, opset: int, limit: int) -> list[np.ndarray]:
    """Run one ONNX node on constant ``arrays`` with ``onnx.reference``; raises ValueError when
    the node cannot be evaluated or a result is larger than ``limit`` bytes."""
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    names = [f"in{k}" if i else "" for k, i in enumerate(node.inputs)]
    outs = [f"out{k}" if o else "" for k, o in enumerate(node.outputs)]
    attrs = {k: _attr(onnx, v) for k, v in node.attrs.items()}
    proto = helper.make_node(node.op_type, names, outs, **attrs)
    feeds = {nm: a for nm, a in zip(names, arrays) if nm}
    g = helper.make_graph(
        [proto], "fold",
        [helper.make_tensor_value_info(nm, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
         for nm, a in feeds.items()],
        [helper.make_empty_tensor_value_info(o) for o in outs if o])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    try:
        with np.errstate(all="ignore"):
            results = ReferenceEvaluator(model).run(None, feeds)
    except Exception as exc:  # noqa: BLE001 - the reference raises many things
        raise ValueError(f"{type(exc).__name__}: {exc}") from None
    res = [np.asarray(r) for r in results]
    for r in res:
        if r.nbytes > limit:
            raise ValueError(f"a folded result of {r.nbytes} bytes is larger than the limit "
                             f"{limit}")
    return res


__all__ = ["NONDETERMINISTIC", "statically_constant", "fold"]
