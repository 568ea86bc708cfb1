"""The project's own checks hold with a third-party op package installed: a distribution with an
entry point (found on PYTHONPATH, no pip install) bringing a pointwise op that imports ONNX's
``Elu``, an op importing ``Softsign``, a claim of an op type onnx has no node test for, and a
kernel for the project's ``relu`` on a backend of its own. The committed op table and the pinned
ONNX conformance cases judge only the project's distributions (tests/project_plugins.py); what
the foreign package makes pass is reported, not failed."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

import onemodel as om

from .test_plugin_faults import _fake_dist

pytest.importorskip("onnx")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

THIRD_PARTY = """
    import numpy as np
    from onemodel.registry import (KernelDef, OnnxSpec, OpDef, OpTraits, Param, Pointwise,
                                   Sample, hookimpl)

    def _elu(x, alpha=1.0):
        return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0))).astype(x.dtype)

    def _import_elu(ctx, node):
        return [ctx.emit("tp_elu", [node.inputs[0]], alpha=float(node.attr("alpha", 1.0)))]

    def _softsign(x):
        return (x / (1 + np.abs(x))).astype(x.dtype)

    def _import_softsign(ctx, node):
        return [ctx.emit("tp_softsign", [node.inputs[0]])]

    def _import_custom(ctx, node):
        return [ctx.emit("tp_softsign", [node.inputs[0]])]

    def _samples(rng):
        return [Sample(args=(rng.standard_normal((3, 4)),))]

    ELU = OpDef(name="tp_elu", inputs=("x",), params={"alpha": Param(kind="float", default=1.0)},
                kernel=_elu, infer=lambda x, alpha=1.0: x, vjp=None, samples=_samples,
                traits=OpTraits(pointwise=Pointwise(
                    formula="np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))")),
                onnx=OnnxSpec(imports={"Elu": _import_elu}), doc="ELU, from a third party")
    SOFTSIGN = OpDef(name="tp_softsign", inputs=("x",), kernel=_softsign, infer=lambda x: x,
                     vjp=None, samples=_samples,
                     onnx=OnnxSpec(imports={"Softsign": _import_softsign,
                                            "TpNoSuchOnnxOp": _import_custom}),
                     doc="x / (1 + |x|), from a third party")

    @hookimpl
    def onemodel_ops():
        return [ELU, SOFTSIGN]

    @hookimpl
    def onemodel_kernels():
        return [KernelDef(op="relu", backend="tp_accelerator", kernel=lambda x: np.maximum(x, 0),
                          doc="the project's relu on the third party's device")]
"""


@pytest.fixture(scope="module")
def third_party_env(tmp_path_factory):
    root = tmp_path_factory.mktemp("third_party_site")
    _fake_dist(root, "tp-activations", "tp_activations_mod", THIRD_PARTY)
    return dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(root)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))


def _python(env, *args):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=900)


def test_the_fake_package_is_installed_and_claims_its_onnx_ops(third_party_env):
    r = _python(third_party_env, "-c", (
        "import onemodel as om\n"
        "from onemodel.formats.onnx_import import claimed_op_types\n"
        "print(om.registry.get_op('tp_elu').provider)\n"
        "print(sorted({'Elu', 'Softsign', 'TpNoSuchOnnxOp'} & claimed_op_types()))\n"
        "print(sorted(b for b, o in om.registry.kernels() if o == 'relu'))\n"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["tp-activations 1.0", "['Elu', 'Softsign', 'TpNoSuchOnnxOp']",
                                     "['numpy', 'tp_accelerator']"]


def test_docs_table_and_onnx_conformance_hold_with_it_installed(third_party_env):
    """The op table test and the conformance cases the package touches (Elu, Softsign, the
    Celu expansions reading Elu) next to pinned ones (Relu), on every backend."""
    r = _python(third_party_env, "-m", "pytest", "-p", "no:randomly", "-rfE",
                "tests/test_docs_ops_table.py", "tests/test_onnx_conformance.py",
                "-k", "committed or elu or softsign or pinned_cases or every_claimed")
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    assert re.search(r"\d+ passed", out) and not re.search(r"\d+ (failed|error)", out), out
    # reported, not failed: Elu's cases pass through the package's rule, on every backend
    for backend in om.backends():
        assert (f"ThirdPartyCase: test_elu_example on {backend} passes with third-party import "
                f"rules (Elu from tp-activations 1.0)") in out
