import pytest

from onemodel import DType

from .helpers import apply, assert_same, counts, ops, traced

NOOPS = {
    "dropout_eval": lambda x: ops.relu(ops.dropout(x, 0.5, training=False)),
    "dropout_p0": lambda x: ops.relu(ops.dropout(x, 0.0, training=False)),
    "reshape_same": lambda x: ops.relu(x.reshape(x.shape[0], 4)),
    "transpose_pair": lambda x: ops.relu(x.transpose(0, 1).transpose(1, 0)),
    "cast_same": lambda x: ops.relu(ops.cast(x, DType.F32)),
    "identity": lambda x: ops.relu(ops.identity(x)),
    "times_one": lambda x: ops.relu(x * 1.0),
    "plus_zero": lambda x: ops.relu(0.0 + x),
}


@pytest.mark.parametrize("name", NOOPS)
def test_removes(name):
    g = traced(NOOPS[name], 4)
    out = apply("dead_code_elimination", apply("noop_elimination", g))
    assert counts(out) == {"relu": 1}, out
    assert_same(g, out, 4)


KEEP = {
    "reshape_other": lambda x: ops.relu(x.reshape(x.shape[0], 2, 2)),
    "one_transpose": lambda x: ops.relu(x.transpose(0, 1)),
    "cast_other": lambda x: ops.relu(ops.cast(x, DType.F64)),
    "times_two": lambda x: ops.relu(x * 2.0),
}


@pytest.mark.parametrize("name", KEEP)
def test_keeps(name):
    g = traced(KEEP[name], 4)
    assert apply("noop_elimination", g) is g
