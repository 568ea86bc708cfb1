import math

import numpy as np

import onemodel as om

from onemodel.testing.passes import apply, counts, ops


def _graph(fn, with_mask=False):
    tracer = om.Tracer()
    rng = np.random.default_rng(0)
    ins = [tracer.input(n, om.Tensor.from_numpy(rng.standard_normal((3, 5, 4)).astype(np.float32)),
                        "batch", None, None) for n in ("q", "k", "v")]
    if with_mask:
        ins.append(tracer.input("mask", om.Tensor.from_numpy(
            rng.standard_normal((5, 5)).astype(np.float32)), None, None))
    tracer.output("y", fn(*ins))
    return tracer.finish().graph


def _same(g, out):
    rng = np.random.default_rng(1)
    for n in (2, 4):
        feeds = {v.name: rng.standard_normal((n, 5, 4) if v.name != "mask" else (5, 5))
                 .astype(np.float32) for v in g.inputs}
        ref = om.core.interpreter.run_graph(g, feeds)["y"]
        np.testing.assert_allclose(om.core.interpreter.run_graph(out, feeds)["y"], ref,
                                   rtol=1e-5, atol=1e-6)


def test_scaled_scores():
    g = _graph(lambda q, k, v: ops.matmul(
        ops.softmax(ops.matmul(q, k.transpose(-2, -1)) / math.sqrt(4), axis=-1), v))
    out = apply("dead_code_elimination", apply("recognize_attention", g))
    assert counts(out) == {"scaled_dot_product_attention": 1}
    _same(g, out)


def test_scaled_query_and_additive_mask():
    g = _graph(lambda q, k, v, m: ops.matmul(
        ops.softmax(ops.matmul(q * 0.5, k.transpose(-2, -1)) + m, axis=-1), v), with_mask=True)
    out = apply("dead_code_elimination", apply("recognize_attention", g))
    assert counts(out) == {"scaled_dot_product_attention": 1}
    assert out.nodes[0].inputs[3] == "mask"
    _same(g, out)


def test_not_with_another_scale_or_axis():
    g = _graph(lambda q, k, v: ops.matmul(
        ops.softmax(ops.matmul(q, k.transpose(-2, -1)) * 0.3, axis=-1), v))
    assert apply("recognize_attention", g) is g
    h = _graph(lambda q, k, v: ops.matmul(
        ops.softmax(ops.matmul(q, k.transpose(-2, -1)) * 0.5, axis=-2), v))
    assert apply("recognize_attention", h) is h
