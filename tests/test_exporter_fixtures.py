"""ONNX files written by exporters other than PyTorch's (tools/make_exporter_fixtures.py, issue
25: skl2onnx, tf2onnx, jax2onnx, paddle2onnx) import and match ONNX Runtime on every backend at
two input sizes; a file that does not import yet has its refusal pinned, so the day it imports
this test says so."""
import pathlib

import numpy as np
import pytest

import onemodel as om
from onemodel.formats.onnx_import import OnnxUnsupportedError
from onemodel.registry import REGISTRY

FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "exporters"
pytest.importorskip("onnx")

# file -> (input name, two input shapes): batch 1 and 3, and where the exporter made a spatial
# or sequence axis dynamic, two sizes of it (odd ones, where stride-2 padding differs)
MODELS = {
    "skl2onnx_mlp_regressor.onnx": ("input", [(1, 6), (7, 6)]),
    "tf2onnx_keras_cnn_same.onnx": ("image", [(1, 15, 15, 3), (3, 15, 15, 3)]),
    # auto_pad=SAME_UPPER with stride 2 on a dynamic image: the pads depend on each parity
    "tf2onnx_keras_cnn_dynamic.onnx": ("image", [(1, 15, 15, 3), (3, 20, 17, 3)]),
    # the same on a dynamic time axis, then Reshape (b, t, -1) to a Dense layer
    "tf2onnx_keras_kws.onnx": ("spec", [(1, 9, 16, 1), (3, 20, 16, 1)]),
    "tf2onnx_keras_gru.onnx": ("seq", [(1, 4, 5), (3, 9, 5)]),
    "tf2onnx_slice_to_end.onnx": ("seq", [(1, 4, 4), (3, 9, 4)]),
    "jax2onnx_flax_cnn.onnx": ("image", [(1, 16, 16, 3), (3, 16, 16, 3)]),
    "jax2onnx_mlp.onnx": ("x", [(1, 6), (3, 6)]),
    "jax2onnx_seq_conv.onnx": ("seq", [(1, 7, 4), (3, 12, 4)]),
    "paddle2onnx_conv_resize.onnx": ("image", [(1, 3, 32, 32), (3, 3, 21, 27)]),
}


def backends():
    return sorted(REGISTRY.tables().backends)


def _ort(path, feeds):
    ort = pytest.importorskip("onnxruntime")
    s = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_an_exported_model_matches_onnx_runtime(name):
    path = FIXTURES / name
    input_name, shapes = MODELS[name]
    traced = om.load_onnx(str(path))
    for k, shape in enumerate(shapes):
        x = np.random.default_rng(k).standard_normal(shape).astype(np.float32)
        want = _ort(path, {input_name: x})
        for backend in backends():
            out = traced.create_session(backend=backend).run({input_name: x})
            for got_name, w in zip(traced.output_names, want):
                np.testing.assert_allclose(out[got_name].numpy(), w, rtol=1e-5, atol=1e-5,
                                           err_msg=f"{name} on {backend} at {shape}")


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
    assert files == set(MODELS) | set(REFUSED)


def test_four_exporters_besides_pytorchs_are_covered():
    producers = {name.split("_")[0] for name in MODELS}
    assert {"skl2onnx", "tf2onnx", "jax2onnx", "paddle2onnx"} <= producers
