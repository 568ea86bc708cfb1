import pytest

from onemodel.testing.passes import apply, assert_same, const, counts, ops, traced

W, B = const(5, 4), const(5, seed=1)
CW = const(3, 2, 3, 3)

ACTS = {"relu": ops.relu, "sigmoid": ops.sigmoid, "tanh": ops.tanh,
        "gelu": ops.gelu, "gelu_tanh": lambda x: ops.gelu(x, approximate="tanh")}


@pytest.mark.parametrize("act", ACTS)
def test_linear_activation(act):
    g = traced(lambda x: ACTS[act](ops.linear(x, W, B)), 4)
    out = apply("fuse_activation", g)
    assert counts(out) == {"fused_linear": 1}
    assert out.nodes[0].params["activation"] == act
    assert_same(g, out, 4)


def test_conv_relu():
    g = traced(lambda x: ops.relu(ops.conv2d(x, CW, padding=1)), 2, 5, 5)
    out = apply("fuse_activation", g)
    assert counts(out) == {"fused_conv2d": 1}
    assert_same(g, out, 2, 5, 5, rtol=1e-4)


def test_not_when_the_pre_activation_is_used_elsewhere():
    g = traced(lambda x: ops.relu(ops.linear(x, W, B)) + ops.linear(x, W, B), 4)
    g = apply("common_subexpression_elimination", g)
    assert apply("fuse_activation", g) is g


def test_not_for_other_ops():
    g = traced(lambda x: ops.exp(ops.linear(x, W, B)), 4)
    assert apply("fuse_activation", g) is g
