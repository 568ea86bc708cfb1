import numpy as np

from onemodel import DType
from onemodel.core.graph import GraphBuilder
from onemodel.core.symbolic import Dim
from onemodel.core.types import TensorType
from onemodel.registry import OpDef, Sample, hookimpl

from .helpers import apply, assert_same, const, counts, ops, traced

W = const(4, 4)


def test_folds_constant_subgraphs():
    g = traced(lambda x: ops.matmul(x, W.transpose(0, 1) * 2.0), 4)
    assert counts(g) == {"matmul": 1, "mul": 1, "transpose": 1}
    out = apply("constant_folding", g)
    assert counts(out) == {"matmul": 1}
    assert_same(g, out, 4)
    folded = [a for a in out.initializers.values() if a.shape == (4, 4)]
    assert folded and not folded[0].flags.writeable


def test_never_folds_what_depends_on_an_input():
    g = traced(lambda x: ops.relu(x * 2.0), 4)
    assert apply("constant_folding", g) is g


def test_never_folds_symbolic_sizes():
    b = Dim.symbol("batch")
    gb = GraphBuilder()
    gb.add_input("x", TensorType(DType.F32, (b, 2)))
    gb.add_initializer("c", np.ones(2, np.float32))
    e, = gb.add_node("expand", ["c"], [TensorType(DType.F32, (b, 2))], {"shape": (b, 2)})
    y, = gb.add_node("add", ["x", e.name], [TensorType(DType.F32, (b, 2))])
    g = gb.finish([("y", y.name)])
    assert apply("constant_folding", g) is g


def test_respects_pure_false(registered):
    op = OpDef(name="folding_test_random", inputs=("x",), kernel=lambda x: x + np.random.rand(),
               infer=lambda x: x, vjp=None, pure=False,
               samples=lambda rng: [Sample(args=(np.ones(2),))])

    class Plugin:
        @hookimpl
        def onemodel_ops(self):
            return (op,)

    registered(Plugin(), "folding-test")
    gb = GraphBuilder()
    gb.add_input("x", TensorType(DType.F32, (2,)))
    gb.add_initializer("c", np.ones(2, np.float32))
    r, = gb.add_node("folding_test_random", ["c"], [TensorType(DType.F32, (2,))])
    y, = gb.add_node("add", ["x", r.name], [TensorType(DType.F32, (2,))])
    g = gb.finish([("y", y.name)])
    assert apply("constant_folding", g) is g
