"""The checks `check_op` runs on each of an op's samples. Each returns a `Check` (passed, or
skipped with the reason) or raises `OpCheckError` naming the op, the sample and what differs.

* ``reference``: the eager result against an independent formula (when one is given);
* ``inference``: ``infer``'s types against the eager result's dtype and shape;
* ``gradient``: ``vjp`` against central finite differences, inputs in float64;
* ``trace``: the op recorded by a Tracer and run as a graph equals the eager call;
* ``formula``: a pointwise op's formula (what fusing passes and the compiled backend run)
  against its kernel, on the sample's float inputs as they are and cast to float32;
* ``epilogue``: an activation's declared epilogue (what a GEMM or convolution applies in its
  tiles instead of the op) against its kernel, on the sample's float inputs in float64;
* ``sessions``: a one-node graph in a Session on every installed backend (each backend's own
  kernel, when it has one) equals the reference interpreter (the op's kernel); a pointwise op
  runs there at float32 too, the dtype the compiled backend lowers its formula for;
* ``onnx``: exported, run in ONNX Runtime when installed, imported back, where a mapping exists.
"""
from __future__ import annotations

from typing import Any

import functools

import numpy as np

from ..core.dispatch import apply
from ..core.pointwise import function
from ..core.special import erf
from ..core.grad_mode import GradMode
from ..core.interpreter import run_graph
from ..runtime.session import Session, backends as installed_backends
from ..core.tensor import Tensor
from ..formats.onnx_export import OnnxExportError, max_opset, to_onnx
from ..formats.onnx_import import OnnxUnsupportedError, from_onnx
from ..registry.records import OpDef, Sample
from ..trace.tracer import Tracer
from .report import Check, OpCheckError, fail
from .samples import (bind_sample, call_sample, flat, output_types, sample_arrays, sample_call,
                      sample_graph, sample_tensors)

CHECKS = ("reference", "inference", "gradient", "trace", "formula", "epilogue", "sessions",
          "onnx")


def subject(op: OpDef, sample: Sample, index: int | None = None) -> str:
    label = sample.name or (str(index) if index is not None else "")
    return f"{op.name}[{label}]" if label else op.name


def _named(check: str):
    """Turn anything unexpected a check meets into an OpCheckError naming the check."""
    def wrap(fn):
        @functools.wraps(fn)
        def run(op, sample, *args, **kwargs):
            try:
                return fn(op, sample, *args, **kwargs)
            except OpCheckError:
                raise
            except Exception as exc:  # noqa: BLE001 - reported with the op and the sample
                raise OpCheckError(f"{check} {subject(op, sample)}: {type(exc).__name__}: "
                                   f"{exc}") from exc
        return run
    return wrap


def assert_close(check: str, where: str, got, want, rtol: float, atol: float) -> None:
    """Same dtype, shape and values (exact for non-float results)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        fail(check, where, f"shape {got.shape}, expected {want.shape}")
    if got.dtype.kind != "f" or want.dtype.kind != "f":
        rtol = atol = 0.0
    try:
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol,
                                   atol=atol, equal_nan=True)
    except AssertionError as exc:
        fail(check, where, str(exc).strip())


@_named("reference")
def check_reference(op: OpDef, sample: Sample, reference=None, *, rtol: float = 1e-4,
                    atol: float = 1e-5) -> Check:
    """The eager call against ``reference(*arrays, **params)``, an independent formula."""
    where = subject(op, sample)
    if reference is None:
        return Check("reference", where, "no reference formula given")
    expected = reference(*sample_arrays(sample), **dict(sample.params))
    expected = expected if isinstance(expected, tuple) else (expected,)
    got = call_sample(op, sample)
    if len(got) != len(expected):
        fail("reference", where, f"{len(got)} outputs, the reference gives {len(expected)}")
    for k, (g, e) in enumerate(zip(got, expected)):
        assert_close("reference", f"{where} output {k}", g.numpy(), e, rtol, atol)
    return Check("reference", where)


@_named("inference")
def check_inference(op: OpDef, sample: Sample) -> Check:
    """``infer`` on the bound call gives the eager result's dtype and shape."""
    where = subject(op, sample)
    inputs, params = bind_sample(op, sample)
    inferred = output_types(op, inputs, params)
    got = call_sample(op, sample)
    if len(inferred) != len(got):
        fail("inference", where, f"infer gives {len(inferred)} outputs, eager {len(got)}")
    for k, (t, g) in enumerate(zip(inferred, got)):
        data_sized = len(t.shape) == g.ndim and all(  # a symbol the data decides (nonzero)
            not isinstance(d, int) or d == n for d, n in zip(t.shape, g.shape))
        if not data_sized or t.dtype != g.dtype:
            fail("inference", where, f"output {k}: inferred {t}, eager {g.dtype}{list(g.shape)}")
    return Check("inference", where)


