"""Inference of the basic ops on symbolic shapes (Dim entries, Dim-valued params)."""
import numpy as np
import pytest

import onemodel as om
from onemodel.core import DType, Dim, TensorType
from onemodel.core.dispatch import infer
from onemodel.errors import OpError

B = Dim.symbol("batch")
S = Dim.symbol("seq")
F32, I64 = DType.F32, DType.I64


def t(*shape, dtype=F32):
    return TensorType(dtype, shape)


def run(name, *types, **params):
    op = om.registry.get_op(name)
    if op.params:
        for pname, p in op.params.items():
            if pname not in params and not p.required:
                params[pname] = p.default
    return infer(op, list(types), params)


def shape(name, *types, **params):
    return tuple(run(name, *types, **params).shape)


def test_binary_broadcast_symbolic():
    assert shape("add", t(B, 1, 4), t(3, 1)) == (B, 3, 4)
    assert run("div", t(B, dtype=I64), t(1, dtype=I64)).dtype == F32
    assert run("less", t(B, 3), t(3)).dtype == DType.BOOL
    assert shape("where", t(B, 1, dtype=DType.BOOL), t(1, 5), t(5)) == (B, 5)
    with pytest.raises(OpError, match=r"add.*\[batch,3\].*\[4\]"):
        run("add", t(B, 3), t(4))
    with pytest.raises(OpError):
        run("mul", t(B), t(S))


def test_unary_symbolic():
    for name in ("neg", "exp", "log", "sqrt", "abs", "tanh", "sigmoid", "relu", "erf"):
        assert shape(name, t(B, S)) == (B, S)
    assert shape("clip", t(B), min=0.0) == (B,)


def test_matmul_symbolic():
    assert shape("matmul", t(B, S, 4), t(4, 8)) == (B, S, 8)
    assert shape("matmul", t(4), t(B, 4, 2)) == (B, 2)
    assert shape("matmul", t(B, 3, 4), t(4)) == (B, 3)
    assert shape("matmul", t(B), t(B)) == ()
    assert shape("matmul", t(B, 1, 3, S), t(2, S, 5)) == (B, 2, 3, 5)
    with pytest.raises(OpError, match="matmul"):
        run("matmul", t(B, 3), t(4, 2))


def test_shape_ops_symbolic():
    assert shape("transpose", t(B, S, 4), axis0=0, axis1=-1) == (4, S, B)
    assert shape("permute", t(B, S, 4), axes=(2, 0, 1)) == (4, B, S)
    assert shape("reshape", t(B, 3, 4), shape=(B, -1)) == (B, 12)
    assert shape("reshape", t(B, S, 4), shape=(-1, 4)) == (B * S, 4)
    assert shape("reshape", t(B, 6), shape=(B, 2, 3)) == (B, 2, 3)
    assert shape("reshape", t(B, S * 2), shape=(B, S, -1)) == (B, S, 2)
    with pytest.raises(OpError, match="reshape"):
        run("reshape", t(3, 6), shape=(5, -1, 7))
    with pytest.raises(OpError, match="reshape"):
        run("reshape", t(B, 6), shape=(B, 5))
    assert shape("flatten", t(B, S, 3)) == (B * S * 3,)
    assert shape("flatten", t(B, S, 3), start_axis=1) == (B, S * 3)
    assert shape("squeeze", t(B, 1, S, 1)) == (B, S)
    assert shape("squeeze", t(B, 1), axis=0) == (B, 1)
    assert shape("unsqueeze", t(B, S), axis=-1) == (B, S, 1)
    assert shape("concat", t(B, 2), t(B, 3), axis=1) == (B, 5)
    assert shape("concat", t(B, 2), t(S, 2), axis=0) == (B + S, 2)
    with pytest.raises(OpError, match="concat"):
        run("concat", t(B, 2), t(S, 2), axis=1)
    assert run("split", t(B, 6), sizes=2, axis=1) == (t(B, 2),) * 3
    assert run("split", t(B, S * 2), sizes=(S, S), axis=1) == (t(B, S), t(B, S))
    with pytest.raises(OpError, match="symbolic"):
        run("split", t(B, 6), sizes=2, axis=0)
    assert shape("expand", t(B, 1), shape=(2, -1, S)) == (2, B, S)
    assert shape("expand", t(1, 3), shape=(B, 3)) == (B, 3)
    with pytest.raises(OpError, match="expand"):
        run("expand", t(B, 3), shape=(S, 3))
    assert run("cast", t(B, 3), dtype=I64) == t(B, 3, dtype=I64)


def test_index_symbolic():
    s = lambda a=None, b=None, c=None: ("slice", a, b, c)  # noqa: E731
    assert shape("index", t(B, S, 4), index=(0,)) == (S, 4)
    assert shape("index", t(B, S, 4), index=("...", -1)) == (B, S)
    assert shape("index", t(B, S, 4), index=(s(1), None, s(None, -1))) == (B - 1, 1, S - 1, 4)
    assert shape("index", t(B, S, 4), index=(s(None, None, 2),)) == ((B + 1) // 2, S, 4)
    assert shape("index", t(B, 4), index=(s(None, B - 1), s(1, 3))) == (B - 1, 2)
    assert shape("index", t(B, 4), index=(B - 1,)) == (4,)
    assert shape("index_put", t(B, 4), t(4), index=(s(1),)) == (B, 4)
    with pytest.raises(OpError):
        run("index_put", t(B, 4), t(3), index=(s(1),))
    assert shape("gather", t(B, 5), t(B, 2, dtype=I64), axis=1) == (B, 2)
    assert shape("take", t(B, 5), t(S, dtype=I64), axis=1) == (B, S)
    assert shape("take", t(10, 5), t(B, 3, dtype=I64), axis=0) == (B, 3, 5)


def test_reduce_symbolic():
    assert shape("sum", t(B, S, 3), axis=1) == (B, 3)
    assert shape("mean", t(B, S, 3), axis=(0, 2), keepdims=True) == (1, S, 1)
    assert shape("max", t(B, S)) == ()
    assert run("argmax", t(B, S), axis=-1) == t(B, dtype=I64)
    assert run("sum", t(B, dtype=DType.I32)).dtype == I64


def test_factories_symbolic():
    assert run("full", shape=(B, 3), value=0.0, dtype=F32) == t(B, 3)
    assert run("arange", start=0, stop=B, step=1, dtype=I64) == t(B, dtype=I64)
    assert run("arange", start=1, stop=B * 2, step=2, dtype=I64).shape == ((B * 2 - 1 + 1) // 2,)
    assert shape("fill", t(B, 2), value=1) == (B, 2)
    assert shape("zeros_like", t(B)) == (B,)
    assert shape("copy", t(B, 3), t(3)) == (B, 3)
    assert shape("identity", t(B, S)) == (B, S)


def test_symbolic_results_evaluate_like_eager():
    """A symbolic slice length agrees with numpy at several concrete sizes."""
    from onemodel.core.symbolic import evaluate
    s = ("slice", 1, -1, 2)
    sym = shape("index", t(B), index=(s,))[0]
    for n in range(2, 12):
        assert evaluate(sym, {"batch": n}) == len(np.arange(n)[1:-1:2])
