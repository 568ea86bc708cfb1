"""The compiled backend's tests run from an installed copy too: their models come from
`onemodel.testing.models`, nothing from the repository's tests/ folder."""
import os

import pytest

# every plan lowered here (and in the tests' subprocesses) is validated as a loaded one is
# (plan_check.py): a legitimate plan the validator refused would fail its test
os.environ.setdefault("ONEMODEL_CHECK_LOWERED_PLANS", "1")


@pytest.fixture(params=["native", "generic"])
def isa(request):
    """Each test that asks for it runs on the CPU's own kernel copy and on the portable one."""
    from onemodel_backend_compiled import _native

    before = _native.isa()
    _native.use(before if request.param == "native" else "generic")
    yield _native.isa()
    _native.use(before)
