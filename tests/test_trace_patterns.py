"""Real-model patterns, traced with the check and run at three other sizes of each symbolic axis
(below and above the example): each equals eager code, or the session refuses the size with a
`SessionError` naming the axis (a guard); and its ONNX export gives the same answer in ONNX
Runtime at another size. Constants of the model (head counts, head dims, group and beam counts)
are chosen equal to example sizes on purpose: a plain int is a constant, never an axis."""
import numpy as np
import pytest

import onemodel as om
from onemodel import DType, SessionError, Tensor

F32, I64 = DType.F32, DType.I64
D = 32


def randn(*shape, seed=0):
    return Tensor.randn(F32, *shape, seed=seed)


def heads_split(x):
    """Multi-head self-attention with 4 heads (= the example batch) of dim 8 (= example seq)."""
    b, s, d = x.shape
    q = x.reshape(b, s, 4, 8).transpose(1, 2)
    w = om.ops.softmax(q @ q.transpose(2, 3) / 8 ** 0.5, dim=-1)
    return (w @ q).transpose(1, 2).reshape(b, s, d)


def causal(x):
    """Scores masked above the diagonal, built from the symbolic seq."""
    s = x.shape[1]
    i = Tensor.arange(I64, s)
    future = i.unsqueeze(0) > i.unsqueeze(1)
    scores = x @ x.transpose(1, 2)
    scores = om.ops.where(future, Tensor.full(F32, -1e9, 1), scores)
    return om.ops.softmax(scores, axis=-1) @ x


def padded(x, mask):
    """Padding mask from a (batch, seq) input: padded keys get no weight."""
    scores = x @ x.transpose(1, 2) + (1.0 - mask.unsqueeze(1)) * -1e9
    return om.ops.softmax(scores, axis=-1) @ x


CLS = randn(1, 1, D, seed=7)


def class_token(x):
    """ViT's class token: concatenated in front of the sequence, read back at position 0."""
    b = x.shape[0]
    tok = CLS.expand(b, 1, D)
    y = om.ops.concat([tok, x], axis=1) * 0.5
    return y[:, 0] + y[:, 1:].mean(axis=1)


def halves(x):
    """The first half of the sequence against the second (GLU-like), symbolic halves."""
    h = x.shape[1] // 2
    return x[:, :h] * x[:, h:2 * h].sigmoid()


POS = randn(12, D, seed=8)


def positional(x):
    """A learned positional table of 12 rows, sliced to the sequence: valid up to seq 12."""
    return x + POS[: x.shape[1]]


def group_norm(x):
    """GroupNorm written with a reshape: 4 groups (= the example batch)."""
    b = x.shape[0]
    g = x.reshape(b, 4, -1)
    mean = g.mean(axis=-1, keepdims=True)
    var = ((g - mean) ** 2).mean(axis=-1, keepdims=True)
    return ((g - mean) / (var + 1e-5) ** 0.5).reshape(x.shape)


def beams(x):
    """Beam search's tiling: each sequence repeated for 4 beams (= the example batch)."""
    b, s, d = x.shape
    tiled = x.unsqueeze(1).expand(b, 4, s, d).reshape(b * 4, s, d)
    return tiled.sum(axis=-1)


def mask_for(batch, seq):
    m = (np.arange(seq)[None, :] < (seq - np.arange(batch)[:, None] % 3)).astype(np.float32)
    return Tensor.from_numpy(m)


# name -> (fn, input specs as {name: (make(batch, seq), axis names...)})
PATTERNS = {
    "heads_split": (heads_split, {"x": (lambda b, s: randn(b, s, D, seed=b * 31 + s),
                                        "batch", "seq", None)}),
    "causal_mask": (causal, {"x": (lambda b, s: randn(b, s, D, seed=s), "batch", "seq", None)}),
    "padding_mask": (padded, {"x": (lambda b, s: randn(b, s, D, seed=s), "batch", "seq", None),
                              "mask": (mask_for, "batch", "seq")}),
    "class_token": (class_token, {"x": (lambda b, s: randn(b, s, D, seed=s),
                                        "batch", "seq", None)}),
    "halves": (halves, {"x": (lambda b, s: randn(b, s, D, seed=s), "batch", "seq", None)}),
    "positional_table": (positional, {"x": (lambda b, s: randn(b, s, D, seed=s),
                                            "batch", "seq", None)}),
    "group_norm_reshape": (group_norm, {"x": (lambda b, s: randn(b, D, s, seed=s),
                                              "batch", None, "seq")}),
    "beams_expand": (beams, {"x": (lambda b, s: randn(b, s, D, seed=s), "batch", "seq", None)}),
}
EXAMPLE = {"batch": 4, "seq": 8}
OTHER = {"batch": (1, 2, 7), "seq": (3, 5, 16)}  # below and above the example (16 > the table)


def feeds_at(specs, batch, seq):
    return {name: spec[0](batch, seq) for name, spec in specs.items()}


def traced_pattern(name):
    fn, specs = PATTERNS[name]
    example = {n: (spec[0](EXAMPLE["batch"], EXAMPLE["seq"]),) + tuple(spec[1:])
               for n, spec in specs.items()}
    return fn, specs, om.trace(fn, example)


def eager(fn, feeds):
    with om.GradMode.no_grad():
        return fn(*feeds.values()).numpy()


@pytest.mark.parametrize("axis", ["batch", "seq"])
@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_pattern_at_other_sizes(name, axis):
    fn, specs, traced = traced_pattern(name)
    session = traced.create_session()
    for size in OTHER[axis]:
        sizes = dict(EXAMPLE, **{axis: size})
        feeds = feeds_at(specs, sizes["batch"], sizes["seq"])
        try:
            want = eager(fn, feeds)
        except om.OneModelError:
            with pytest.raises(om.OneModelError):   # eager refuses it: so must the graph
                session.run(feeds)
            continue
        try:
            got = session.run(feeds)["output"].numpy()
        except SessionError as exc:                 # a guard: named axis and bound
            assert name == "positional_table" and size > 12, exc
            assert "seq = 16" in str(exc) and "seq <= 12" in str(exc)
            continue
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_pattern_onnx_export_runs_in_onnxruntime_at_another_size(name, tmp_path):
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime is an optional extra")
    fn, specs, traced = traced_pattern(name)
    traced.save_onnx(tmp_path / f"{name}.onnx")
    sess = ort.InferenceSession(str(tmp_path / f"{name}.onnx"), providers=["CPUExecutionProvider"])
    for batch, seq in [(2, 5), (7, 3)]:
        feeds = feeds_at(specs, batch, seq)
        (got,) = sess.run(None, {k: v.numpy() for k, v in feeds.items()})
        np.testing.assert_allclose(got, eager(fn, feeds), rtol=1e-4, atol=1e-5)
