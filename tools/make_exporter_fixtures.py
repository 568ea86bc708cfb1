"""Write the small ONNX files of tests/fixtures/exporters/ with exporters other than PyTorch's.

Not part of CI: the exporters are heavy and their pins clash (protobuf, numpy), so give each one
a throwaway virtual environment of its own and name the exporter to run,

    python -m venv /tmp/e && /tmp/e/bin/pip install PACKAGES
    /tmp/e/bin/python tools/make_exporter_fixtures.py NAME

with NAME and PACKAGES one of

    skl2onnx     skl2onnx==1.20.0 scikit-learn onnx
    tf2onnx      tensorflow-cpu==2.21.0 tf2onnx==1.17.0
    jax2onnx     "jax[cpu]==0.10.2" flax==0.12.8 jax2onnx==0.17.1
    paddle2onnx  paddlepaddle==3.3.1 paddle2onnx==2.1.0

The versions the committed files were written with are in each function's docstring.
Commit the files it writes (a few KiB each). tests/test_exporter_fixtures.py imports them and
compares with ONNX Runtime. Weights come from fixed seeds, so a rerun with the same exporter
version writes the same models.
"""
import os
import pathlib
import sys
import tempfile

import numpy as np

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "exporters"
OPSET = 17


def _write(name: str, model) -> None:
    data = model if isinstance(model, bytes) else model.SerializeToString()
    OUT.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=OUT, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(tmp, 0o644)
    os.replace(tmp, OUT / name)
    print(f"wrote {name} ({len(data)} bytes)")


def sklearn_models() -> None:
    """skl2onnx 1.20.0 (the version the committed files record): two MLPs on fixed random
    data."""
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


def _tf_export(fn, signature, name: str) -> None:
    import tf2onnx

    model, _ = tf2onnx.convert.from_function(fn, input_signature=signature, opset=OPSET)
    _write(name, model)


def tf2onnx_models() -> None:
    """tf2onnx 1.17.0 (``from_function``) of Keras models, with tensorflow-cpu 2.21.0, keras
    3.15.1 and onnx 1.23.2 on Python 3.11:

    * a CNN with stride-2 ``padding="same"`` convolutions on a fixed 15 x 15 image (TensorFlow
      pads more at the end: asymmetric ``pads``), and the same on a dynamic image
      (``auto_pad=SAME_UPPER`` on symbolic sizes);
    * a GRU over a dynamic sequence with a dense head;
    * a keyword-spotting net: two stride-2 SAME convs over a dynamic time axis of a 16-band
      spectrogram, reshaped to (batch, time, -1) for a dense layer;
    * tensor slicing to the end (``x[:, 1:]``: tf2onnx writes the end as 2**31 - 1) fed to
      arithmetic against the whole axis.

    The GRUs become a ``Loop`` (tf2onnx does not fuse Keras 3's GRU into ONNX's GRU).
    """
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(0)

    def cnn(side):
        inp = keras.Input((side, side, 3), name="image")
        x = keras.layers.Conv2D(8, 3, strides=2, padding="same", activation="relu")(inp)
        x = keras.layers.Conv2D(12, 3, strides=2, padding="same")(x)
        x = keras.layers.BatchNormalization()(x)
        x = keras.layers.ReLU()(x)
        x = keras.layers.MaxPooling2D(2, padding="same")(x)
        x = keras.layers.GlobalAveragePooling2D()(x)
        return keras.Model(inp, keras.layers.Dense(4, activation="softmax")(x))

    fixed = cnn(15)
    sig = [tf.TensorSpec((None, 15, 15, 3), tf.float32, name="image")]
    _tf_export(tf.function(lambda image: fixed(image, training=False)), sig,
               "tf2onnx_keras_cnn_same.onnx")
    dyn = cnn(None)
    sig = [tf.TensorSpec((None, None, None, 3), tf.float32, name="image")]
    _tf_export(tf.function(lambda image: dyn(image, training=False)), sig,
               "tf2onnx_keras_cnn_dynamic.onnx")

    inp = keras.Input((None, 5), name="seq")
    x = keras.layers.GRU(8, return_sequences=True)(inp)
    x = keras.layers.GRU(6)(x)
    gru = keras.Model(inp, keras.layers.Dense(3)(x))
    sig = [tf.TensorSpec((None, None, 5), tf.float32, name="seq")]
    _tf_export(tf.function(lambda seq: gru(seq, training=False)), sig, "tf2onnx_keras_gru.onnx")

    # a keyword-spotting net: two stride-2 convs over (time, 16 bands), then (b, t, -1)
    inp = keras.Input((None, 16, 1), name="spec")
    x = keras.layers.Conv2D(4, 3, strides=2, padding="same", activation="relu")(inp)
    x = keras.layers.Conv2D(4, 3, strides=2, padding="same", activation="relu")(x)
    x = keras.layers.Reshape((-1, 4 * 4))(x)
    x = keras.layers.Dense(6, activation="tanh")(x)
    kws = keras.Model(inp, keras.layers.GlobalAveragePooling1D()(x))
    sig = [tf.TensorSpec((None, None, 16, 1), tf.float32, name="spec")]
    _tf_export(tf.function(lambda spec: kws(spec, training=False)), sig,
               "tf2onnx_keras_kws.onnx")

    w_np = np.random.default_rng(1).standard_normal((4, 4)).astype(np.float32)

    def shifted(seq):
        w = tf.constant(w_np)  # made inside: a captured tensor would become a graph input
        rolled = tf.concat([seq[:, 1:], seq[:, :1]], axis=1)     # Slice ends 1e9 or INT_MAX
        delta = rolled - seq
        return tf.reduce_sum(tf.matmul(delta, w) * seq[:, 0:], axis=1)

    sig = [tf.TensorSpec((None, None, 4), tf.float32, name="seq")]
    _tf_export(tf.function(shifted), sig, "tf2onnx_slice_to_end.onnx")


