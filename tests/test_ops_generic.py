"""Generic tests over the registry: every op, every sample, checked three ways.

1. the kernel against an independent numpy formula (tests/references/),
2. inference against the eager result's shape and dtype,
3. gradients against central finite differences in float64.
A new op gets tested by adding its record (and its reference formula).
"""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel.core.dispatch import bind, infer
from onemodel.core.types import TensorType

from .references import REFERENCES

OUR_PLUGINS = ("onemodel-ops-basic", "onemodel-ops-nn")


def _cases():
    rng = np.random.default_rng(0)
    for name, op in sorted(om.registry.ops().items()):
        if not (op.provider or "").startswith(OUR_PLUGINS):
            continue
        samples = list(op.samples(rng))
        assert samples, f"op {name} has no samples"
        for i, s in enumerate(samples):
            yield pytest.param(op, s, id=f"{name}-{s.name or i}")


CASES = list(_cases())


def _tensors(sample, dtype=None):
    out = []
    for a in sample.args:
        if a is None:
            out.append(None)
        elif isinstance(a, list):
            out.append([om.Tensor.from_numpy(_as(x, dtype)) for x in a])
        else:
            out.append(om.Tensor.from_numpy(_as(a, dtype)))
    return out


def _as(a, dtype):
    a = np.asarray(a)
    if dtype is not None and a.dtype.kind == "f":
        return a.astype(dtype)
    return a.copy()


def _flat_arrays(sample):
    out = []
    for a in sample.args:
        out.extend(a if isinstance(a, list) else [a])
    return out


def _by_name(op, tensors, params):
    """Positional tensors and params as a call: by keyword when the op's positional order is
    not "inputs, then params" (``OpDef.signature``, as layer_norm's)."""
    if not op.signature:
        return tuple(tensors), dict(params)
    names = [i.rstrip("?*") for i in op.inputs]
    return (), {**dict(zip(names, tensors)), **dict(params)}


def _call(op, tensors, params):
    args, kwargs = _by_name(op, tensors, params)
    return getattr(om.ops, op.name)(*args, **kwargs)


def test_every_op_has_a_reference():
    ours = [n for n, op in om.registry.ops().items() if (op.provider or "").startswith(OUR_PLUGINS)]
    missing = sorted(set(ours) - set(REFERENCES))
    assert not missing, f"ops without an independent reference formula in tests/references: {missing}"


@pytest.mark.parametrize("op,sample", CASES)
def test_kernel_matches_reference(op, sample):
    ref = REFERENCES[op.name]
    args = [([x.copy() for x in a] if isinstance(a, list) else (None if a is None else np.array(a, copy=True)))
            for a in sample.args]
    expected = ref(*args, **dict(sample.params))
    got = _call(op, _tensors(sample), sample.params)
    got = got if isinstance(got, tuple) else (got,)
    expected = expected if isinstance(expected, tuple) else (expected,)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        e = np.asarray(e)
        assert g.shape == e.shape, f"{op.name}: shape {g.shape} vs reference {e.shape}"
        tol = 1e-5 if g.dtype.is_float else 0
        np.testing.assert_allclose(g.numpy().astype(np.float64), e.astype(np.float64),
                                   rtol=tol * 10, atol=tol)


@pytest.mark.parametrize("op,sample", CASES)
def test_inference_matches_eager(op, sample):
    inputs, params = bind(op, *_by_name(op, _tensors(sample), sample.params))
    types = [TensorType(t.dtype, t.shape) if t is not None else None for t in inputs]
    inferred = infer(op, types, params)
    inferred = inferred if isinstance(inferred, (tuple, list)) else (inferred,)
    got = _call(op, _tensors(sample), sample.params)
    got = got if isinstance(got, tuple) else (got,)
    for t, g in zip(inferred, got):
        assert tuple(t.shape) == g.shape and t.dtype == g.dtype, f"{op.name}: inferred {t}, eager {g.dtype}{list(g.shape)}"


GRAD_CASES = [c for c in CASES if c.values[0].vjp is not None and c.values[1].grad]


@pytest.mark.parametrize("op,sample", GRAD_CASES)
def test_gradient_matches_finite_differences(op, sample):
    tensors = _tensors(sample, np.float64)
    flat = [t for a in tensors for t in (a if isinstance(a, list) else [a])]
    leaves = [t for t in flat if t is not None and t.dtype.is_float]
    if not leaves:
        pytest.skip("no float inputs")
    for t in leaves:
        t.requires_grad_()
    out = _call(op, tensors, sample.params)
    outs = out if isinstance(out, tuple) else (out,)
    rng = np.random.default_rng(1)
    weights = [rng.standard_normal(o.shape) if o.dtype.is_float else None for o in outs]

    def objective():
        with om.GradMode.no_grad():
            res = _call(op, tensors, sample.params)
        res = res if isinstance(res, tuple) else (res,)
        return sum(float((r.numpy() * w).sum()) for r, w in zip(res, weights) if w is not None)

    total = None
    for o, w in zip(outs, weights):
        if w is None or not o.requires_grad:
            continue
        term = (o * om.tensor(w)).sum()
        total = term if total is None else total + term
    if total is None:
        pytest.skip("no differentiable output")
    total.backward()
    eps = 1e-6
    for t in leaves:
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
        np.testing.assert_allclose(analytic, numeric, rtol=1e-4, atol=1e-6,
                                   err_msg=f"gradient of {op.name} wrt an input of shape {t.shape}")
