"""The compiled backend's tests run from an installed copy too: their models come from
`onemodel.testing.models`, nothing from the repository's tests/ folder."""
import os

import pytest

# every plan lowered here (and in the tests' subprocesses) is validated as a loaded one is
# (plan_check.py): a legitimate plan the validator refused would fail its test
os.environ.setdefault("ONEMODEL_CHECK_LOWERED_PLANS", "1")


@pytest.fixture(params=["native", "generic", "avx2-w16"])
def isa(request):
    """Each test that asks for it runs on the CPU's own kernel copy, on the portable one and on
    avx2-w16 (the AVX-512 copy's 16-lane GEMM built for AVX2: om_wide.h tested without
    AVX-512; skipped where the CPU lacks AVX2)."""
    from onemodel_backend_compiled import _native

    before = _native.isa()
    try:
        _native.use(before if request.param == "native" else request.param)
    except ValueError as exc:
        pytest.skip(f"{request.param}: {exc}")
    yield _native.isa()
    _native.use(before)
