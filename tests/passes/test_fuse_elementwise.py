import numpy as np

import onemodel as om
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


def test_two_chains_never_claim_one_node():
    # issue 12 item 6: x*0.5 and relu(x)*0.5 both flow into one add; each chain used to claim it
    g = traced(lambda x: x * 0.5 + x.relu() * 0.5, 4)
    out = apply("fuse_elementwise", g)
    assert_same(g, out, 4)
    claimed = [s[0] for n in out.nodes if n.op == "elementwise_chain" for s in n.params["steps"]]
    assert claimed.count("add") == 1


def test_fan_in_graph_runs_at_every_level():
    x = om.Tensor.from_list([[-1.0, 2.0, 0.5, -3.0], [4.0, -0.25, 0.0, 1.5]])
    traced_model = om.trace(lambda x: x * 0.5 + x.relu() * 0.5, x, "batch", None)
    want = (x * 0.5 + x.relu() * 0.5).numpy()
    for level in ("none", "basic", "all"):
        with traced_model.create_session(optimization=level) as s:
            np.testing.assert_allclose(s.run({"input": x})["output"].numpy(), want)
