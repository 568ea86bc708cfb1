from onemodel import DType

from .helpers import apply, assert_same, const, counts, ops, traced

BIAS = const(4)


def test_chain_becomes_one_node():
    g = traced(lambda x: ops.tanh(ops.relu(x + BIAS) * 2.0 - 1.0), 4)
    out = apply("fuse_elementwise", g)
    assert counts(out) == {"elementwise_chain": 1}
    steps = out.nodes[0].params["steps"]
    assert [s[0] for s in steps] == ["add", "relu", "mul", "sub", "tanh"]
    assert_same(g, out, 4)


def test_chain_stops_at_a_value_with_two_users():
    g = traced(lambda x: ops.exp(x * 2.0) + ops.exp(x * 2.0).sum(axis=-1, keepdims=True), 4)
    g = apply("common_subexpression_elimination", g)
    out = apply("fuse_elementwise", g)
    # exp's result has two users (sum and add): the chain ends there, add stays on its own
    assert counts(out) == {"add": 1, "elementwise_chain": 1, "sum": 1}
    chain = next(n for n in out.nodes if n.op == "elementwise_chain")
    assert [s[0] for s in chain.params["steps"]] == ["mul", "exp"]
    assert_same(g, out, 4)


def test_not_for_single_ops_or_broadcasting_steps_or_ints():
    single = traced(lambda x: ops.relu(x), 4)
    assert apply("fuse_elementwise", single) is single
    widening = traced(lambda x: ops.exp(x.sum(axis=-1, keepdims=True)) + BIAS, 4)
    assert apply("fuse_elementwise", widening) is widening
    ints = traced(lambda x: ops.cast(x, DType.I64) * 2 + 1, 4)
    assert apply("fuse_elementwise", ints) is ints
