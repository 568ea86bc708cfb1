"""ONNX's backend node tests for every op type the ONNX import claims.

Each case is imported with the ONNX import (`from_onnx`, the body of `load_onnx`) and run by a
Session on every installed backend, every input fed at run time as ONNX Runtime feeds it. Only a
case using an op type nothing claims is skipped. The cases that pass are pinned in
tests/onnx_passing.txt, and the list only grows: a pinned case that is refused or wrong fails,
and an unpinned case that passes fails until it is added. An unpinned claimed case that the
import refuses is an expected failure (xfail, with the reason), never a skip; a wrong result is
a failure unless listed in `tests/onnx_cases.KNOWN_FAILURES` (strict xfail). See docs/onnx.md.

The pins are the project's own: a case reading an op type that a third-party plugin claims runs
that plugin's import rule, so it is reported (a `ThirdPartyCase` warning when it passes, an xfail
naming the plugin when it does not), never failed (tests/test_third_party_installed.py).
"""
from __future__ import annotations

import warnings

import pytest

pytest.importorskip("onnx")

import onemodel as om  # noqa: E402

from .onnx_cases import (KNOWN_FAILURES, Refused, Skip, ThirdPartyCase, base_op,  # noqa: E402
                         cases_for_claimed, load_cases, passing, project_claimed_op_types,
                         run_case, third_party_claims)

CASES = load_cases()  # every node test onnx ships; those using unclaimed op types skip
PASSING = passing()
BACKENDS = om.backends() if hasattr(om, "backends") else ["numpy"]


def _params():
    for case in CASES:
        for backend in BACKENDS:
            marks = []
            if case.name in KNOWN_FAILURES and not third_party_claims(case.op_types):
                marks.append(pytest.mark.xfail(reason=KNOWN_FAILURES[case.name], strict=True))
            yield pytest.param(case, backend, id=f"{case.name}-{backend}", marks=marks)


@pytest.mark.parametrize("case,backend", list(_params()))
def test_node_case(case, backend):
    foreign = third_party_claims(case.op_types)
    if foreign:
        _report_third_party(case, backend, foreign)
        return
    pinned = case.name in PASSING
    try:
        run_case(case, backend=backend)
    except Skip as exc:
        if pinned:
            pytest.fail(f"{case.name} is pinned as passing but now uses an unclaimed op: {exc}")
        pytest.skip(str(exc))
    except Refused as exc:
        if pinned:
            pytest.fail(f"{case.name} is pinned as passing but the import refuses it: {exc}")
        pytest.xfail(f"refused: {exc}")
    if not pinned and case.name not in KNOWN_FAILURES:
        pytest.fail(f"{case.name} passes: add it to tests/onnx_passing.txt (the list only grows)")


def _report_third_party(case, backend, foreign: dict[str, list[str]]) -> None:
    """The outcome of a case run through a third-party import rule is that plugin's: a pass is a
    warning (not pinned), a refusal or a wrong result an xfail naming the plugin."""
    rules = "; ".join(f"{t} from {', '.join(who)}" for t, who in foreign.items())
    try:
        run_case(case, backend=backend)
    except Skip as exc:
        pytest.skip(str(exc))
    except Exception as exc:  # noqa: BLE001 - refused or wrong: the third party's to fix
        pytest.xfail(f"reads third-party import rules ({rules}): {type(exc).__name__}: {exc}")
    warnings.warn(ThirdPartyCase(f"{case.name} on {backend} passes with third-party import rules "
                                 f"({rules}); not pinned: tests/onnx_passing.txt is the "
                                 f"project's own"), stacklevel=2)


def test_pinned_cases_exist():
    names = {c.name for c in CASES}
    assert PASSING <= names, f"pinned cases onnx does not ship: {sorted(PASSING - names)}"
    assert not PASSING & set(KNOWN_FAILURES)


def test_every_claimed_op_has_cases():
    """Each ONNX op type the project's plugins claim is exercised by at least one backend node case (or
    is listed here as having none in this onnx release)."""
    claimed_cases = cases_for_claimed()
    without_cases = {"GlobalMaxPool"} - {base_op(c) for c in claimed_cases}
    tested = {base_op(c) for c in claimed_cases}
    assert project_claimed_op_types() - tested - without_cases == set()


def test_onnx_version_is_the_pinned_one():
    import onnx

    assert onnx.__version__.startswith("1.23"), (
        f"the conformance results in docs/onnx.md were produced with onnx 1.23; installed "
        f"{onnx.__version__}: rerun tools/onnx_conformance_report.py and update the pin")


def test_a_claimed_case_the_import_refuses_is_refused_not_skipped():
    """A Reshape whose target is fed at run time with a length that is itself symbolic (the
    output rank is unknown): every op type is claimed, so the refusal is a `Refused` (an xfail
    with the reason in the suite), never a skip."""
    import numpy as np
    from onnx import TensorProto as TP
    from onnx import helper

    from .onnx_cases import Case

    m = helper.make_model(helper.make_graph(
        [helper.make_node("Reshape", ["x", "s"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TP.FLOAT, [2, 3]),
         helper.make_tensor_value_info("s", TP.INT64, ["n"])],
        [helper.make_tensor_value_info("y", TP.FLOAT, [3, 2])]),
        opset_imports=[helper.make_opsetid("", 17)])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    case = Case("reshape_runtime", m, [([x, np.array([3, 2])], [x.reshape(3, 2)])],
                op_types={"Reshape"})
    with pytest.raises(Refused, match="Reshape target fed at run time must be a 1-D tensor of "
                                      "fixed length"):
        run_case(case, backend="numpy")
    case.op_types = {"Reshape", "ImageDecoder"}
    with pytest.raises(Skip, match="ImageDecoder"):
        run_case(case, backend="numpy")
