import os
import sys

import pytest

# these tests share the session models of the repository's tests (tests/session_models.py)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

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
