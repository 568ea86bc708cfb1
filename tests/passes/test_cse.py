from .helpers import apply, assert_same, counts, ops, traced


def test_merges_identical_nodes_and_constants():
    g = traced(lambda x: ops.relu(x * 2.0) + ops.relu(x * 2.0), 4)
    assert counts(g) == {"add": 1, "mul": 2, "relu": 2}
    out = apply("common_subexpression_elimination", g)
    assert counts(out) == {"add": 1, "mul": 1, "relu": 1}
    assert_same(g, out, 4)


def test_keeps_nodes_that_differ():
    g = traced(lambda x: x.sum(axis=0, keepdims=True) + x.sum(axis=1, keepdims=True)
               + x * 2.0 + x * 3.0, 4)
    out = apply("common_subexpression_elimination", g)
    assert counts(out) == counts(g)
