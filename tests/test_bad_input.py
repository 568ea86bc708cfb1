"""Bad input to every public function of API.md, table-driven: the wrong type, a wrong shape,
NaN or inf where it matters, an empty tensor. Each raises a `OneModelError` (the documented
subclass: `OpError`, `SessionError`, `TraceException`, `ArgumentError`...) whose message names
the function and the argument; never a raw numpy or Python error. Zero-size axes work where
PyTorch allows them (the second table)."""
from __future__ import annotations

import re

import numpy as np
import pytest

import onemodel as om
from onemodel import DType, Tensor

ops = om.ops
F32 = DType.F32


def x23():
    return Tensor.zeros(F32, 2, 3)


def _traced():
    w = Tensor.from_numpy(np.ones((3, 4), np.float32))
    return om.trace(lambda x: ops.linear(x, w), Tensor.zeros(F32, 2, 4), "batch", None)


_TRACED = None


def traced():
    global _TRACED
    if _TRACED is None:
        _TRACED = _traced()
    return _TRACED


def session():
    return traced().create_session()


def linear():
    return om.nn.Linear(4, 3)


def _ok(n=3):
    return np.ones((n, 4), np.float32)


class _NotAPlugin:
    pass


# (id, call, expected error class, regex the message must match: the function and argument)
BAD = [
    # -- Tensor factories ---------------------------------------------------------------------
    ("zeros negative size", lambda: Tensor.zeros(F32, 2, -1), om.OpError, r"Tensor\.zeros.*shape"),
    ("zeros float size", lambda: Tensor.zeros(F32, 2.5), om.OpError, r"Tensor\.zeros.*shape"),
    ("zeros str size", lambda: Tensor.zeros(F32, "2"), om.OpError, r"Tensor\.zeros.*shape"),
    ("zeros unknown dtype", lambda: Tensor.zeros("f128", 2), om.OneModelError, r"dtype.*f128"),
    ("ones bool size", lambda: Tensor.ones(F32, True), om.OpError, r"Tensor\.ones.*shape"),
    ("full str value", lambda: Tensor.full(F32, "x", 2), om.ArgumentError, r"Tensor\.full.*value"),
    ("full None value", lambda: Tensor.full(F32, None, 2), om.ArgumentError,
     r"Tensor\.full.*value"),
    ("full inf into int", lambda: Tensor.full(DType.I32, float("inf"), 2), om.ArgumentError,
     r"Tensor\.full.*value inf.*i32"),
    ("full nan into int", lambda: Tensor.full(DType.I64, float("nan"), 2), om.ArgumentError,
     r"Tensor\.full.*value nan"),
    ("full 300 into i8", lambda: Tensor.full(DType.I8, 300, 2), om.ArgumentError,
     r"Tensor\.full.*300.*i8"),
    ("full -1 into u8", lambda: Tensor.full(DType.U8, -1, 2), om.ArgumentError,
     r"Tensor\.full.*-1.*u8"),
    ("arange nan stop", lambda: Tensor.arange(F32, 0, float("nan")), om.ArgumentError,
     r"Tensor\.arange.*stop.*finite"),
    ("arange inf stop", lambda: Tensor.arange(F32, float("inf")), om.ArgumentError,
     r"Tensor\.arange.*stop.*finite"),
    ("arange str start", lambda: Tensor.arange(F32, "a", 3), om.ArgumentError,
     r"Tensor\.arange.*start.*number"),
    ("arange zero step", lambda: Tensor.arange(F32, 0, 3, 0), om.OpError, r"Tensor\.arange.*step"),
    ("randn int dtype", lambda: Tensor.randn(DType.I32, 2), om.OpError, r"Tensor\.randn.*dtype"),
    ("randn negative", lambda: Tensor.randn(F32, -2), om.OpError, r"Tensor\.randn.*shape"),
    ("rand str seed", lambda: Tensor.rand(F32, 2, seed="x"), om.ArgumentError,
     r"Tensor\.rand.*seed"),
    ("manual_seed str", lambda: om.manual_seed("x"), om.ArgumentError, r"manual_seed.*seed"),
    ("manual_seed float", lambda: om.manual_seed(1.5), om.ArgumentError, r"manual_seed.*seed"),
    ("manual_seed huge", lambda: om.manual_seed(2 ** 64), om.ArgumentError, r"manual_seed"),
    # -- from_list, from_numpy, om.tensor ------------------------------------------------------
    ("from_list size mismatch", lambda: Tensor.from_list([1, 2, 3], 2, 2), om.OpError,
     r"from_list.*3 values.*\(2, 2\)"),
    ("from_list ragged", lambda: Tensor.from_list([[1, 2], [3]]), om.OpError, r"tensor.*list"),
    ("from_list strings", lambda: Tensor.from_list(["a"]), om.OpError, r"numbers"),
    ("from_list None", lambda: Tensor.from_list(None), om.OpError, r"numbers"),
    ("from_list overflow", lambda: Tensor.from_list([2 ** 70]), om.OpError, r"numbers"),
    ("from_list bad dtype", lambda: Tensor.from_list([1.0], dtype="x"), om.OneModelError, r"dtype"),
    ("from_numpy list", lambda: Tensor.from_numpy([1.0]), om.OpError, r"from_numpy.*list"),
    ("from_numpy object", lambda: Tensor.from_numpy(np.array([object()])), om.OneModelError,
     r"dtype"),
    ("from_numpy complex", lambda: Tensor.from_numpy(np.zeros(2, complex)), om.OneModelError,
     r"complex"),
    ("from_numpy big-endian", lambda: Tensor.from_numpy(np.zeros(2, ">f4")), om.OneModelError,
     r"dtype"),
    ("tensor str", lambda: om.tensor("abc"), om.OpError, r"numbers"),
    ("tensor dict", lambda: om.tensor({"a": 1}), om.OpError, r"numbers"),
    ("tensor grad on ints", lambda: om.tensor([1, 2], requires_grad=True), om.OpError,
     r"floating-point"),
    # -- ops: wrong types and shapes -----------------------------------------------------------
    ("add str", lambda: x23() + "a", om.OpError, r"ops\.add.*'b'"),
    ("add None", lambda: ops.add(x23(), None), om.OpError, r"ops\.add.*'b'.*None"),
    ("linear None weight", lambda: ops.linear(x23(), None), om.OpError,
     r"ops\.linear.*'weight'.*None"),
    ("concat None entry", lambda: ops.concat([x23(), None], 0), om.OpError,
     r"ops\.concat.*tensors\[1\]"),
    ("concat empty list", lambda: ops.concat([], 0), om.OpError, r"ops\.concat.*empty"),
    ("concat not a list", lambda: ops.concat(x23(), 0), om.OpError, r"ops\.concat.*list"),
    ("add shapes", lambda: x23() + Tensor.zeros(F32, 4), om.OpError, r"ops\.add.*\[2,3\].*\[4\]"),
    ("matmul shapes", lambda: x23() @ x23(), om.OpError, r"ops\.matmul"),
    ("reshape size", lambda: x23().reshape(4, -1), om.OpError, r"ops\.reshape"),
    ("reshape str", lambda: x23().reshape("a"), om.OpError, r"ops\.reshape.*'shape'"),
    ("sum axis str", lambda: x23().sum(axis="a"), om.OpError, r"ops\.sum.*'axis'"),
    ("sum axis range", lambda: x23().sum(axis=5), om.OpError, r"ops\.sum.*axis 5"),
    ("transpose axis", lambda: x23().transpose(0, 9), om.OpError, r"ops\.transpose.*axis 9"),
    ("index str", lambda: x23()["a"], om.OpError, r"index"),
    ("index range", lambda: x23()[5], om.OpError, r"index 5"),
    ("cast dtype", lambda: ops.cast(x23(), "f128"), om.OpError, r"ops\.cast.*'dtype'"),
    ("unknown kwarg", lambda: ops.softmax(x23(), axes=1), om.OpError, r"softmax.*'axes'"),
    ("softmax axis", lambda: ops.softmax(x23(), 3), om.OpError, r"ops\.softmax.*axis 3"),
    ("linear shapes", lambda: ops.linear(x23(), Tensor.zeros(F32, 4, 4)), om.OpError,
     r"ops\.linear"),
    ("conv2d rank", lambda: ops.conv2d(x23(), Tensor.zeros(F32, 4, 4)), om.OpError, r"conv2d"),
    ("conv2d stride 0", lambda: ops.conv2d(Tensor.zeros(F32, 1, 1, 4, 4),
                                           Tensor.zeros(F32, 1, 1, 3, 3), stride=0),
     om.OpError, r"conv2d.*stride"),
    ("max_pool kernel 0", lambda: ops.max_pool2d(Tensor.zeros(F32, 1, 1, 4, 4), 0), om.OpError,
     r"max_pool2d.*kernel_size"),
    ("dropout p nan", lambda: ops.dropout(x23(), float("nan")), om.OpError, r"dropout.*p"),
    ("dropout p 2", lambda: ops.dropout(x23(), 2.0), om.OpError, r"dropout.*p"),
    ("gelu approximate", lambda: ops.gelu(x23(), "fast"), om.OpError, r"gelu.*'approximate'"),
    ("cross_entropy target range", lambda: ops.cross_entropy(x23(), Tensor.from_list([5, 0])),
     om.OpError, r"cross_entropy.*target 5"),
    ("embedding index range", lambda: ops.embedding(Tensor.from_list([7]),
                                                    Tensor.zeros(F32, 3, 2)),
     om.OpError, r"embedding.*index 7"),
    ("ctc lengths", lambda: ops.ctc_loss(Tensor.zeros(F32, 5, 2, 4), Tensor.from_list([[1, 2]] * 2),
                                         Tensor.from_list([9, 5]), Tensor.from_list([2, 2])),
     om.OpError, r"ctc_loss.*input_lengths"),
    ("max of empty axis", lambda: Tensor.zeros(F32, 3, 0).max(axis=1), om.OpError,
     r"ops\.max.*empty"),
    ("item of many", lambda: x23().item(), om.OpError, r"item.*\(2, 3\)"),
    ("backward without grad", lambda: x23().backward(), om.OneModelError, r"backward"),
    # -- trace ---------------------------------------------------------------------------------
    ("trace not callable", lambda: om.trace(5, x23(), "b", None), om.ArgumentError,
     r"om\.trace.*fn"),
    ("trace axis name", lambda: om.trace(ops.relu, x23(), "not an id", None),
     om.TraceException, r"axis 0.*'not an id'"),
    ("trace keyword axis", lambda: om.trace(ops.relu, x23(), "for", None), om.TraceException,
     r"axis 0.*keyword.*'for'"),
    ("trace axis int", lambda: om.trace(ops.relu, x23(), 5, None), om.TraceException, r"axis 0"),
    ("trace too many names", lambda: om.trace(ops.relu, x23(), "b", None, None),
     om.TraceException, r"2 axes.*3 axis names"),
    ("trace symbolic size 1", lambda: om.trace(ops.relu, Tensor.zeros(F32, 1, 3), "b", None),
     om.TraceException, r"axis 0.*'b'.*size 1"),
    ("trace example list", lambda: om.trace(ops.relu, [1.0], "b"), om.TraceException, r"example"),
    ("trace returns None", lambda: om.trace(lambda x: None, x23(), "b", None), om.TraceException,
     r"must return a Tensor"),
    # -- Session -------------------------------------------------------------------------------
    ("Session of an int", lambda: om.Session(42), om.OneModelError, r"int"),
    ("Session backend", lambda: om.Session(traced(), backend="gpu"), om.OneModelError,
     r"'gpu'.*numpy"),
    ("Session level", lambda: om.Session(traced(), optimization=3), om.OneModelError,
     r"optimization level 3"),
    ("Session backend option", lambda: om.Session(traced(), bogus=1), om.OneModelError,
     r"bogus"),
    ("Session disabled int", lambda: om.Session(traced(), disabled=5), om.ArgumentError,
     r"disabled"),
    ("run feeds list", lambda: session().run([_ok()]), om.SessionError, r"feeds.*mapping"),
    ("run missing input", lambda: session().run({}), om.SessionError, r"missing input 'input'"),
    ("run wrong dtype", lambda: session().run({"input": _ok().astype(np.float64)}),
     om.SessionError, r"'input'.*f32.*f64"),
    ("run wrong rank", lambda: session().run({"input": np.ones(4, np.float32)}), om.SessionError,
     r"'input'.*rank"),
    ("run fixed size", lambda: session().run({"input": np.ones((2, 5), np.float32)}),
     om.SessionError, r"'input' axis 1"),
    ("run list feed", lambda: session().run({"input": [[1.0] * 4]}), om.SessionError,
     r"'input'.*Tensor or a numpy array"),
    ("run output_names int", lambda: session().run({"input": _ok()}, output_names=5),
     om.SessionError, r"output_names"),
    ("run unknown output", lambda: session().run({"input": _ok()}, output_names=["x"]),
     om.SessionError, r"unknown output 'x'"),
    # -- save and load paths --------------------------------------------------------------------
    ("save None", lambda: traced().save(None), om.ArgumentError, r"save.*path"),
    ("save_onnx int", lambda: traced().save_onnx(3), om.ArgumentError, r"save.*path"),
    ("save_onnx opset", lambda: traced().save_onnx("m.onnx", opset="x"), om.OneModelError,
     r"opset"),
    ("load None", lambda: om.load(None), om.ArgumentError, r"load.*path"),
    ("load_onnx int", lambda: om.load_onnx(5), om.ArgumentError, r"load_onnx.*path"),
    ("load empty path", lambda: om.load(""), om.ArgumentError, r"load.*path"),
    # -- modules, state dicts, optimizers ---------------------------------------------------------
    ("Linear negative", lambda: om.nn.Linear(-1, 3), om.ArgumentError, r"Linear.*in_features"),
    ("Linear str", lambda: om.nn.Linear("4", 3), om.ArgumentError, r"Linear.*in_features"),
    ("Conv2d kernel 0", lambda: om.nn.Conv2d(1, 1, 0), om.ArgumentError, r"Conv2d.*kernel_size"),
    ("Dropout p", lambda: om.nn.Dropout(1.5), om.ArgumentError, r"Dropout.*p"),
    ("MHA heads", lambda: om.nn.MultiheadAttention(6, 4), om.ArgumentError,
     r"MultiheadAttention.*num_heads"),
    ("load_state_dict list", lambda: linear().load_state_dict([1]), om.ArgumentError,
     r"load_state_dict.*mapping"),
    ("load_state_dict shape", lambda: linear().load_state_dict(
        {"weight": np.zeros((4, 3), np.float32), "bias": np.zeros(3, np.float32)}),
     om.OneModelError, r"weight"),
    ("load_state_dict missing", lambda: linear().load_state_dict({}), om.OneModelError,
     r"Missing.*weight"),
    ("load_state_dict object", lambda: linear().load_state_dict(
        {"weight": np.array([[object()] * 4] * 3), "bias": np.zeros(3, np.float32)}),
     om.OneModelError, r"weight"),
    ("SGD no lr", lambda: om.optim.SGD(linear().parameters()), om.OneModelError, r"SGD.*lr"),
    ("SGD lr nan", lambda: om.optim.SGD(linear().parameters(), lr=float("nan")),
     om.OneModelError, r"SGD.*lr"),
    ("SGD lr inf", lambda: om.optim.SGD(linear().parameters(), lr=float("inf")),
     om.OneModelError, r"SGD.*lr.*finite"),
    ("SGD params None", lambda: om.optim.SGD(None, lr=0.1), om.OneModelError, r"SGD.*params"),
    ("SGD params ints", lambda: om.optim.SGD([1, 2], lr=0.1), om.OneModelError, r"SGD.*int"),
    ("Adam betas", lambda: om.optim.Adam(linear().parameters(), betas=(1.5, 0.9)),
     om.OneModelError, r"Adam.*betas\[0\]"),
    ("Adam eps inf", lambda: om.optim.Adam(linear().parameters(), eps=float("inf")),
     om.OneModelError, r"Adam.*eps"),
    ("Adam a tensor", lambda: om.optim.Adam(Tensor.zeros(F32, 2)), om.OneModelError,
     r"Adam.*single Tensor"),
    # -- registry -----------------------------------------------------------------------------
    ("register None", lambda: om.registry.register(None), om.PluginError, r"register.*None"),
    ("register junk", lambda: om.registry.register(_NotAPlugin()), om.PluginError,
     r"register.*not a plugin"),
]


