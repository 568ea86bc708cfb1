import numpy as np
import onemodel as om

from onemodel.testing.passes import apply, assert_same, const, counts, ops, traced

W, BIAS = const(4, 3), const(3, seed=1)


def test_matmul_plus_bias_becomes_linear():
    g = traced(lambda x: ops.matmul(x, W) + BIAS, 4)
    out = apply("fuse_matmul_add", g)
    assert counts(out) == {"linear": 1}
    assert_same(g, out, 4)


def test_linear_without_bias_absorbs_the_add():
    g = traced(lambda x: ops.linear(x, W.transpose(0, 1)) + BIAS, 4)
    out = apply("fuse_matmul_add", apply("constant_folding", g))
    assert counts(out) == {"linear": 1}
    assert_same(g, out, 4)


def test_not_when_the_weight_is_an_input():
    tracer = om.Tracer()
    x = tracer.input("x", om.Tensor.from_numpy(np.ones((3, 4), np.float32)), "batch", None)
    w = tracer.input("w", om.Tensor.from_numpy(np.ones((4, 2), np.float32)), None, None)
    tracer.output("y", ops.matmul(x, w))
    g = tracer.finish().graph
    assert apply("fuse_matmul_add", g) is g


def test_bias_stays_when_the_product_has_another_user():
    g = traced(lambda x: (ops.matmul(x, W) + BIAS) * ops.matmul(x, W), 4)
    out = apply("fuse_matmul_add", apply("common_subexpression_elimination", g))
    assert counts(out) == {"add": 1, "linear": 1, "mul": 1}
    assert_same(g, out, 4)
