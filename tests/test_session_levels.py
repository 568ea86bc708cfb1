"""Every optimization level computes what the reference interpreter computes: on models (MLP,
CNN, a transformer encoder layer, written with ops and from primitives), on each fused pattern,
at two sizes of the symbolic axis, and on random graphs built from every op's samples."""
from __future__ import annotations

import math
import zlib

import numpy as np
import pytest

import onemodel as om
from onemodel import testing
from onemodel.core.interpreter import run_graph

from . import session_models as models

LEVELS = ("none", "basic", "all")
ops = om.ops


def _check(traced_or_graph, shape_of, sizes=(2, 5), rtol=2e-4, atol=2e-4):
    graph = getattr(traced_or_graph, "graph", traced_or_graph)
    sessions = {lvl: om.Session(graph, optimization=lvl) for lvl in LEVELS}
    for s in sessions.values():
        s.optimized_graph.verify()
    rng = np.random.default_rng(5)
    for n in sizes:
        feeds = {v.name: rng.standard_normal(shape_of(v, n)).astype(v.dtype.numpy)
                 for v in graph.inputs}
        ref = run_graph(graph, feeds)
        for lvl, s in sessions.items():
            out = s.run(feeds)
            for k in ref:
                np.testing.assert_allclose(out[k].numpy(), ref[k], rtol=rtol, atol=atol,
                                           err_msg=f"level {lvl}, size {n}, output {k}")
    return sessions


def _batch(v, n):
    return tuple(n if isinstance(d, om.core.Dim) else d for d in v.shape)


MODELS = {
    "mlp": lambda: models.mlp((20, 16, 16, 4)),
    "cnn": models.cnn,
    "cnn_bn": models.cnn_bn,
    "deep": lambda: models.deep(6, 8),
    "branches": lambda: models.branches(3, 8),
}


@pytest.mark.parametrize("name", MODELS)
def test_models(name):
    fn, shape = MODELS[name]()
    _check(models.trace(fn, shape), _batch)


@pytest.mark.parametrize("primitives", [False, True], ids=["ops", "primitives"])
def test_transformer_encoder_layer(primitives):
    fn, _ = models.encoder_layer(d=16, heads=2, ffn=32, primitives=primitives)
    traced = models.trace(fn, (6, 16), axes=("batch", "seq"))

    def shape_of(v, n):  # batch and seq both vary
        return (n, n + 3, 16)

    sessions = _check(traced, shape_of)
    fused = sessions["all"].optimized_graph.op_counts()
    assert fused.get("scaled_dot_product_attention") == 1 and fused.get("layer_norm") == 2
    assert "fused_linear" in fused


W, BIAS = models.Params(3)(8, 8), models.Params(4)(8)
PATTERNS = {
    "matmul_add": lambda x: ops.matmul(x, W) + BIAS,
    "linear_relu": lambda x: ops.relu(ops.linear(x, W, BIAS)),
    "linear_gelu": lambda x: ops.gelu(ops.linear(x, W)),
    "linear_sigmoid_tanh": lambda x: ops.tanh(ops.sigmoid(ops.linear(x, W, BIAS))),
    "transpose_matmul": lambda x: ops.matmul(x, (x * 2.0).transpose(0, 1)),
    "elementwise_chain": lambda x: ops.exp(ops.relu(x * 0.5 + BIAS) - 1.0) / 3.0,
    "gelu_primitives": lambda x: 0.5 * x * (1.0 + ops.erf(x / math.sqrt(2.0))),
    "gelu_tanh_primitives": lambda x: 0.5 * x * (1.0 + ops.tanh(
        math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
    "layer_norm_primitives": lambda x: (x - x.mean(axis=-1, keepdims=True)) / ops.sqrt(
        ((x - x.mean(axis=-1, keepdims=True)) ** 2).mean(axis=-1, keepdims=True) + 1e-5) * W[0],
    "noops": lambda x: ops.dropout(ops.cast(x, om.DType.F32), 0.5, training=False).reshape(
        x.shape[0], 8).transpose(0, 1).transpose(0, 1) * 1.0,
    "cse": lambda x: ops.relu(x * 3.0) + ops.relu(x * 3.0),
}


@pytest.mark.parametrize("name", PATTERNS)
def test_fused_patterns(name):
    sessions = _check(models.trace(PATTERNS[name], (8,)), _batch)
    assert len(sessions["all"].optimized_graph.nodes) <= len(sessions["none"].optimized_graph.nodes)


# -- random graphs from the op samples ------------------------------------------------------------
def _sample_cases():
    rng = np.random.default_rng(0)
    for name, op in sorted(om.registry.ops().items()):
        for i, s in enumerate(op.samples(rng)):
            yield pytest.param(name, i, id=f"{name}-{s.name or i}")


def _sample_graph(op, sample, rng):
    """A graph applying ``op`` to the sample, each input randomly a feed or a constant, then a
    random elementwise tail on float outputs (so the fusions have something to do)."""
    def tail(gb, v):
        cur = v
        if v.dtype.is_float and rng.random() < 0.7:
            for step in rng.choice(["relu", "tanh", "scale", "exp"], size=rng.integers(1, 4)):
                if step == "scale":
                    c = gb.add_initializer(gb.fresh("k"), np.asarray(0.5, v.dtype.numpy))
                    cur, = gb.add_node("mul", [cur.name, c.name], [cur.type])
                else:
                    cur, = gb.add_node(str(step), [cur.name], [cur.type])
        return cur

    return testing.sample_graph(op, sample, constant=lambda j: rng.random() >= 0.5, tail=tail)


@pytest.mark.parametrize("name,index", list(_sample_cases()))
def test_random_graphs_from_op_samples(name, index):
    op = om.registry.get_op(name)
    sample = list(op.samples(np.random.default_rng(0)))[index]
    rng = np.random.default_rng(zlib.crc32(f"{name}-{index}".encode()))  # stable per case
    built = _sample_graph(op, sample, rng)
    if built is None:
        pytest.skip(f"{name} cannot be part of a graph with these params")
    graph, feeds = built
    graph.verify()
    with np.errstate(all="ignore"):
        ref = run_graph(graph, feeds)
        for lvl in LEVELS:
            s = om.Session(graph, optimization=lvl)
            s.optimized_graph.verify()
            out = s.run(feeds)
            for k, want in ref.items():
                got = out[k].numpy()
                assert got.dtype == want.dtype and got.shape == want.shape, (lvl, k)
                np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5,
                                           err_msg=f"{name} at level {lvl}")
