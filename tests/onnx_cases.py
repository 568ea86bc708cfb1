"""ONNX backend node test cases, run through `load_onnx` and a OneModel Session.

Used by tests/test_onnx_conformance.py and tools/onnx_conformance_report.py. Two layouts:
onnx >= 1.15 builds the cases in memory (``load_model_tests(kind="node")`` gives ``model`` and
``data_sets``); older releases ship folders ``onnx/backend/test/data/node/<case>/`` holding
``model.onnx`` and ``test_data_set_N/{input,output}_K.pb``.
"""
from __future__ import annotations

import glob
import os
import warnings
from dataclasses import dataclass, field

import numpy as np

from .project_plugins import is_project

#: claimed cases that fail, with the reason (kept honest by xfail(strict=True))
KNOWN_FAILURES: dict[str, str] = {
    **dict.fromkeys(("test_dft_inverse", "test_dft_inverse_opset19"),
                    "the expected output is numpy's single-precision FFT: where the exact "
                    "inverse is 0 (bin 5's imaginary part) it holds 1.9e-7 of rounding noise, "
                    "above the case's atol of 1e-7; the import's result (3e-15, a transform "
                    "with float64 constants) is nearer the exact value, ONNX Runtime's is "
                    "1.9e-5 off"),
}


@dataclass
class Case:
    name: str
    model: object  # onnx.ModelProto
    data_sets: list  # [(inputs list, outputs list)]
    rtol: float = 1e-3
    atol: float = 1e-7
    op_types: set = field(default_factory=set)


def _read_pb(path):
    import onnx

    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return onnx.numpy_helper.to_array(t)


def _from_folder(model_dir: str):
    import onnx

    model = onnx.load(os.path.join(model_dir, "model.onnx"))
    sets = []
    for d in sorted(glob.glob(os.path.join(model_dir, "test_data_set_*"))):
        ins = [_read_pb(p) for p in sorted(glob.glob(os.path.join(d, "input_*.pb")),
                                           key=lambda p: int(p.rsplit("_", 1)[1][:-3]))]
        outs = [_read_pb(p) for p in sorted(glob.glob(os.path.join(d, "output_*.pb")),
                                            key=lambda p: int(p.rsplit("_", 1)[1][:-3]))]
        sets.append((ins, outs))
    return model, sets


def _key(n) -> str:
    """A node's op type as the import's rules are keyed: ``"<domain>.<op type>"`` outside the
    default domain."""
    return n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}"


def _op_types(graph) -> set:
    out = set()
    for n in graph.node:
        out.add(_key(n))
        for a in n.attribute:
            if a.g is not None and len(a.g.node):
                out |= _op_types(a.g)
            for g in a.graphs:
                out |= _op_types(g)
    return out


_CACHE: list | None = None


def load_cases() -> list[Case]:
    """Every node test case of the installed onnx (cached)."""
    global _CACHE
    if _CACHE is not None:
        return _CACHE
    from onnx.backend.test.loader import load_model_tests

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            raw = load_model_tests(kind="node")
    cases = []
    for t in raw:
        model = getattr(t, "model", None)
        sets = getattr(t, "data_sets", None)
        if model is None or sets is None:
            model_dir = getattr(t, "model_dir", None)
            if not model_dir or not os.path.isdir(model_dir):
                continue
            model, sets = _from_folder(model_dir)
        cases.append(Case(t.name, model, [(list(i), list(o)) for i, o in sets],
                          getattr(t, "rtol", 1e-3), getattr(t, "atol", 1e-7),
                          _op_types(model.graph)))
    _CACHE = sorted(cases, key=lambda c: c.name)
    return _CACHE


def base_op(case: Case) -> str:
    """The op type a case tests: its single node's type; for a multi-node case (an ``_expanded``
    function body) the op of the single-node case its name extends."""
    g = case.model.graph
    if len(g.node) == 1:
        return _key(g.node[0])
    singles = _single_ops()
    name = case.name
    while name:
        if name in singles:
            return singles[name]
        if "_" not in name:
            break
        name = name.rsplit("_", 1)[0]
    return "?"


_SINGLES: dict | None = None


def _single_ops() -> dict:
    global _SINGLES
    if _SINGLES is None:
        _SINGLES = {c.name: _key(c.model.graph.node[0]) for c in load_cases()
                    if len(c.model.graph.node) == 1}
    return _SINGLES


class Skip(Exception):
    """The case uses an ONNX op type that the import does not claim."""