def paddle2onnx_models() -> None:
    """paddle2onnx 2.1.0 (``paddle.onnx.export``) of paddle.nn layers, with paddlepaddle 3.3.1 and
    onnx 1.17.0 on Python 3.11.

    A small conv net in the shape of PaddleOCR's detection head: stride-2 convolutions with batch
    norm, nearest and bilinear upsampling (``Resize``) back to the input's size (a multiple of
    4), a skip connection, and a classification branch; batch, height and width dynamic (paddle2onnx
    2.1 names them ``DynamicDimension.<k>``). paddle2onnx does not export a ``scale_factor``
    interpolate of Paddle 3's PIR programs ("the 0th elementwise MUST be FloatAttribute"), so
    the sizes are given: a ``Resize`` with ``sizes`` computed from ``Shape`` at run time.
    """
    import paddle
    import paddle.nn as nn
    import paddle.nn.functional as F

    paddle.seed(0)

    class Net(nn.Layer):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2D(3, 8, 3, stride=2, padding=1),
                                      nn.BatchNorm2D(8), nn.ReLU())
            self.down = nn.Sequential(nn.Conv2D(8, 8, 3, stride=2, padding=1),
                                      nn.BatchNorm2D(8), nn.ReLU6())
            self.head = nn.Conv2D(8, 1, 1)
            self.fc = nn.Linear(8, 5)

        def forward(self, image):
            s = self.stem(image)
            d = self.down(s)
            up = F.interpolate(d, size=s.shape[2:], mode="nearest")
            mask = F.sigmoid(self.head(s + up))
            mask = F.interpolate(mask, size=image.shape[2:], mode="bilinear", align_corners=False)
            cls = F.softmax(self.fc(F.adaptive_avg_pool2d(d, 1).flatten(1)), axis=-1)
            return mask, cls

    net = Net()
    net.eval()
    with tempfile.TemporaryDirectory() as tmp:
        spec = [paddle.static.InputSpec([None, 3, None, None], "float32", name="image")]
        paddle.onnx.export(net, os.path.join(tmp, "net"), input_spec=spec, opset_version=OPSET)
        with open(os.path.join(tmp, "net.onnx"), "rb") as f:
            _write("paddle2onnx_conv_resize.onnx", f.read())


