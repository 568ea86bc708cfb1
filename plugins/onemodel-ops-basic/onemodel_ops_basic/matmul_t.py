"""``matmul_t``: matmul with its operands' last two axes swapped first, made by the
fold_transpose_matmul pass so that no transposed copy is made.

Its kernel composes matmul's own kernel on swapped-axes views; no gradient (fusion happens after
tracing); exporting to ONNX writes the Transpose and MatMul it stands for.
"""
from __future__ import annotations

import math

import attrs
import numpy as np

from onemodel.core.dispatch import infer as _infer
from onemodel.core.types import TensorType
from onemodel.registry import OnnxSpec, OpDef, OpTraits, Param, Sample, get_op

from .linalg import matmul_batch, matmul_cost


def _t(a):
    return np.swapaxes(a, -1, -2)


def _tt(t: TensorType) -> TensorType:
    s = list(t.shape)
    s[-1], s[-2] = s[-2], s[-1]
    return TensorType(t.dtype, s)


def _matmul_t(a, b, transpose_a=False, transpose_b=False):
    return get_op("matmul").kernel(_t(a) if transpose_a else a, _t(b) if transpose_b else b)


def _matmul_t_infer(a, b, transpose_a=False, transpose_b=False):
    return _infer(get_op("matmul"), [_tt(a) if transpose_a else a, _tt(b) if transpose_b else b],
                  {})


def _samples(rng):
    yield Sample(args=(rng.standard_normal((4, 3)), rng.standard_normal((4, 5))),
                 params={"transpose_a": True}, grad=False, name="ta")
    yield Sample(args=(rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 4))),
                 params={"transpose_b": True}, grad=False, name="tb")


def _export(ctx, node):
    outs = []
    for name, t, flag in zip(ctx.inputs(node), ctx.input_types(node),
                             (node.params.get("transpose_a"), node.params.get("transpose_b"))):
        if flag:
            perm = list(range(len(t.shape)))
            perm[-1], perm[-2] = perm[-2], perm[-1]
            name = ctx.make_node("Transpose", [name], name="transpose", perm=perm)
            t = attrs.evolve(t, shape=tuple(_tt(t).shape))
        outs.append((name, t))
    ctx.lower("matmul", [n for n, _ in outs], [t for _, t in outs], outputs=ctx.outputs(node))


def _batch(params, types):
    """Rows of ``a`` split when it is not transposed; ``b`` as in matmul."""
    if params.get("transpose_a"):
        return None
    return matmul_batch(types[0], types[1])


def _cost(ins, outs, params):
    c = matmul_cost(ins, outs, params)
    b = ins[1]
    packs = math.prod(int(d) for d in b.shape) if len(b.shape) == 2 else 0
    return attrs.evolve(c, packs=packs)


matmul_t = OpDef(
    name="matmul_t", inputs=("a", "b"),
    params={"transpose_a": Param(kind="bool", default=False),
            "transpose_b": Param(kind="bool", default=False)},
    kernel=_matmul_t, infer=_matmul_t_infer, vjp=None, samples=_samples,
    onnx=OnnxSpec(export=_export, doc="Transpose, then MatMul"),
    traits=OpTraits(batch=_batch, cost=_cost),
    doc="matmul with its operands' last two axes swapped first, made by fold_transpose_matmul.")

OPS = (matmul_t,)
