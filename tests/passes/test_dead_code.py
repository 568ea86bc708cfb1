import numpy as np

from onemodel import DType
from onemodel.core.graph import GraphBuilder
from onemodel.core.types import TensorType
from onemodel.registry import OpDef, Sample, hookimpl

from .helpers import apply, counts


def _graph(unused_op="relu"):
    gb = GraphBuilder()
    gb.add_input("x", TensorType(DType.F32, (2,)))
    gb.add_initializer("unused_const", np.ones(3, np.float32))
    gb.add_node(unused_op, ["x"], [TensorType(DType.F32, (2,))])
    gb.add_node("mul", ["unused_const", "unused_const"], [TensorType(DType.F32, (3,))])
    y, = gb.add_node("tanh", ["x"], [TensorType(DType.F32, (2,))])
    return gb.finish([("y", y.name)])


def test_removes_unused_nodes_and_constants():
    out = apply("dead_code_elimination", _graph())
    assert counts(out) == {"tanh": 1}
    assert not out.initializers


def test_keeps_live_graphs_unchanged():
    g = apply("dead_code_elimination", _graph())
    assert apply("dead_code_elimination", g) is g


def test_keeps_impure_nodes(registered):
    op = OpDef(name="dce_test_effect", inputs=("x",), kernel=lambda x: x, infer=lambda x: x,
               vjp=None, pure=False, samples=lambda rng: [Sample(args=(np.ones(2),))])

    class Plugin:
        @hookimpl
        def onemodel_ops(self):
            return (op,)

    registered(Plugin(), "dce-test")
    out = apply("dead_code_elimination", _graph("dce_test_effect"))
    assert counts(out) == {"dce_test_effect": 1, "tanh": 1}


def test_batch_norm_is_pure_only_in_eval_mode():
    from onemodel.core.graph import GraphBuilder
    from onemodel.core.types import TensorType
    from onemodel.core.dtype import DType
    from onemodel.passes.dead_code import eliminate_dead_code

    import numpy as np

    for training, kept in ((False, False), (True, True)):
        b = GraphBuilder()
        b.add_input("x", TensorType(DType.F32, (4, 3)))
        b.add_initializer("m", np.zeros(3, np.float32))
        b.add_initializer("v", np.ones(3, np.float32))
        b.add_node("batch_norm", ["x", "m", "v", None, None], [TensorType(DType.F32, (4, 3))],
                   {"training": training, "momentum": 0.1, "eps": 1e-5})
        (y,) = b.add_node("relu", ["x"], [TensorType(DType.F32, (4, 3))])
        graph = b.finish([("y", y.name)]).verify()
        ops = [n.op for n in eliminate_dead_code(graph).nodes]
        assert ("batch_norm" in ops) == kept