@_named("gradient")
def check_gradient(op: OpDef, sample: Sample, *, eps: float = 1e-6, rtol: float = 1e-4,
                   atol: float = 1e-6, seed: int = 1) -> Check:
    """``vjp`` against central finite differences of a random projection of the outputs, with
    every float input in float64."""
    where = subject(op, sample)
    if op.vjp is None:
        return Check("gradient", where, "not differentiable (vjp is None)")
    if not sample.grad:
        return Check("gradient", where, "the sample says grad=False")
    tensors = sample_tensors(sample, np.float64)
    leaves = [t for t in flat(tensors) if t is not None and t.dtype.is_float]
    if not leaves:
        return Check("gradient", where, "no float inputs")
    for t in leaves:
        t.requires_grad_()
    outs = call_sample(op, sample, inputs=tensors)
    rng = np.random.default_rng(seed)
    weights = [rng.standard_normal(o.shape) if o.dtype.is_float else None for o in outs]
    total = None
    for o, w in zip(outs, weights):
        if w is None or not o.requires_grad:
            continue
        term = (o * Tensor.from_numpy(w)).sum()
        total = term if total is None else total + term
    if total is None:
        return Check("gradient", where, "no differentiable output")
    total.backward()

    def objective() -> float:
        with GradMode.no_grad():
            res = call_sample(op, sample, inputs=tensors)
        return sum(float((r.numpy() * w).sum()) for r, w in zip(res, weights) if w is not None)

    for n, t in enumerate(leaves):
        analytic = t.grad.numpy() if t.grad is not None else np.zeros(t.shape)
        numeric = np.zeros(t.shape)
        data = t.numpy()
        for idx in np.ndindex(*t.shape):
            old = data[idx]
            data[idx] = old + eps
            up = objective()
            data[idx] = old - eps
            down = objective()
            data[idx] = old
            numeric[idx] = (up - down) / (2 * eps)
        assert_close("gradient", f"{where} float input {n} of shape {t.shape}", analytic, numeric,
                     rtol, atol)
    return Check("gradient", where)


@_named("trace")
def check_trace(op: OpDef, sample: Sample, *, rtol: float = 1e-5, atol: float = 1e-6) -> Check:
    """The op recorded by a Tracer (every input a graph input, fixed sizes) and run by the
    reference interpreter gives the eager result."""
    where = subject(op, sample)
    _inputs, params = bind_sample(op, sample)
    refusal = op.trace_refusal(params)
    if refusal:
        return Check("trace", where, f"untraceable with these params: {refusal}")
    eager = call_sample(op, sample)
    feeds, k = {}, 0
    with Tracer() as tracer:
        traced_inputs = []
        for a in sample_tensors(sample):
            group = a if isinstance(a, list) else [a]
            replaced: list[Any] = []
            for t in group:
                if t is None:
                    replaced.append(None)
                    continue
                feeds[f"in{k}"] = np.array(t.numpy())
                replaced.append(tracer.input(f"in{k}", t))
                k += 1
            traced_inputs.append(replaced if isinstance(a, list) else replaced[0])
        args, kwargs = sample_call(op, traced_inputs, sample.params)
        out = apply(op, args, kwargs)
        out = out if isinstance(out, tuple) else (out,)
        for j, o in enumerate(out):
            tracer.output(f"out{j}", o)
        traced = tracer.finish()
    if not any(n.op == op.name for n in traced.graph.nodes) and traced.graph.nodes:
        fail("trace", where, f"the recorded graph does not apply {op.name}:\n{traced.graph}")
    got = run_graph(traced.graph, feeds)
    for j, e in enumerate(eager):
        assert_close("trace", f"{where} output {j}", got[f"out{j}"], e.numpy(), rtol, atol)
    return Check("trace", where)


