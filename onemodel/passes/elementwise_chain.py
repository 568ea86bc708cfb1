"""The ``elementwise_chain`` op record: the fused node `fuse_elementwise` creates.

Its reference kernel runs each step's own op kernel (so any pointwise op works); a backend may
register a faster `KernelDef` built from the steps' pointwise formulas. Exporting to ONNX lowers
each step through its own op's lowering, so a file never mentions the fused op. No gradient
(``vjp=None``): fusion happens after tracing.
"""
from __future__ import annotations

import numpy as np

from ..core.dispatch import infer as _infer
from ..registry import REGISTRY, get_op
from ..registry.records import OnnxSpec, OpCost, OpDef, OpTraits, Param, Sample

ACC = -1  # in a step's args: the previous step's result


def _step_args(step, inputs, acc):
    return [acc if j == ACC else inputs[j] for j in step[1]]


def _chain(*inputs, steps=()):
    acc = None
    for step in steps:
        acc = get_op(step[0]).kernel(*_step_args(step, inputs, acc), **dict(step[2]))
    return acc


def _chain_infer(*types, steps=()):
    acc = None
    for step in steps:
        acc = _infer(get_op(step[0]), _step_args(step, types, acc), dict(step[2]))
    return acc


def _plain_pointwise(op, arity: int, x) -> bool:
    """A pointwise op of ``arity`` without params whose float result stays float and finite."""
    if op.traits.pointwise is None or op.params or len(op.inputs) != arity:
        return False
    try:
        with np.errstate(all="ignore"):
            out = np.asarray(op.kernel(*[x] * arity))
    except Exception:  # noqa: BLE001 - an op that refuses these inputs is no sample
        return False
    return out.dtype == x.dtype and bool(np.isfinite(out).all())  # acos(2) is no test


def _chain_samples(rng):
    """Chains of the installed pointwise ops (the core names none of them)."""
    ops = REGISTRY.tables().ops
    x, b = np.abs(rng.standard_normal((3, 4))) + 0.5, np.abs(rng.standard_normal(4)) + 0.5
    unary = sorted(n for n, op in ops.items() if _plain_pointwise(op, 1, x))
    binary = sorted(n for n, op in ops.items() if _plain_pointwise(op, 2, x))
    for name in binary[:3]:
        steps = ((name, (0, 1), ()),) + tuple((u, (ACC,), ()) for u in unary[:2])
        yield Sample(args=([x, b],), params={"steps": steps}, grad=False, name=name)


def _export_chain(ctx, node):
    ins = ctx.inputs(node)
    types = ctx.input_types(node)
    steps = node.params["steps"]
    acc = acc_t = None
    for k, (op, args, params) in enumerate(steps):
        names = [acc if j == ACC else ins[j] for j in args]
        ts = [acc_t if j == ACC else types[j] for j in args]
        last = k == len(steps) - 1
        (acc,) = ctx.lower(op, names, ts, dict(params),
                           outputs=ctx.outputs(node) if last else None)
        acc_t = ctx.lowered_types[0]


elementwise_chain = OpDef(
    name="elementwise_chain", inputs=("inputs*",),
    params={"steps": Param(kind="any", doc="((op, args, params), ...): args index the inputs, "
                                            "-1 is the previous step's result")},
    kernel=_chain, infer=_chain_infer, vjp=None, samples=_chain_samples,
    onnx=OnnxSpec(export=_export_chain, doc="each step through its own op's lowering"),
    traits=OpTraits(batch="broadcast", cost=lambda ins, outs, params: OpCost.passes(
        outs[0], len(params.get("steps", ())) + 1)),
    torch=None,   # made by a pass, never called by a user
    doc="A chain of pointwise ops computed in one output buffer (fuse_elementwise).")
