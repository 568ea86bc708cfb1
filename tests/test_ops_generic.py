"""Generic tests over the registry: every installed op (ours, the example package's, anyone's),
every sample, through the test kit plugin authors use (`onemodel.testing`):

1. the kernel against an independent numpy formula (tests/references/; required for our plugins),
2. inference against the eager result's shape and dtype,
3. gradients against central finite differences in float64,
4. the op traced and run as a graph,
5. a pointwise op's formula against its kernel, at the sample's dtype and at float32,
   and an activation's declared epilogue against its kernel,
6. a one-node graph in a Session on every installed backend (pointwise ops at float32 too).
The ONNX round trip is tests/test_onnx_ops.py. A new op gets tested by adding its record (and,
in our plugins, its reference formula).
"""
from __future__ import annotations

import numpy as np
import pytest

import onemodel as om
from onemodel import testing

from .references import REFERENCES

OUR_PLUGINS = ("onemodel-ops-basic", "onemodel-ops-nn")


def _cases():
    rng = np.random.default_rng(0)
    for name, op in sorted(om.registry.ops().items()):
        samples = list(op.samples(rng))
        assert samples, f"op {name} has no samples"
        for i, s in enumerate(samples):
            yield pytest.param(op, s, id=f"{name}-{s.name or i}")


CASES = list(_cases())


def _outcome(check: testing.Check) -> None:
    if check.skipped:
        pytest.skip(check.skipped)


def test_every_op_of_ours_has_a_reference():
    ours = [n for n, op in om.registry.ops().items() if (op.provider or "").startswith(OUR_PLUGINS)]
    missing = sorted(set(ours) - set(REFERENCES))
    assert not missing, f"ops without an independent reference formula in tests/references: {missing}"


def test_every_installed_op_is_tested():
    assert {c.values[0].name for c in CASES} == set(om.registry.ops())


@pytest.mark.parametrize("op,sample", CASES)
def test_kernel_matches_reference(op, sample):
    _outcome(testing.check_reference(op, sample, REFERENCES.get(op.name)))


@pytest.mark.parametrize("op,sample", CASES)
def test_inference_matches_eager(op, sample):
    _outcome(testing.check_inference(op, sample))


@pytest.mark.parametrize("op,sample", CASES)
def test_gradient_matches_finite_differences(op, sample):
    _outcome(testing.check_gradient(op, sample))


@pytest.mark.parametrize("op,sample", CASES)
def test_traced_op_matches_eager(op, sample):
    _outcome(testing.check_trace(op, sample))


@pytest.mark.parametrize("op,sample", CASES)
def test_formula_matches_kernel(op, sample):
    _outcome(testing.check_formula(op, sample))


@pytest.mark.parametrize("op,sample", [c for c in CASES if c.values[0].traits.epilogue])
def test_epilogue_matches_kernel(op, sample):
    _outcome(testing.check_epilogue(op, sample))


@pytest.mark.parametrize("op,sample", CASES)
def test_sessions_on_every_backend(op, sample):
    _outcome(testing.check_sessions(op, sample))
