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


def ort_run(m, feeds):
    """ONNX Runtime's outputs for ``feeds`` (the test skips without onnxruntime)."""
    ort = pytest.importorskip("onnxruntime")
    s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return s.run(None, feeds)