def _float_inputs(sample: Sample) -> bool:
    """Whether the sample's inputs are floats of one dtype (bools beside them allowed): the
    inputs a pointwise formula is promised for."""
    arrays = [np.asarray(a) for a in flat(list(sample.args)) if a is not None]
    floats = {a.dtype for a in arrays if a.dtype.kind == "f"}
    return len(floats) == 1 and all(a.dtype.kind in "fb" for a in arrays)


@_named("formula")
def check_formula(op: OpDef, sample: Sample, *, rtol: float = 1e-6, atol: float = 1e-12,
                  rtol32: float = 1e-5, atol32: float = 1e-6) -> Check:
    """A pointwise formula against the kernel on the sample's inputs and on them cast to
    float32: a formula that differs from its kernel gives wrong numbers wherever it is fused or
    compiled, which float64 sessions alone never show (the compiled backend lowers float32)."""
    where = subject(op, sample)
    if op.traits.pointwise is None:
        return Check("formula", where, "not a pointwise op")
    if not _float_inputs(sample):
        return Check("formula", where, "formulas are promised for float inputs of one dtype")
    _inputs, params = bind_sample(op, sample)
    expr = op.traits.pointwise.expression(op.inputs, params)
    if expr is None:
        return Check("formula", where, f"no formula for params {params}")
    fn = function(expr, tuple(i.rstrip("?") for i in op.inputs), f"formula_{op.name}")
    for dtype, rt, at in ((None, rtol, atol), (np.float32, rtol32, atol32)):
        arrays = sample_arrays(sample, dtype)
        with np.errstate(all="ignore"):
            got = np.asarray(fn(*arrays))
            want = np.asarray(op.kernel(*arrays, **params))
        label = "float32 inputs" if dtype is not None else "the sample's inputs"
        if got.shape != want.shape:
            fail("formula", where, f"on {label} the formula gives shape {got.shape}, the kernel "
                                   f"{want.shape}")
        assert_close("formula", f"{where} on {label}, the formula against the kernel",
                     got.astype(np.float64), want.astype(np.float64), rt, at)
    return Check("formula", where)


_SQRT_HALF, _TANH_C = float(np.sqrt(0.5)), float(np.sqrt(2.0 / np.pi))
#: the function of each `EPILOGUE_KINDS` entry, ``f(x, p0, p1)`` in float64: what a backend
#: computes for an op that declares it
EPILOGUE_FUNCTIONS = {
    "relu": lambda x, p0, p1: np.maximum(x, 0.0),
    "sigmoid": lambda x, p0, p1: 1.0 / (1.0 + np.exp(-x)),
    "tanh": lambda x, p0, p1: np.tanh(x),
    "gelu": lambda x, p0, p1: 0.5 * x * (1.0 + erf(x * _SQRT_HALF)),
    "gelu_tanh": lambda x, p0, p1: 0.5 * x * (1.0 + np.tanh(_TANH_C * (x + 0.044715 * x ** 3))),
    "hardswish": lambda x, p0, p1: x * np.minimum(np.maximum(x + 3.0, 0.0), 6.0) / 6.0,
    "clip": lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi),
    "hardsigmoid": lambda x, alpha, beta: np.minimum(np.maximum(alpha * x + beta, 0.0), 1.0),
    "swish": lambda x, beta, _: x / (1.0 + np.exp(-beta * x)),
}


@_named("epilogue")
def check_epilogue(op: OpDef, sample: Sample, *, rtol: float = 1e-6,
                   atol: float = 1e-12) -> Check:
    """The activation an op's epilogue trait names, with its parameters, against the kernel:
    a GEMM or convolution computes the former where the op's node was."""
    where = subject(op, sample)
    if op.traits.epilogue is None:
        return Check("epilogue", where, "declares no epilogue")
    if len(op.inputs) != 1 or not _float_inputs(sample):
        return Check("epilogue", where, "epilogues are promised for one float input")
    _inputs, params = bind_sample(op, sample)
    ep = op.traits.epilogue_of(params)
    if ep is None:
        return Check("epilogue", where, f"no epilogue for params {params}")
    x = sample_arrays(sample, np.float64)[0]
    with np.errstate(all="ignore"):
        got = np.asarray(EPILOGUE_FUNCTIONS[ep[0]](x, ep[1], ep[2]))
        want = np.asarray(op.kernel(x, **params), np.float64)
    assert_close("epilogue", f"{where}, epilogue {ep} against the kernel", got, want, rtol,
                 atol)
    return Check("epilogue", where)


