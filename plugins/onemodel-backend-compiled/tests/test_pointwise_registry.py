"""Issue 23: every pointwise op of the project's own plugins runs in the compiled backend's VM.

For each op in the registry whose record has a pointwise formula and whose provider is one of
this repository's distributions (tests/project_plugins.py: a third-party plugin installed next
to them is not judged here), every float and bool sample of its record, cast to float32, and
for one-input ops the special values (NaN, +-inf, -0.0, huge, tiny) run as a one-node graph on
the compiled backend: the plan must have no numpy step (plan_source says "0 on numpy"), and the
values must match the numpy backend's within the VM's documented accuracy (docs/guide/
backends.md) -- on every kernel copy the machine runs (the ``isa`` fixture)."""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel.core.graph import GraphBuilder
from onemodel.core.types import TensorType
from tests.project_plugins import is_project

SPECIAL = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e30, -1e30, 3e38, -3e38, 1e-30,
                    -1e-30, 1e-45, 0.5, -0.5, 1.5, -2.5, 1.0, -1.0, 7.0, -7.0, 88.0, -88.0,
                    1e5, -1e5], np.float32)
#: the VM's float32 error against numpy's per function is at most 2.5 ulp (om_vmath.h); numpy's
#: own is about 1 ulp, and the ops' formulas compose a few functions: 24 ulp of the result, or
#: of the op's output scale where its formula cancels to near zero (elu, mish, log_sigmoid)
ULPS, SCALE_ULPS = 24, 24
#: ops whose numpy kernel overflows before its formula does (gelu's x * (1 + erf) / 2 is inf at
#: 3e38, the VM's 0.5 x (1 + erf) is 3e38): not judged at +-3e38
HUGE_DIFFERS = {"gelu"}


def _pointwise_ops():
    return sorted(n for n, op in om.registry.ops().items()
                  if op.traits.pointwise is not None and is_project(op.provider))


def _kernel(name, args, params):
    with np.errstate(all="ignore"):
        return np.asarray(om.registry.ops()[name].kernel(*args, **params))


def _judged(name, args, params) -> bool:
    """What a formula must hold for: float32 inputs (with bools, a where's condition), and bool
    ones where the op is logical (its result for float32 inputs is a bool too)."""
    out = _kernel(name, args, params).dtype
    if out == np.float32:
        return True
    floats = [a.astype(np.float32) for a in args]
    return out == np.bool_ and _kernel(name, floats, params).dtype == np.bool_


def _cases(name):
    op = om.registry.ops()[name]
    rng = np.random.default_rng(23)
    defaults = {k: p.default for k, p in op.params.items() if not p.required}
    cases = []
    for s in op.samples(rng):
        args = [np.asarray(a) for a in s.args]
        if not all(a.dtype.kind in "fb" for a in args):
            continue
        args = [a.astype(np.float32) if a.dtype.kind == "f" else a for a in args]
        params = {**defaults, **s.params}
        if _judged(name, args, params):
            cases.append((s.name or "sample", args, params))
    if len(op.inputs) == 1 and cases:
        special = SPECIAL[np.abs(SPECIAL) < 1e38] if name in HUGE_DIFFERS else SPECIAL
        cases.append(("special", [special.copy()], cases[0][2]))
    return cases


def _graph(name, args, params):
    ref = _kernel(name, args, params)
    gb = GraphBuilder()
    names = []
    for i, a in enumerate(args):
        n = f"in{i}"
        gb.add_input(n, TensorType(om.DType.from_numpy(a.dtype), a.shape))
        names.append(n)
    out, = gb.add_node(name, names, [TensorType(om.DType.from_numpy(ref.dtype), ref.shape)],
                       params)
    return gb.finish([("y", out.name)]), {n: a for n, a in zip(names, args)}


def _close(got, want, name):
    assert got.dtype == want.dtype and got.shape == want.shape, name
    if want.dtype.kind == "b":
        np.testing.assert_array_equal(got, want, err_msg=name)
        return
    g, w = got.astype(np.float64), want.astype(np.float64)
    nan = np.isnan(w)
    np.testing.assert_array_equal(np.isnan(g), nan, err_msg=f"{name}: NaN where numpy's is")
    inf = np.isinf(w)
    np.testing.assert_array_equal(g[inf], w[inf], err_msg=f"{name}: infinities")
    fin = ~nan & ~inf
    scale = np.abs(w[fin]).max() if fin.any() else 0.0
    tol = (ULPS * np.spacing(np.abs(want[fin]).astype(np.float32)).astype(np.float64)
           + SCALE_ULPS * float(np.spacing(np.float32(scale))))
    err = np.abs(g[fin] - w[fin])
    assert np.all(err <= tol), (name, float((err / np.maximum(tol, 1e-300)).max()),
                                want[fin][np.argmax(err - tol)], got[fin][np.argmax(err - tol)])


