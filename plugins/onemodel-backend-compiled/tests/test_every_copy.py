"""The session and model tests of the compiled backend and the ONNX node tests on it, once per
kernel copy this CPU runs other than the default one (which the rest of the suite runs), each
in a subprocess whose ONEMODEL_COMPILED_ISA puts that copy on top of the kernel table: every
copy the machine can run passes them (docs/guide/backends.md, "Dispatch")."""
from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from onemodel_backend_compiled import _native, dispatch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
#: the suites, and -k: the ONNX node tests' ids end in their backend
SUITES = [os.path.join(HERE, "test_compiled_backend.py")]
ONNX_NODES = os.path.join(ROOT, "tests", "test_onnx_conformance.py")
DEFAULT = _native.isa()  # (the one this process runs: the rest of the suite's)
OTHERS = [name for name, _ in _native.copies() if name != DEFAULT]


@pytest.mark.parametrize("copy", OTHERS or [pytest.param(None, marks=pytest.mark.skip(
    reason="this CPU runs only the default kernel copy"))])
def test_the_suites_pass_on_this_copy(copy, tmp_path):
    paths = SUITES + ([ONNX_NODES] if os.path.exists(ONNX_NODES) else [])  # (an installed copy)
    env = dict(os.environ, **{dispatch.ENV: copy, "ONEMODEL_CACHE": "0"})
    report = tmp_path / "report.xml"
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:randomly", "-p",
           "no:cacheprovider", f"--junitxml={report}", "-k",
           "test_compiled_backend or compiled]", *paths]
    done = subprocess.run(cmd, cwd=ROOT if os.path.exists(ONNX_NODES) else HERE, env=env,
                          capture_output=True, text=True, timeout=1200)
    tail = "\n".join(done.stdout.splitlines()[-15:])
    assert done.returncode == 0, f"{copy}: {' '.join(cmd[3:])}\n{tail}\n{done.stderr[-2000:]}"
    suite = ET.parse(report).getroot()
    suite = suite if suite.tag == "testsuite" else suite[0]
    ran = int(suite.get("tests", 0)) - int(suite.get("skipped", 0))
    assert ran > 40 and suite.get("failures") == suite.get("errors") == "0", suite.attrib
