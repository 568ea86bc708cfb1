import numpy as np

import onemodel as om

from onemodel.testing.passes import apply, counts, ops


def _two_inputs(fn):
    tracer = om.Tracer()
    rng = np.random.default_rng(0)
    a = tracer.input("a", om.Tensor.from_numpy(rng.standard_normal((3, 4, 5)).astype(np.float32)),
                     "batch", None, None)
    b = tracer.input("b", om.Tensor.from_numpy(rng.standard_normal((3, 6, 5)).astype(np.float32)),
                     "batch", None, None)
    tracer.output("y", fn(a, b))
    return tracer.finish().graph


def _same(g, out):
    rng = np.random.default_rng(1)
    for n in (2, 4):
        feeds = {"a": rng.standard_normal((n, 4, 5)).astype(np.float32),
                 "b": rng.standard_normal((n, 6, 5)).astype(np.float32)}
        ref = om.core.interpreter.run_graph(g, feeds)["y"]
        np.testing.assert_allclose(om.core.interpreter.run_graph(out, feeds)["y"], ref, rtol=1e-5)


def test_folds_a_transposed_operand():
    g = _two_inputs(lambda a, b: ops.matmul(a, b.transpose(-1, -2)))
    out = apply("dead_code_elimination", apply("fold_transpose_matmul", g))
    assert counts(out) == {"matmul_t": 1}
    assert dict(out.nodes[0].params) == {"transpose_a": False, "transpose_b": True}
    _same(g, out)


def test_not_for_other_axes():
    g = _two_inputs(lambda a, b: ops.matmul(a.transpose(0, 1).transpose(0, 1),
                                            b.transpose(-1, -2)).transpose(0, 2))
    out = apply("fold_transpose_matmul", g)
    assert counts(out)["transpose"] == 4  # only the operand's last-two-axes transpose is folded
    _same(g, out)
    plain = _two_inputs(lambda a, b: ops.matmul(a, b.transpose(-1, -2) * 1.5))
    assert apply("fold_transpose_matmul", plain) is plain