@_named("sessions")
def check_sessions(op: OpDef, sample: Sample, backends=None, levels=("none", "all"), *,
                   rtol: float = 1e-5, atol: float = 1e-6) -> Check:
    """A one-node graph of the sample in a Session on each backend (all installed ones by
    default) at each optimization level equals the reference interpreter; a pointwise op's
    float sample runs at float32 as well (within float32's tolerance), where the compiled
    backend runs the formula instead of the kernel."""
    where = subject(op, sample)
    built = sample_graph(op, sample)
    if built is None:
        return Check("sessions", where, "the op refuses to be a graph node with these params")
    _sessions(where, built, backends, levels, rtol, atol)
    if op.traits.pointwise is not None and _float_inputs(sample):
        _sessions(f"{where} at float32", sample_graph(op, sample, np.float32), backends, levels,
                  1e-4, 1e-5)
    return Check("sessions", where)


def _sessions(where: str, built, backends, levels, rtol: float, atol: float) -> None:
    graph, feeds = built
    graph.verify()
    want = run_graph(graph, feeds)
    for backend in (installed_backends() if backends is None else backends):
        for level in levels:
            with Session(graph, backend=backend, optimization=level) as session:
                got = session.run(feeds)
            for name, w in want.items():
                g = got[name].numpy()
                if g.dtype != w.dtype:
                    fail("sessions", f"{where} on {backend} at {level}",
                         f"{name} is {g.dtype}, the reference interpreter gives {w.dtype}")
                assert_close("sessions", f"{where} on {backend} at {level}, {name}", g, w,
                             rtol, atol)


@_named("onnx")
def check_onnx(op: OpDef, sample: Sample, *, rtol: float = 1e-5, atol: float = 1e-5) -> Check:
    """Export a one-node float32 graph, run it in ONNX Runtime (when installed) and import it
    back, comparing each with the reference interpreter."""
    where = subject(op, sample)
    if (op.onnx is None or op.onnx.export is None) and op.decomposition is None:
        return Check("onnx", where, "no ONNX export mapping")
    try:
        import onnx  # noqa: F401
    except ImportError:
        return Check("onnx", where, "the onnx package is not installed")

    built = sample_graph(op, sample, np.float32)
    if built is None:
        return Check("onnx", where, "the op refuses to be a graph node with these params")
    graph, feeds = built
    graph.verify()
    if not sample.onnx:  # ONNX has no form for this call: the export must say so
        try:
            to_onnx(graph, opset=max_opset())
        except OnnxExportError as exc:
            return Check("onnx", where, f"no ONNX form, and the export refuses it: {exc}")
        fail("onnx", where, "the sample says ONNX has no form for it, but the export wrote one")
    try:
        model = to_onnx(graph)
    except OnnxExportError as exc:
        if "training mode" in str(exc):
            return Check("onnx", where, str(exc))
        try:  # an op that needs a newer opset than the default is checked at the newest
            model = to_onnx(graph, opset=max_opset())
        except OnnxExportError:
            raise exc from None
    want = run_graph(graph, feeds)
    try:
        import onnxruntime as ort
    except ImportError:
        ort = None
    if ort is not None:
        sess = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"])
        got = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
        for name, w in want.items():
            if got[name].dtype != w.dtype:
                fail("onnx", f"{where} in ONNX Runtime", f"{name} is {got[name].dtype}, "
                                                           f"expected {w.dtype}")
            assert_close("onnx", f"{where} in ONNX Runtime, {name}", got[name], w, rtol, atol)
    try:
        back = from_onnx(model)
    except OnnxUnsupportedError as exc:  # e.g. an index with a negative step has no ONNX rule
        return Check("onnx", where, f"exported but not importable: {exc}")
    again = run_graph(back, feeds)
    for name, w in want.items():
        assert_close("onnx", f"{where} imported back, {name}", again[name], w, rtol, atol)
    if ort is None:
        return Check("onnx", where, "round trip passed; onnxruntime is not installed")
    return Check("onnx", where)
