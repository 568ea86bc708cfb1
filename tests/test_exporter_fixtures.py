"""ONNX files written by exporters other than PyTorch's (tools/make_exporter_fixtures.py, issue
25) import and match ONNX Runtime on every backend at two input sizes; a file that does not
import yet has its refusal pinned, so the day it imports this test says so."""
import pathlib

import numpy as np
import pytest

import onemodel as om
from onemodel.formats.onnx_import import OnnxUnsupportedError
from onemodel.registry import REGISTRY

FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "exporters"
pytest.importorskip("onnx")


def backends():
    return sorted(REGISTRY.tables().backends)


def _ort(path, feeds):
    ort = pytest.importorskip("onnxruntime")
    s = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


@pytest.mark.parametrize("name, features", [("skl2onnx_mlp_regressor.onnx", 6)])
def test_an_exported_model_matches_onnx_runtime(name, features):
    path = FIXTURES / name
    traced = om.load_onnx(str(path))
    for n in (1, 7):
        x = np.random.default_rng(n).standard_normal((n, features)).astype(np.float32)
        want = _ort(path, {"input": x})
        for backend in backends():
            out = traced.create_session(backend=backend).run({"input": x})
            for got_name, w in zip(traced.output_names, want):
                np.testing.assert_allclose(out[got_name].numpy(), w, rtol=1e-5, atol=1e-6,
                                           err_msg=f"{name} on {backend} at batch {n}")


REFUSED = {
    # sklearn classifiers end in ai.onnx.ml's ZipMap (a sequence of maps) and a label lookup
    "skl2onnx_mlp_classifier.onnx": "unsupported ONNX op type(s): "
                                    "ai.onnx.ml.ArrayFeatureExtractor (1 node), "
                                    "ai.onnx.ml.ZipMap (1 node)",
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_file_that_does_not_import_yet_is_refused_by_name(name):
    with pytest.raises(OnnxUnsupportedError) as err:
        om.load_onnx(str(FIXTURES / name))
    assert REFUSED[name] in str(err.value)


def test_every_fixture_is_covered():
    files = {p.name for p in FIXTURES.glob("*.onnx")}
    assert files == {"skl2onnx_mlp_regressor.onnx"} | set(REFUSED)
