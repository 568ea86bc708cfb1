"""The VM's functions of om_vmath.h, one VM instruction at a time, against float64 numpy rounded
to float32 (the correctly rounded result): the max ulp error docs/guide/backends.md states, over
uniform arguments of several ranges (huge ones for trigonometry), NaN, +-inf, -0.0, tiny and
subnormal values; the rounding and remainder family bit for bit against numpy's float32; block
tails (1-7 elements past the last 8) as the same bits as the 8-lane body; on every kernel copy."""
from __future__ import annotations

import numpy as np
import pytest
from onemodel_backend_compiled import _native
from onemodel_backend_compiled import pointwise as PW
from onemodel_backend_compiled import program as P

SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 1.5, -2.5, 1e-30,
                    -1e-30, 1e-45, -1e-45, 1e-38, 3.4e38, -3.4e38, 8388607.5, -8388609.0,
                    16777217.0, 4.2e8, -4.3e8, 1e20], np.float32)


def vm(opc: int, *xs: np.ndarray) -> np.ndarray:
    """One I_VM instruction: LOAD each input, then ``opc`` of them."""
    xs = [np.ascontiguousarray(x, np.float32).ravel() for x in xs]
    n, nin = xs[0].size, len(xs)
    out = np.empty(n, np.float32)
    f = [nin, 1, 1, 1, n, P.addr(2 + nin, 0), 0, 0, 0, 1]
    for i in range(nin):
        f += [P.addr(2 + i, 0), 0, 0, 0, 1]
    code = [(PW.LOAD, i, i, 0) for i in range(nin)] + [(opc, nin, 0, 1 if nin > 1 else 0)]
    f += [len(code), *[x for c in code for x in c], 0]
    _native.run(P.assemble([P.instruction(P.I_VM, *f)]), (None, None, *xs, out))
    return out


def ulps(got: np.ndarray, want64: np.ndarray) -> float:
    """The largest error in float32 ulps of the correctly rounded result (NaN must be NaN,
    infinities and signed zeros exact)."""
    with np.errstate(over="ignore"):
        want = want64.astype(np.float32)
    same = (got == want) & (np.signbit(got) == np.signbit(want)) | (np.isnan(got) & np.isnan(want))
    finite = np.isfinite(want) & np.isfinite(got) & (want != 0)
    assert np.all(same | finite), [(g, w) for g, w in zip(got[~(same | finite)],
                                                          want[~(same | finite)])][:5]
    d = np.abs(got[finite].astype(np.float64) - want64[finite]) / np.spacing(
        np.abs(want[finite])).astype(np.float64)
    return float(d.max()) if d.size else 0.0


def _uniform(lo, hi, n=1 << 17, seed=0):
    return np.random.default_rng(seed).uniform(lo, hi, n).astype(np.float32)


# (opcode, numpy function, argument ranges, the stated max ulp)
UNARY = {
    "sin": (PW.SIN, np.sin, [(-10, 10), (-1e5, 1e5), (-1e9, 1e9), (-3e38, 3e38)], 1.0),
    "cos": (PW.COS, np.cos, [(-10, 10), (-1e5, 1e5), (-1e9, 1e9), (-3e38, 3e38)], 1.0),
    "tan": (PW.TAN, np.tan, [(-10, 10), (-1e5, 1e5), (-1e9, 1e9), (-3e38, 3e38)], 1.0),
    "atan": (PW.ATAN, np.arctan, [(-3, 3), (-1e4, 1e4), (-1e-3, 1e-3)], 2.0),
    "asin": (PW.ASIN, np.arcsin, [(-1, 1), (-0.01, 0.01)], 2.0),
    "acos": (PW.ACOS, np.arccos, [(-1, 1), (-0.01, 0.01)], 2.0),
    "log1p": (PW.LOG1P, np.log1p, [(-1, 1), (-1e-3, 1e-3), (0, 1e30)], 2.5),
    "expm1": (PW.EXPM1, np.expm1, [(-1, 1), (-1e-3, 1e-3), (-100, 89)], 2.5),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_function_within_its_stated_ulps(name, isa):
    opc, fn, ranges, bound = UNARY[name]
    for k, (lo, hi) in enumerate(ranges):
        x = _uniform(lo, hi, seed=k)
        assert ulps(vm(opc, x), fn(x.astype(np.float64))) <= bound, (name, lo, hi)
    with np.errstate(all="ignore"):
        assert ulps(vm(opc, SPECIAL), fn(SPECIAL.astype(np.float64))) <= bound, name


def test_atan2_within_its_stated_ulps_and_c99_special_cases(isa):
    a = np.concatenate([_uniform(-10, 10), _uniform(-1e6, 1e6, seed=1),
                        np.repeat(SPECIAL, SPECIAL.size)])
    b = np.concatenate([_uniform(-3, 3, seed=2), _uniform(-10, 10, seed=3),
                        np.tile(SPECIAL, SPECIAL.size)])
    assert ulps(vm(PW.ATAN2, a, b), np.arctan2(a.astype(np.float64), b.astype(np.float64))) \
        <= 2.5


@pytest.mark.parametrize("name,opc,fn", [("rint", PW.RINT, np.rint), ("floor", PW.FLOOR, np.floor),
                                         ("ceil", PW.CEIL, np.ceil)])
def test_rounding_is_numpys_bit_for_bit(name, opc, fn, isa):
    x = np.concatenate([_uniform(-10, 10), _uniform(-1e8, 1e8, seed=1), SPECIAL,
                        np.arange(-8, 8, 0.5, dtype=np.float32)])
    got, want = vm(opc, x), fn(x)
    np.testing.assert_array_equal(got, want, err_msg=name)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want), err_msg=f"{name} zeros")


