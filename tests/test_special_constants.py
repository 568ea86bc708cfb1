"""Special float constants in generated code (issue 18): every constant a plan inlines must read
back as itself. ``clip(x, -inf, 6)`` (ReLU6 written as a clip) failed at ``optimization="all"``
on every backend with ``NameError: name 'inf' is not defined``, because generated source printed
the float with ``repr``.

Two layers: `onemodel.core.plan.literal` round-trips any value it accepts (a hypothesis
property), and every registered op with a ``scalar`` or ``float`` param runs with inf, -inf, nan,
-0.0, subnormals and float32 extremes in that param, inside a fusable chain, on every backend at
every optimization level, equal to eager.
"""
from __future__ import annotations

import enum
import math
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import onemodel as om
from onemodel import DType, Tensor
from onemodel.core.plan import literal
from onemodel.passes import LEVELS
from onemodel.registry import REGISTRY

F32_MAX = float(np.finfo(np.float32).max)
F32_TINY = float(np.finfo(np.float32).tiny)
F32_SUBNORMAL = float(np.float32(1e-45))
SPECIAL = [math.inf, -math.inf, math.nan, -math.nan, -0.0, 0.0, 5e-324, 2.2250738585072014e-308,
           F32_SUBNORMAL, F32_TINY, F32_MAX, -F32_MAX, 1.7976931348623157e308, 6.0, -1.5]


def _bits(v):
    """Exact identity of a value: floats by their bits (nan == nan, -0.0 != 0.0)."""
    if type(v) is float:
        return ("float", struct.pack("<d", v))
    if type(v) in (tuple, list):
        return (type(v).__name__, tuple(_bits(x) for x in v))
    return (type(v).__name__, v)


def _read_back(src: str):
    return eval(src, {})  # noqa: S307 - the generated literal, as a plan's code would read it


_values = st.recursive(
    st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True) | st.integers()
    | st.booleans() | st.none() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.lists(inner, max_size=3).map(tuple),
    max_leaves=8)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(_values)
def test_literal_round_trips_every_value_it_accepts(value):
    src = literal(value)
    assert src is not None
    assert _bits(_read_back(src)) == _bits(value), src


@pytest.mark.parametrize("value", SPECIAL, ids=repr)
def test_literal_of_special_floats(value):
    assert _bits(_read_back(literal(value))) == _bits(value)


class _Mode(enum.IntEnum):
    A = 1


class _Name(str):
    def __repr__(self):
        return "not Python"


@pytest.mark.parametrize("value", [np.float32(1.5), np.float64(math.inf), np.int64(3), _Mode.A,
                                   _Name("x"), (1, np.float32(2)), [object()]],
                         ids=["f32", "f64-inf", "i64", "IntEnum", "str-subclass", "tuple", "obj"])
def test_values_without_an_exact_literal_become_closure_constants(value):
    """numpy scalars print as ``np.float32(1.5)`` and subclasses as anything: not inlined."""
    assert literal(value) is None


# -- every op that takes a scalar, through every backend and level --------------------------------
def _scalar_ops():
    ops = REGISTRY.tables().ops
    out = []
    for name in sorted(ops):
        params = [p for p, spec in ops[name].params.items() if spec.kind in ("scalar", "float")]
        if isinstance(ops[name].untraceable, str):
            continue  # never in a graph (a loss, a data-dependent op): no session sees its scalar
        if params:
            out.append((name, params))
    return out


_SCALAR_OPS = _scalar_ops()


def test_there_are_ops_with_scalar_params():
    assert {"clip", "full", "fill"} <= {name for name, _ in _SCALAR_OPS}


def _case(op, rng):
    """(tensor arrays, params) of the op's first usable sample: no tensor-valued tricks, float
    inputs only, eval mode where the op has one."""
    for sample in op.samples(rng):
        arrays = list(sample.args)
        if any(isinstance(a, list) for a in arrays):
            continue
        if any(a is not None and a.dtype.kind != "f" for a in arrays):
            continue
        params = dict(sample.params)
        if "training" in params:
            params["training"] = False
        return arrays, params
    return None


def _function(name, arrays, params, const):
    """A function of one tensor around the op with ``const`` in place: the op sits between
    pointwise steps so the fusing passes put it in a generated chain."""
    op = REGISTRY.tables().ops[name]
    fn = getattr(om.ops, name)
    if not arrays:  # a factory op (full, arange): added to the traced input
        return lambda x: x * 2.0 + fn(**params)
    first = op.inputs[0].rstrip("?")
    rest = {i.rstrip("?"): Tensor.from_numpy(a)  # by name: params may come first positionally
            for i, a in zip(op.inputs[1:], arrays[1:]) if a is not None}
    return lambda x: fn(**{first: x * 2.0 - 0.25}, **rest, **params) * 1.5 + 0.5


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # overflow to inf is the point here
@pytest.mark.parametrize("name,pnames", _SCALAR_OPS, ids=[n for n, _ in _SCALAR_OPS])
def test_special_constants_in_scalar_params_match_eager(name, pnames):
    op = REGISTRY.tables().ops[name]
    if isinstance(op.untraceable, str):  # no session can hold it (huber_loss, smooth_l1_loss)
        pytest.skip(f"{name} is never traceable: {op.untraceable}")
    case = _case(op, np.random.default_rng(0))
    if case is None:
        pytest.skip(f"{name} has no sample with float inputs")
    arrays, base = case
    if arrays:
        try:  # a sample whose output sizes are declared for its own data (shape_from_data's
            # NonZero) cannot take the shifted input; the generic trace tests cover the op
            om.trace(_function(name, arrays, base, None), Tensor.from_numpy(
                arrays[0].astype(np.float32)), *([None] * arrays[0].ndim))
        except om.OneModelError as exc:
            pytest.skip(f"{name}'s first float sample does not trace around the shifted input: "
                        f"{str(exc)[:100]}")
    ran = 0
    for p in pnames:
        for const in SPECIAL + [np.float32(F32_MAX), np.float64(-math.inf), np.float64(6.0)]:
            params = dict(base, **{p: const})
            fn = _function(name, arrays, params, const)
            if arrays:
                x = arrays[0].astype(np.float32)
            else:
                try:
                    shape = fn(Tensor.zeros(DType.F32, 1)).shape
                except om.OneModelError:
                    continue
                x = np.linspace(-2, 2, int(np.prod(shape)), dtype=np.float32).reshape(shape)
            try:
                with np.errstate(all="ignore"):
                    want = fn(Tensor.from_numpy(x)).numpy()
                traced = om.trace(fn, Tensor.from_numpy(x), *([None] * x.ndim))
            except om.OneModelError:
                continue  # the op refuses this value (dropout p=inf, arange step=nan...)
            for backend in om.backends():
                for level in LEVELS:
                    with om.Session(traced, backend=backend, optimization=level) as s:
                        with np.errstate(all="ignore"):
                            got = s.run({"input": x})["output"].numpy()
                    np.testing.assert_allclose(
                        got, want, rtol=1e-5, atol=0, equal_nan=True,
                        err_msg=f"{name}({p}={const!r}) on {backend} at {level}")
            ran += 1
    assert ran >= len(pnames), f"{name}: no special constant ran through a session"
