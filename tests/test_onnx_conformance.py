"""ONNX's backend node tests for every op type the ONNX import claims.

Each case is imported with the ONNX import (`from_onnx`, the body of `load_onnx`) and run by a
Session on every installed backend. A case using an op, attribute or dtype we do not claim is
skipped with the reason; a claimed case that fails is a failure, unless it is listed in
`tests/onnx_cases.KNOWN_FAILURES` (strict xfail: it must keep failing until fixed). Shape, axes
and bound inputs that ONNX feeds at run time are frozen into constants (OneModel keeps them as
static params); see docs/onnx.md.
"""
from __future__ import annotations

import pytest

pytest.importorskip("onnx")

import onemodel as om  # noqa: E402

from .onnx_cases import KNOWN_FAILURES, Skip, base_op, cases_for_claimed, run_case  # noqa: E402

CASES = cases_for_claimed()
BACKENDS = om.backends() if hasattr(om, "backends") else ["numpy"]


def _params():
    for case in CASES:
        for backend in BACKENDS:
            marks = []
            if case.name in KNOWN_FAILURES:
                marks.append(pytest.mark.xfail(reason=KNOWN_FAILURES[case.name], strict=True))
            yield pytest.param(case, backend, id=f"{case.name}-{backend}", marks=marks)


@pytest.mark.parametrize("case,backend", list(_params()))
def test_node_case(case, backend):
    try:
        run_case(case, backend=backend)
    except Skip as exc:
        pytest.skip(str(exc))


def test_every_claimed_op_has_cases():
    """Each ONNX op type the import claims is exercised by at least one backend node case (or
    is listed here as having none in this onnx release)."""
    from onemodel.formats.onnx_import import claimed_op_types

    without_cases = {"GlobalMaxPool"} - {base_op(c) for c in CASES}
    tested = {base_op(c) for c in CASES}
    assert claimed_op_types() - tested - without_cases == set()


def test_onnx_version_is_the_pinned_one():
    import onnx

    assert onnx.__version__.startswith("1.23"), (
        f"the conformance results in docs/onnx.md were produced with onnx 1.23; installed "
        f"{onnx.__version__}: rerun tools/onnx_conformance_report.py and update the pin")
