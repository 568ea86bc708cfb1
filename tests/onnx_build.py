"""Small hand-made ONNX models for the import tests: build, checked by onnx.checker, and run in
ONNX Runtime (skipped when it is not installed)."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402


def model(nodes, inputs, outputs, inits=(), opset=17, ir_version=8):
    """A checked ModelProto of one graph over the default domain at ``opset``."""
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir_version
    onnx.checker.check_model(m)
    return m


def init(name, arr):
    """An initializer from anything numpy takes."""
    return onnx.numpy_helper.from_array(np.asarray(arr), name)


def reference_run(m, feeds):
    """onnx's reference evaluator's outputs for ``feeds``."""
    from onnx.reference import ReferenceEvaluator

    return ReferenceEvaluator(m).run(None, feeds)


def ort_or_none(m, feeds):
    """ONNX Runtime's outputs for ``feeds``, or None when onnxruntime is not installed (the
    caller still has the reference to compare with)."""
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


def check_import_on_every_backend(m, feed_sets, rtol=1e-5, atol=1e-6, ort=True):
    """Import ``m`` once; every backend at each feed set must match onnx's reference and (with
    ``ort``, where installed) ONNX Runtime in shape, dtype and value. Returns the graph."""
    import onemodel as om
    from onemodel.formats.onnx_import import from_onnx

    graph = from_onnx(m)
    for feeds in feed_sets:
        wants = [reference_run(m, feeds)] + ([ort_or_none(m, feeds)] if ort else [])
        for backend in om.backends():
            with om.Session(graph, backend=backend) as sess:
                got = sess.run(feeds)
            for want in wants:
                if want is None:
                    continue
                for (name, _), w in zip(graph.outputs, want):
                    g = got[name].numpy()
                    assert g.shape == w.shape and g.dtype == w.dtype, (backend, name, g.shape,
                                                                       w.shape, g.dtype)
                    np.testing.assert_allclose(g, w, rtol=rtol, atol=atol,
                                               err_msg=f"{backend} {name}")
    return graph


def ort_run(m, feeds):
    """ONNX Runtime's outputs for ``feeds`` (the test skips without onnxruntime)."""
    ort = pytest.importorskip("onnxruntime")
    s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return s.run(None, feeds)
