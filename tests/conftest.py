import os

import pytest

import onemodel as om

# every plan the compiled backend lowers in the tests (and their subprocesses) is validated as a
# loaded one is (plan_check.py): a legitimate plan the validator refused would fail its test
os.environ.setdefault("ONEMODEL_CHECK_LOWERED_PLANS", "1")


@pytest.fixture
def registered():
    """Register plugin objects for one test and always unregister them afterwards."""
    added = []

    def add(plugin, name=None):
        added.append(om.registry.register(plugin, name))
        return plugin

    yield add
    for name in added:
        om.registry.unregister(name)
