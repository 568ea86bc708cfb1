from onemodel import DType
from onemodel.core.graph import GraphBuilder
from onemodel.core.types import TensorType

from onemodel.testing.passes import apply, assert_same, const, counts, ops, traced

W, B = const(4, 2, 3, 3), const(4, seed=1)
MEAN, GAMMA, BETA = const(4, seed=2), const(4, seed=3), const(4, seed=4)
VAR = ops.abs(const(4, seed=5)) + 0.5


def test_folds_into_conv():
    g = traced(lambda x: ops.batch_norm(ops.conv2d(x, W, B, padding=1), MEAN, VAR, GAMMA, BETA),
               2, 5, 5)
    out = apply("fold_batch_norm", g)
    assert counts(out) == {"conv2d": 1}
    assert_same(g, out, 2, 5, 5, rtol=1e-4, atol=1e-5)


def test_folds_into_linear_features():
    lw = const(4, 6)
    g = traced(lambda x: ops.batch_norm(ops.linear(x, lw), MEAN, VAR), 6)
    out = apply("fold_batch_norm", g)
    assert counts(out) == {"linear": 1}
    assert_same(g, out, 6, rtol=1e-4, atol=1e-5)


def test_not_in_training_mode():
    gb = GraphBuilder()
    gb.add_input("x", TensorType(DType.F32, (2, 2, 4, 4)))
    for name, arr in (("w", W.numpy()), ("m", MEAN.numpy()), ("v", VAR.numpy())):
        gb.add_initializer(name, arr)
    c, = gb.add_node("conv2d", ["x", "w", None], [TensorType(DType.F32, (2, 4, 2, 2))],
                     {"stride": 1, "padding": 0, "dilation": 1, "groups": 1})
    y, = gb.add_node("batch_norm", [c.name, "m", "v", None, None],
                     [TensorType(DType.F32, (2, 4, 2, 2))],
                     {"training": True, "momentum": 0.1, "eps": 1e-5})
    g = gb.finish([("y", y.name)])
    assert apply("fold_batch_norm", g) is g


def test_not_when_the_conv_output_has_another_user():
    def fn(x):
        c = ops.conv2d(x, W, B, padding=1)
        return ops.batch_norm(c, MEAN, VAR, GAMMA, BETA) + c

    g = traced(fn, 2, 5, 5)
    assert apply("fold_batch_norm", g) is g


def test_not_with_statistics_fed_at_run_time():
    def fn(x):
        c = ops.conv2d(x, W)
        return ops.batch_norm(c, c.mean(axis=(0, 2, 3)), VAR)

    g = traced(fn, 2, 5, 5)
    assert apply("fold_batch_norm", g) is g