def jax2onnx_models() -> None:
    """jax2onnx 0.17.1 (``to_onnx``) of a flax.nnx CNN and a plain-jax MLP, with jax 0.10.2,
    flax 0.12.8 and onnx 1.23.2 on Python 3.11.

    The CNN is NHWC (flax's layout; jax2onnx transposes around each Conv) with a stride-2 SAME
    convolution, average pooling and a dense head, batch ``B`` symbolic; the MLP is plain
    ``jnp`` (dot, tanh, gelu, layer norm written out), batch ``B`` symbolic; a 1-D conv net over
    a sequence (two stride-2 SAME convs, a mean over time), batch ``B`` and time ``T`` symbolic.
    """
    import jax
    import jax.numpy as jnp
    from flax import nnx
    from jax2onnx import to_onnx

    class CNN(nnx.Module):
        def __init__(self, rngs):
            self.conv1 = nnx.Conv(3, 8, (3, 3), strides=(2, 2), padding="SAME", rngs=rngs)
            self.conv2 = nnx.Conv(8, 8, (3, 3), padding="SAME", rngs=rngs)
            self.dense = nnx.Linear(8 * 4 * 4, 4, rngs=rngs)

        def __call__(self, x):
            x = nnx.relu(self.conv1(x))
            x = nnx.relu(self.conv2(x))
            x = nnx.avg_pool(x, window_shape=(2, 2), strides=(2, 2))
            return nnx.log_softmax(self.dense(x.reshape(x.shape[0], -1)))

    cnn = CNN(nnx.Rngs(0))
    _write("jax2onnx_flax_cnn.onnx",
           to_onnx(cnn, [("B", 16, 16, 3)], opset=OPSET, input_names=["image"]))

    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    w1 = jax.random.normal(keys[0], (6, 16)) * 0.5
    w2 = jax.random.normal(keys[1], (16, 3)) * 0.5
    b2 = jax.random.normal(keys[2], (3,)) * 0.1

    def mlp(x):
        h = jax.nn.gelu(x @ w1)
        h = (h - h.mean(-1, keepdims=True)) / jnp.sqrt(h.var(-1, keepdims=True) + 1e-5)
        return jnp.tanh(h @ w2 + b2)

    _write("jax2onnx_mlp.onnx", to_onnx(mlp, [("B", 6)], opset=OPSET, input_names=["x"]))

    class SeqConv(nnx.Module):  # batch and time symbolic: SAME at stride 2 on a dynamic length
        def __init__(self, rngs):
            self.conv1 = nnx.Conv(4, 8, (3,), strides=(2,), padding="SAME", rngs=rngs)
            self.conv2 = nnx.Conv(8, 8, (3,), strides=(2,), padding="SAME", rngs=rngs)
            self.out = nnx.Linear(8, 2, rngs=rngs)

        def __call__(self, x):
            x = nnx.gelu(self.conv2(nnx.relu(self.conv1(x))))
            return self.out(x.mean(axis=1))

    _write("jax2onnx_seq_conv.onnx",
           to_onnx(SeqConv(nnx.Rngs(1)), [("B", "T", 4)], opset=OPSET, input_names=["seq"]))


EXPORTERS = {"skl2onnx": sklearn_models, "tf2onnx": tf2onnx_models, "jax2onnx": jax2onnx_models,
             "paddle2onnx": paddle2onnx_models}


def main(argv: list[str]) -> int:
    import warnings

    warnings.filterwarnings("ignore")
    unknown = sorted(set(argv) - set(EXPORTERS))
    if unknown or not argv:
        print(f"name the exporters to run, of {sorted(EXPORTERS)}", file=sys.stderr)
        return 2
    for name in argv:
        EXPORTERS[name]()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