class Refused(Exception):
    """The import claims every op type of the case but refuses it (an attribute, mode or dtype it
    does not handle): not a pass, and never hidden as a skip (see PASSING)."""


PASSING_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "onnx_passing.txt")


def passing() -> set[str]:
    """The pinned node tests that pass (tests/onnx_passing.txt): this list only grows."""
    with open(PASSING_FILE, encoding="utf-8") as f:
        return {line.strip() for line in f if line.strip() and not line.startswith("#")}


def _array(x):
    import onnx

    if isinstance(x, onnx.TensorProto):
        return onnx.numpy_helper.to_array(x)
    return np.asarray(x)


def run_case(case: Case, backend: str | None = None) -> None:
    """Import and run one case as ONNX Runtime would: every graph input is fed at run time (shape,
    axes and bound inputs included). Raises Skip for a case using an op type nothing claims,
    Refused for a claimed case the import refuses, and an AssertionError or another exception
    for a wrong result."""
    from onemodel.formats.onnx_import import OnnxUnsupportedError, claimed_op_types

    missing = sorted(case.op_types - claimed_op_types())
    if missing:
        raise Skip(f"op(s) not claimed: {', '.join(missing)}")
    try:
        _run_sets(case, case.model, case.data_sets, backend)
    except OnnxUnsupportedError as exc:
        raise Refused(str(exc).split(": ", 1)[-1]) from None


def _run_sets(case: Case, model, data_sets, backend) -> None:
    from onemodel.formats.onnx_import import from_onnx

    graph = from_onnx(model, label=case.name)
    inits = {t.name for t in case.model.graph.initializer}
    in_names = [vi.name for vi in case.model.graph.input if vi.name not in inits]
    out_names = [vi.name for vi in case.model.graph.output]
    if backend is None:
        from onemodel.core.interpreter import run_graph

        def run(feeds):
            return run_graph(graph, feeds)
    else:
        import onemodel as om

        session = om.Session(graph, backend=backend, optimization="all")

        def run(feeds):
            res = session.run(feeds)
            return {k: v.numpy() for k, v in res.items()}
    for inputs, expected in data_sets:
        feeds = {name: _array(arr) for name, arr in zip(in_names, inputs)}
        with np.errstate(all="ignore"):
            got = run(feeds)
        for name, want in zip(out_names, expected):
            want = _array(want)
            have = np.asarray(got[name])
            assert have.shape == want.shape, f"{name}: shape {have.shape} != {want.shape}"
            assert have.dtype == want.dtype, f"{name}: dtype {have.dtype} != {want.dtype}"
            if want.dtype.kind in "fc":
                np.testing.assert_allclose(have, want, rtol=case.rtol, atol=case.atol,
                                           err_msg=name)
            else:
                np.testing.assert_array_equal(have, want, err_msg=name)


def cases_for_claimed() -> list[Case]:
    """Cases whose base op type the project claims (expanded variants included)."""
    claimed = project_claimed_op_types()
    return [c for c in load_cases() if base_op(c) in claimed]


# -- the project's claims and a third party's ---------------------------------------------------
class ThirdPartyCase(UserWarning):
    """A case that passes through a third-party plugin's import rule: reported, never pinned."""


def _claimants() -> dict[str, set[str]]:
    """ONNX op type -> the providers of the op records claiming it (the core's built-in rules as
    the core's distribution)."""
    from onemodel.formats.onnx_import import BUILTIN_RULES, claimed_rules
    from onemodel.registry import ops

    records = ops()
    table = {t: {"onemodel"} for t in BUILTIN_RULES}
    for op_type, rules in claimed_rules().items():
        table.setdefault(op_type, set()).update(records[name].provider for name, _ in rules)
    return table


def project_claimed_op_types() -> set[str]:
    """The op types the project's own distributions claim (tests/project_plugins.py): what the
    pins in onnx_passing.txt and the coverage check are about."""
    return {t for t, who in _claimants().items() if any(is_project(p) for p in who)}


def third_party_claims(op_types) -> dict[str, list[str]]:
    """Those of ``op_types`` that a third-party plugin's op record claims, with its providers.
    A case reading one runs that plugin's rule (alone, or next to the project's), so its outcome
    is reported, not judged against the project's pins."""
    table = _claimants()
    out = {}
    for t in sorted(op_types):
        foreign = sorted(p for p in table.get(t, ()) if not is_project(p))
        if foreign:
            out[t] = foreign
    return out
