import os

import pytest

import onemodel as om


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