@pytest.mark.parametrize("call,error,match", [pytest.param(c, e, m, id=i) for i, c, e, m in BAD])
def test_bad_input_is_a_clear_onemodel_error(call, error, match, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(om.OneModelError) as info:
        call()
    assert isinstance(info.value, error), f"{type(info.value).__name__}: {info.value}"
    assert re.search(match, str(info.value), re.S), str(info.value)


def test_argument_error_is_also_a_type_and_value_error():
    with pytest.raises(TypeError):
        om.nn.Linear("4", 3)
    with pytest.raises(ValueError):
        om.nn.Linear(-1, 3)


def test_missing_files_are_file_not_found(tmp_path):
    for call in (lambda: om.load(tmp_path / "x.onemodel"),
                 lambda: om.load_onnx(tmp_path / "x.onnx"),
                 lambda: om.Session(tmp_path / "x.onemodel")):
        with pytest.raises(FileNotFoundError, match="x.onn|x.onemodel"):
            call()


# -- zero-size axes: they work where PyTorch allows them -------------------------------------
def _e(*shape):
    return Tensor.zeros(F32, *shape)


EMPTY_OK = [
    ("sum over an empty axis", lambda: _e(3, 0).sum(axis=1), (3,), 0.0),
    ("sum of nothing", lambda: _e(0).sum(), (), 0.0),
    ("matmul with k=0", lambda: _e(3, 0) @ _e(0, 2), (3, 2), 0.0),
    ("softmax over an empty axis", lambda: ops.softmax(_e(3, 0), -1), (3, 0), None),
    ("log_softmax of a batch of 0", lambda: ops.log_softmax(_e(0, 4), -1), (0, 4), None),
    ("linear of a batch of 0", lambda: ops.linear(_e(0, 4), _e(3, 4)), (0, 3), None),
    ("linear with in_features 0", lambda: ops.linear(_e(2, 0), _e(3, 0), Tensor.ones(F32, 3)),
     (2, 3), 1.0),
    ("conv2d of a batch of 0", lambda: ops.conv2d(_e(0, 1, 4, 4), _e(2, 1, 3, 3)),
     (0, 2, 2, 2), None),
    ("layer_norm of a batch of 0", lambda: ops.layer_norm(_e(0, 4), (4,)), (0, 4), None),
    ("attention over 0 positions", lambda: ops.scaled_dot_product_attention(
        _e(2, 0, 4), _e(2, 0, 4), _e(2, 0, 4)), (2, 0, 4), None),
    ("embedding of no indices", lambda: ops.embedding(om.tensor(np.zeros(0, np.int64)),
                                                      _e(3, 2)), (0, 2), None),
    ("concat of empties", lambda: ops.concat([_e(3, 0), _e(3, 0)], 1), (3, 0), None),
    ("reshape of an empty", lambda: _e(3, 0).reshape(0, 7), (0, 7), None),
    ("split with a 0 part", lambda: ops.split(_e(3), (0, 3), 0)[0], (0,), None),
]


@pytest.mark.parametrize("call,shape,value", [pytest.param(c, s, v, id=i)
                                              for i, c, s, v in EMPTY_OK])
def test_zero_size_axes_work(call, shape, value):
    out = call()
    assert out.shape == shape
    if value is not None:
        assert np.all(out.numpy() == value)


@pytest.mark.parametrize("backend", om.backends())
def test_a_batch_of_zero_in_a_session(backend):
    """A symbolic axis may be 0 at run time (the trace needed an example of at least 2)."""
    s = om.Session(traced(), backend=backend)
    out = s.run({"input": np.zeros((0, 4), np.float32)})["output"]
    assert out.shape == (0, 3)
    t = om.trace(lambda x: ops.softmax(x, -1), Tensor.zeros(F32, 2, 3), None, "n")
    assert om.Session(t, backend=backend).run({"input": np.zeros((2, 0), np.float32)}
                                              )["output"].shape == (2, 0)
