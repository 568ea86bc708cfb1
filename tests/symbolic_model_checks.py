"""The two checks a test of a small traced model repeats: every backend at two optimisation
levels and two batch sizes, and the ONNX round trip against onnxruntime and the import."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel import Tensor


def check_every_level(traced, backend: str, feeds, batches=(2, 5), levels=("none", "all"),
                      tol: float = 1e-5) -> None:
    """``feeds(batch)`` gives ``(x, want)``; the session's output must match at each level."""
    for level in levels:
        with om.Session(traced, backend=backend, optimization=level) as s:
            for batch in batches:
                x, want = feeds(batch)
                got = s.run({traced.input_names[0]: x})[traced.output_names[0]].numpy()
                np.testing.assert_allclose(got, want, rtol=tol, atol=tol,
                                           err_msg=f"{backend} at {level}, batch {batch}")


def check_onnx_round_trip(traced, path, feeds, opset: int | None = None, batches=(2, 7),
                          tol: float = 1e-5) -> None:
    """Export to ``path``; onnxruntime and ``om.load_onnx`` must both give ``want``."""
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    traced.save_onnx(path, **({} if opset is None else {"opset": opset}))
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    back = om.load_onnx(path)
    for batch in batches:
        x, want = feeds(batch)
        np.testing.assert_allclose(sess.run(None, {sess.get_inputs()[0].name: x})[0], want,
                                   rtol=tol, atol=tol, err_msg=f"onnxruntime, batch {batch}")
        np.testing.assert_allclose(back(Tensor.from_numpy(x)).numpy(), want, rtol=tol, atol=tol,
                                   err_msg=f"the import, batch {batch}")