@pytest.mark.parametrize("name,opc,fn", [("fmod", PW.FMOD, np.fmod),
                                         ("remainder", PW.REMAINDER, np.remainder),
                                         ("floor_divide", PW.FLOORDIV, np.floor_divide)])
def test_float_remainders_are_numpys_bit_for_bit(name, opc, fn, isa):
    rng = np.random.default_rng(5)
    a = np.concatenate([_uniform(-10, 10), _uniform(-1e6, 1e6, seed=1),
                        (rng.standard_normal(4096) * 1e30).astype(np.float32),
                        np.repeat(SPECIAL, SPECIAL.size)])
    b = np.concatenate([_uniform(-3, 3, seed=2), _uniform(-10, 10, seed=3),
                        rng.standard_normal(4096).astype(np.float32),
                        np.tile(SPECIAL, SPECIAL.size)])
    with np.errstate(all="ignore"):
        want = fn(a, b)
    got = vm(opc, a, b)
    same = (got == want) & (np.signbit(got) == np.signbit(want)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), [(x, y, g, w) for x, y, g, w in zip(a[~same], b[~same], got[~same],
                                                           want[~same])][:5]


@pytest.mark.parametrize("name,opc,fn", [("and", PW.AND, np.logical_and),
                                         ("or", PW.OR, np.logical_or)])
def test_logical_ops_are_numpys_with_nan_true(name, opc, fn, isa):
    a, b = np.repeat(SPECIAL, SPECIAL.size), np.tile(SPECIAL, SPECIAL.size)
    np.testing.assert_array_equal(vm(opc, a, b), fn(a, b).astype(np.float32), err_msg=name)


def test_not_and_isfinite_are_numpys(isa):
    np.testing.assert_array_equal(vm(PW.NOT, SPECIAL), np.logical_not(SPECIAL).astype(np.float32))
    np.testing.assert_array_equal(vm(PW.ISFINITE, SPECIAL),
                                  np.isfinite(SPECIAL).astype(np.float32))


@pytest.mark.parametrize("opc", [PW.SIN, PW.TAN, PW.ATAN, PW.ACOS, PW.LOG1P, PW.EXPM1, PW.RINT,
                                 PW.ATAN2, PW.FMOD, PW.FLOORDIV])
def test_block_tails_give_the_bodys_bits(opc, isa):
    """Every length 1-71 (the VM's blocks are 64): each element as in one long run."""
    x = _uniform(-5, 5, 71, seed=9)
    y = _uniform(0.5, 3, 71, seed=10)
    args = (x, y) if opc in (PW.ATAN2, PW.FMOD, PW.FLOORDIV) else (x,)
    full = vm(opc, *args)
    for n in range(1, 72):
        np.testing.assert_array_equal(vm(opc, *(a[:n] for a in args)), full[:n], err_msg=str(n))


def _header_vm_opcodes() -> set[int]:
    """The VM opcodes om_program.h's enum declares."""
    import pathlib
    import re
    text = (pathlib.Path(P.__file__).parent / "csrc" / "om_program.h").read_text()
    body = re.search(r"enum \{\s*(VM_LOAD = 1.*?)\};", text, re.S).group(1)
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    values, nxt = set(), 0
    for item in (x.strip() for x in body.split(",") if x.strip()):
        name, _, value = item.partition("=")
        nxt = int(value) if value.strip() else nxt
        values.add(nxt)
        nxt += 1
    return values


def test_plan_check_knows_every_vm_opcode_and_no_other():
    from onemodel_backend_compiled import plan_check
    assert plan_check.VM_OPCODES == _header_vm_opcodes()
    names = {v for k, v in vars(PW).items() if k.isupper() and isinstance(v, int)
             and k not in ("MAXREG", "MAXIN", "MAXCONST")}
    assert names <= plan_check.VM_OPCODES