def test_the_project_has_pointwise_ops_to_judge():
    ops = _pointwise_ops()
    assert {"sin", "atan2", "round", "remainder", "softplus", "isclose", "logical_or"} <= set(ops)


@pytest.mark.parametrize("name", _pointwise_ops())
def test_pointwise_op_runs_natively_and_as_numpy(name, isa):
    cases = _cases(name)
    assert cases, f"{name} has no float sample"
    for label, args, params in cases:
        graph, feeds = _graph(name, args, params)
        compiled = om.Session(graph, backend="compiled", optimization="none")
        src = compiled.plan_source(feeds)
        assert " 0 on numpy" in src and f"pointwise   {name}" in src, (label, src)
        with np.errstate(all="ignore"):
            want = om.Session(graph, backend="numpy", optimization="none").run(feeds)["y"]
        got = compiled.run(feeds)["y"]
        _close(got.numpy(), want.numpy(), f"{name} {label} ({isa})")


def test_a_formula_the_vm_cannot_compute_says_which_call_stopped_it():
    """A third-party op whose formula calls a function with no VM form runs on numpy, and the
    plan's source names the call."""
    from onemodel.registry import OpDef, OpTraits, Param, Pointwise, Sample, hookimpl

    op = OpDef(name="my_cbrt_scaled", inputs=("x",), params={"k": Param(kind="float", default=2.0)},
               kernel=lambda x, k=2.0: np.cbrt(x) * k, infer=lambda x, k=2.0: x, vjp=None,
               samples=lambda rng: [Sample(args=(rng.standard_normal(3),), grad=False)],
               traits=OpTraits(pointwise=Pointwise(formula="np.cbrt(x) * k")))

    class Plugin:
        @hookimpl
        def onemodel_ops(self):
            return (op,)

    registered = om.registry.register(Plugin(), "compiled-test-cbrt")
    try:
        x = np.array([-8.0, 1.0, 27.0], np.float32)
        graph, feeds = _graph("my_cbrt_scaled", [x], {"k": 2.0})
        src = om.Session(graph, backend="compiled", optimization="none").plan_source(feeds)
        assert "numpy: my_cbrt_scaled" in src and "formula call np.cbrt" in src, src
    finally:
        om.registry.unregister(registered)


def test_the_plugin_guide_lists_the_native_calls():
    import pathlib
    import re

    from onemodel_backend_compiled.pointwise import native_calls
    guide = pathlib.Path(__file__).resolve().parents[3] / "docs" / "guide" / "plugins.md"
    if not guide.is_file():
        pytest.skip("the project's docs are not beside this plugin (tests run from a copy)")
    text = guide.read_text()
    listed = re.search(r"these calls \(the rest of\s+the grammar always is\): `np\.`\s+`([^`]*)`",
                       text).group(1).split()
    assert {f"np.{n}" for n in listed} | {"special.erf"} == set(native_calls())


@pytest.mark.parametrize("formula,inputs,fn", [
    ("np.logaddexp(a, b)", ("a", "b"), np.logaddexp),
    ("np.where(np.isinf(a), b, a * 2)", ("a", "b"), lambda a, b: np.where(np.isinf(a), b, a * 2)),
])
def test_composed_calls_native_and_as_numpy(formula, inputs, fn, isa):
    """The calls built from several VM ops (pointwise._COMPOSED), with infinities and NaN."""
    from onemodel.registry import OpDef, OpTraits, Pointwise, Sample, hookimpl

    op = OpDef(name="my_composed", inputs=inputs, params={}, kernel=fn,
               infer=lambda a, b: a, vjp=None,
               samples=lambda rng: [Sample(args=(rng.standard_normal(3),) * 2, grad=False)],
               traits=OpTraits(pointwise=Pointwise(formula=formula)))

    class Plugin:
        @hookimpl
        def onemodel_ops(self):
            return (op,)

    registered = om.registry.register(Plugin(), "compiled-test-composed")
    try:
        a, b = np.repeat(SPECIAL, SPECIAL.size), np.tile(SPECIAL, SPECIAL.size)
        a = np.concatenate([a, np.random.default_rng(1).standard_normal(500).astype(np.float32)])
        b = np.concatenate([b, np.random.default_rng(2).standard_normal(500).astype(np.float32)])
        graph, feeds = _graph("my_composed", [a, b], {})
        compiled = om.Session(graph, backend="compiled", optimization="none")
        assert " 0 on numpy" in compiled.plan_source(feeds)
        with np.errstate(all="ignore"):
            want = fn(a, b)
        _close(compiled.run(feeds)["y"].numpy(), want, formula)
    finally:
        om.registry.unregister(registered)
