"""Every op lowering, checked on the op's own samples: a one-node graph is exported, run in
onnxruntime and compared with the op's kernel; the file is imported back and must give the same
result through OneModel."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

import onemodel as om  # noqa: E402
from onemodel.core.dispatch import _check_param, infer  # noqa: E402
from onemodel.core.dtype import DType  # noqa: E402
from onemodel.core.graph import GraphBuilder  # noqa: E402
from onemodel.core.interpreter import run_graph  # noqa: E402
from onemodel.core.types import TensorType  # noqa: E402
from onemodel.formats.onnx_export import OnnxExportError, to_onnx  # noqa: E402
from onemodel.formats.onnx_import import OnnxUnsupportedError, from_onnx  # noqa: E402


def _f32(a):
    a = np.asarray(a)
    return a.astype(np.float32) if a.dtype == np.float64 else a


def _cases():
    rng = np.random.default_rng(0)
    for name, op in sorted(om.registry.ops().items()):
        if op.onnx is None or op.onnx.export is None:
            continue
        for i, s in enumerate(op.samples(rng)):
            yield pytest.param(op, s, id=f"{name}-{s.name or i}")


def _graph(op, sample):
    b = GraphBuilder()
    names, arrays = [], []
    k = 0
    for a in sample.args:
        group = a if isinstance(a, list) else [a]
        for x in group:
            if x is None:
                names.append(None)
                continue
            x = _f32(x)
            nm = f"in{k}"
            k += 1
            b.add_input(nm, TensorType(DType.from_numpy(x.dtype), x.shape))
            names.append(nm)
            arrays.append((nm, x))
    params = {}
    for pname, p in op.params.items():
        v = sample.params.get(pname, p.default)
        params[pname] = _check_param(op, pname, p, v)
    types = [b.values[n].type if n is not None else None for n in names]
    out = infer(op, types, params)
    out = list(out) if isinstance(out, (tuple, list)) else [out]
    vals = b.add_node(op.name, names, out, params=params,
                      names=[f"out{j}" for j in range(len(out))])
    g = b.finish([(v.name, v.name) for v in vals])
    return g.verify(), dict(arrays)


@pytest.mark.parametrize("op,sample", list(_cases()))
def test_lowering_matches_onnxruntime(op, sample):
    ort = pytest.importorskip("onnxruntime")
    g, feeds = _graph(op, sample)
    try:
        model = to_onnx(g)
    except OnnxExportError as exc:
        if "training mode" in str(exc):
            pytest.skip(str(exc))
        raise
    want = run_graph(g, feeds)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    for name, w in want.items():
        np.testing.assert_allclose(got[name], w, rtol=1e-5, atol=1e-5, err_msg=name)
        assert got[name].dtype == w.dtype and got[name].shape == w.shape
    try:
        back = from_onnx(model)
    except OnnxUnsupportedError as exc:  # e.g. an index with a negative step, no ONNX rule
        pytest.skip(f"exported but not importable: {exc}")
    again = run_graph(back, feeds)
    for name, w in want.items():
        np.testing.assert_allclose(again[name], w, rtol=1e-5, atol=1e-5, err_msg=name)


def test_our_ops_have_onnx_mappings():
    """Every basic and nn op exports, except those the tracer refuses anyway."""
    no_export = {n for n, op in om.registry.ops().items()
                 if (op.provider or "").startswith(("onemodel-ops-basic", "onemodel-ops-nn"))
                 and (op.onnx is None or op.onnx.export is None)}
    assert no_export <= {"index_put", "mse_loss", "cross_entropy", "ctc_loss"}
