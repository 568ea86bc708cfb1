"""Per-kernel dispatch (csrc/native.c): each kernel copy ends with a table of its kinds by
opcode, the active table is assembled per instruction from the best copy the CPU runs that
provides it, and the once-compiled executor runs through it; ONEMODEL_COMPILED_ISA chooses the
top copy."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from onemodel_backend_compiled import _native, dispatch
from onemodel_backend_compiled import instructions as T
from onemodel_backend_compiled.platform import platform

import onemodel as om
from onemodel.testing import models

KEYS = {ins.key.lower() for ins in T.TABLE}
SHIFT = T.BUF_SHIFT


@pytest.fixture
def restore():
    before = _native.isa()
    yield
    _native.use(before)


def _copy(src_buf: int, dst_buf: int, n: int) -> list[int]:
    """An I_COPY of n contiguous floats: buffer src_buf to buffer dst_buf."""
    return [9, 16, src_buf << SHIFT, dst_buf << SHIFT, 1, 1, 1, 1, 1, n, 0, 0, 0, 0, 0, 1]


def _run(*instructions: list[int]):
    """Runs the program over a source buffer and two outputs: (result, out1, out2)."""
    prog = np.array([v for ins in instructions for v in ins], dtype=np.int64)
    src = np.arange(1, 5, dtype=np.float32)
    out1, out2 = np.zeros(4, np.float32), np.zeros(4, np.float32)
    return _native.run(prog, (None, None, src, out1, out2)), out1, out2


def test_the_active_table_covers_every_instruction_from_the_top_copy(restore):
    for name, _ in _native.copies():
        _native.use(name)
        assert _native.isa() == name
        assert set(_native.kernels()) == KEYS
        # every copy built from om_kernels.h provides every kind itself
        assert set(_native.kernels().values()) == {name}
        assert _native.OPCODE_LIMIT == T.OPCODE_LIMIT


def test_copies_best_first_with_their_lanes_and_the_default_is_the_best():
    copies = _native.copies()
    assert copies[-1] == ("generic", 4)
    lanes = dict(copies)
    assert {n: lanes[n] for n in ("avx2", "avx512") if n in lanes} == {
        n: {"avx2": 8, "avx512": 16}[n] for n in ("avx2", "avx512") if n in lanes}
    names = [n for n, _ in copies]
    if not os.environ.get(dispatch.ENV):
        auto = [n for n in names if n != "avx2-w16"]  # the one test copy so far
        assert _native.isa() == auto[0]


def test_a_copy_leaving_an_entry_null_inherits_it_from_the_copy_below(restore):
    names = [n for n, _ in _native.copies()]
    if len(names) < 2:
        pytest.skip("this CPU runs only the portable copy")
    top = names[0]
    below = _native.below(top)  # (avx512's is avx2: avx2-w16 is a test copy, never below it)
    assert below in names
    _native.use(top, drop=("copy", "gemm"))
    table = _native.kernels()
    assert table["copy"] == table["gemm"] == below
    assert {v for k, v in table.items() if k not in ("copy", "gemm")} == {top}
    assert dispatch.kernels_text() == f"{top} ({len(KEYS) - 2}) + {below} (copy, gemm)"
    failed, out1, _ = _run(_copy(2, 3, 4))  # the inherited entry runs
    assert failed == -1 and out1.tolist() == [1, 2, 3, 4]


def test_an_entry_no_copy_provides_fails_the_run_at_that_instruction(restore):
    _native.use("generic", drop=("copy",))
    assert "copy" not in _native.kernels()
    failed, out1, _ = _run(_copy(2, 3, 4))
    assert failed == 0 and out1.tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize("opcode", [0, 6, 50, 98, T.OPCODE_LIMIT, 1 << 40, -1])
def test_an_unknown_opcode_fails_the_run_at_that_instruction(opcode, isa):
    failed, out1, out2 = _run(_copy(2, 3, 4), [opcode, 3, 0], _copy(2, 4, 4))
    assert failed == 1
    assert out1.tolist() == [1, 2, 3, 4] and out2.tolist() == [0, 0, 0, 0]  # ran up to it


def test_fail_stops_the_run_there(isa):
    failed, out1, out2 = _run(_copy(2, 3, 4), [99, 2], _copy(2, 4, 4))
    assert failed == 1 and out2.tolist() == [0, 0, 0, 0]


def test_use_names_what_it_refuses(restore):
    with pytest.raises(ValueError, match="kernel copy avx9000 is not built"):
        _native.use("avx9000")
    with pytest.raises(ValueError, match="no instruction nosuch"):
        _native.use("generic", drop=("nosuch",))
    if "avx512" not in dict(_native.copies()):
        with pytest.raises(ValueError, match="avx512 is not runnable on this CPU"):
            _native.use("avx512")


def test_each_copy_names_the_one_below_it():
    built = {"generic": None, "avx2": "generic", "avx2-w16": "avx2", "avx512": "avx2"}
    for name, _ in _native.copies():
        assert _native.below(name) == built[name]  # (a test copy is never below another)
    with pytest.raises(ValueError, match="kernel copy avx9000 is not built"):
        _native.below("avx9000")


def test_the_avx512_peak_halves_on_zen_4(monkeypatch):
    from onemodel_backend_compiled import platform as plat

    monkeypatch.setattr(plat, "cpu_model", lambda: ("AuthenticAMD", 25, 0x11))  # Zen 4
    assert plat.fma_pipes("avx512") == 1 and plat.fma_pipes("avx2") == 2
    monkeypatch.setattr(plat, "cpu_model", lambda: ("AuthenticAMD", 26, 0x02))  # Zen 5
    assert plat.fma_pipes("avx512") == 2
    monkeypatch.setattr(plat, "cpu_model", lambda: None)  # nothing known: Intel's figure
    assert plat.fma_pipes("avx512") == 2 and plat.fma_pipes("generic") == 1


def test_the_avx2_peak_halves_on_zen_1_and_zen_plus(monkeypatch):
    from onemodel_backend_compiled import platform as plat

    monkeypatch.setattr(plat, "cpu_model", lambda: ("AuthenticAMD", 23, 0x01))  # Zen 1 (Naples)
    assert plat.fma_pipes("avx2") == 1 and plat.fma_pipes("avx2-w16") == 0.5
    monkeypatch.setattr(plat, "cpu_model", lambda: ("AuthenticAMD", 23, 0x08))  # Zen+
    assert plat.fma_pipes("avx2") == 1
    monkeypatch.setattr(plat, "cpu_model", lambda: ("AuthenticAMD", 23, 0x31))  # Zen 2 (Rome)
    assert plat.fma_pipes("avx2") == 2
    monkeypatch.setattr(plat, "cpu_model", lambda: ("GenuineIntel", 6, 0x01))  # not AMD's
    assert plat.fma_pipes("avx2") == 2


def test_platform_reads_the_lanes_and_the_table(restore):
    for name, lanes in _native.copies():
        _native.use(name)
        info = platform()
        assert info["isa"] == name and info["lanes"] == lanes and info["kernels"] == name
    assert dispatch.kernels_text({"gemm": "generic", "vm": "generic"}) == "generic"


def test_the_signature_follows_the_active_table(restore):
    base = dispatch.signature()
    _native.use(_native.isa(), drop=("vm",))
    assert dispatch.signature() != base and dispatch.signature().startswith(_native.isa())


def _in_subprocess(env_value: str, code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, **{dispatch.ENV: env_value})
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)


def test_the_env_var_chooses_the_top_copy():
    done = _in_subprocess("generic", "from onemodel_backend_compiled import _native, backend\n"
                                     "print(_native.isa(), set(_native.kernels().values()))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split(None, 1) == ["generic", "{'generic'}\n"]


def test_a_bad_env_var_is_named_when_the_backend_is_used():
    code = ("import onemodel as om\nfrom onemodel.testing import models\n"
            "from onemodel_backend_compiled.dispatch import CompiledIsaError\n"
            "fn, shape = models.mlp(sizes=(8, 4))\nt = models.trace(fn, shape)\n"
            "try:\n    om.Session(t, backend='compiled')\n"
            "except CompiledIsaError as e:\n    print('refused:', e)\n")
    done = _in_subprocess("avx9000", code)
    assert done.returncode == 0, done.stderr
    assert "refused: ONEMODEL_COMPILED_ISA='avx9000'" in done.stdout
    assert "generic" in done.stdout  # what this CPU runs is named


def test_sessions_agree_on_every_copy(restore):
    fn, shape = models.mlp(sizes=(64, 32, 10))
    traced = models.trace(fn, shape)
    feeds = {"input": models.feed(shape, 4)}
    ref = om.Session(traced, backend="numpy").run(feeds)["output"].numpy()
    for name, _ in _native.copies():
        _native.use(name)
        out = om.Session(traced, backend="compiled", cache=False).run(feeds)["output"].numpy()
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
