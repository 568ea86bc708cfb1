"""Write the small ONNX files of tests/fixtures/exporters/ with exporters other than PyTorch's.

Not part of CI: the exporters are heavy, so run this in a throwaway virtual environment,
    python -m venv /tmp/exporters && /tmp/exporters/bin/pip install skl2onnx scikit-learn onnx
    /tmp/exporters/bin/python tools/make_exporter_fixtures.py
and commit the files it writes (a few KiB each). tests/test_exporter_fixtures.py imports them and
compares with ONNX Runtime. Each model is trained on fixed random data, so the files are the same
on every run of the same exporter version.
"""
import os
import pathlib
import sys
import tempfile

import numpy as np

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "exporters"
OPSET = 17


def _write(name: str, model) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    data = model.SerializeToString()
    fd, tmp = tempfile.mkstemp(dir=OUT, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(tmp, 0o644)
    os.replace(tmp, OUT / name)
    print(f"wrote {name} ({len(data)} bytes)")


def sklearn_models() -> None:
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType
    from sklearn.neural_network import MLPClassifier, MLPRegressor

    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 6)).astype(np.float32)
    y = np.stack([x[:, 0] - 2 * x[:, 1], np.tanh(x[:, 2] * x[:, 3])], axis=1)
    reg = MLPRegressor(hidden_layer_sizes=(12, 8), max_iter=50, random_state=0).fit(x, y)
    types = [("input", FloatTensorType([None, 6]))]
    _write("skl2onnx_mlp_regressor.onnx",
           convert_sklearn(reg, initial_types=types, target_opset=OPSET))
    # a classifier writes ai.onnx.ml's ZipMap and a string/int label output: a refusal to pin
    cls = MLPClassifier(hidden_layer_sizes=(8,), max_iter=50, random_state=0).fit(x, y[:, 0] > 0)
    _write("skl2onnx_mlp_classifier.onnx",
           convert_sklearn(cls, initial_types=types, target_opset={"": OPSET, "ai.onnx.ml": 3}))


if __name__ == "__main__":
    import warnings

    warnings.filterwarnings("ignore")
    sklearn_models()
    sys.exit(0)
