"""A user's script under a folder called ``onemodel`` is still the user's code: trace errors name
its line and saved manifests record its source (frames are told apart by module name)."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import zipfile

from onemodel.core.tracing_hooks import _internal

SCRIPT = textwrap.dedent('''
    import onemodel as om
    from onemodel import DType, Tensor

    def fn(x):
        return om.ops.relu(x)                       # line 6

    om.trace(fn, Tensor.zeros(DType.F32, 4, 2), "batch", None).save("out.onemodel")

    def bad(x):
        if x.sum() > 0:                             # line 11
            return x
        return -x

    try:
        om.trace(bad, Tensor.zeros(DType.F32, 4, 2), "batch", None)
    except om.TraceException as exc:
        print("ERROR:", exc)
''')


def test_script_under_a_folder_called_onemodel_keeps_its_lines(tmp_path):
    folder = tmp_path / "work" / "onemodel" / "experiments"
    folder.mkdir(parents=True)
    (folder / "script.py").write_text(SCRIPT, encoding="utf-8")
    proc = subprocess.run([sys.executable, "script.py"], cwd=folder, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "script.py:11" in proc.stdout, proc.stdout
    with zipfile.ZipFile(folder / "out.onemodel") as zf:
        manifest = json.loads(zf.read("manifest.json"))
    sources = [n["source"] for n in manifest["graph"]["nodes"]]
    assert sources and all(s and s.endswith("script.py:6") for s in sources), sources


def test_internal_is_decided_by_module_name():
    for name in ("onemodel", "onemodel.core.dispatch", "onemodel_ops_basic.reduce", "pluggy._hooks",
                 "numpy.core", "contextlib", "importlib._bootstrap"):
        assert _internal(name), name
    for name in ("__main__", "myproject.onemodel", "tests.test_x",
                 "docs.tensors", "onemodelx", ""):
        assert not _internal(name), name
