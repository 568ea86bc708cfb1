"""The compiled backend's tests run from an installed copy too: their models come from
`onemodel.testing.models`, nothing from the repository's tests/ folder."""
import os

import pytest

from onemodel_backend_compiled import _native, dispatch

# every plan lowered here (and in the tests' subprocesses) is validated as a loaded one is
# (plan_check.py): a legitimate plan the validator refused would fail its test
os.environ.setdefault("ONEMODEL_CHECK_LOWERED_PLANS", "1")

#: the kernel copies the `isa` fixture runs on: every one this CPU runs, or only the one
#: $ONEMODEL_COMPILED_ISA names (test_every_copy.py runs the suites so, once per copy)
COPIES = ([os.environ[dispatch.ENV].strip()] if os.environ.get(dispatch.ENV, "").strip()
          else [name for name, _ in _native.copies()])


@pytest.fixture(params=COPIES)
def isa(request):
    """Each test that asks for it runs on every kernel copy this CPU runs (best first): that
    copy on top, the copies below it filling what it leaves out."""
    before = _native.isa()
    _native.use(request.param)
    yield _native.isa()
    _native.use(before)
