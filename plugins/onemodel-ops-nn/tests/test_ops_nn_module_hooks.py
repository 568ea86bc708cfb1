"""The onemodel_modules hook of onemodel-ops-nn: one ModuleDef per layer of the public API."""
from __future__ import annotations

import onemodel as om
from onemodel.nn import NnModule
from onemodel.registry import ModuleDef
from onemodel_ops_nn import module_hooks

API_LAYERS = ["Linear", "Conv2d", "MaxPool2d", "AvgPool2d", "BatchNorm2d", "LayerNorm",
              "Embedding", "Dropout", "ReLU", "GELU", "Sigmoid", "Tanh", "Softmax", "Flatten",
              "Sequential", "MultiheadAttention", "TransformerEncoderLayer", "MSELoss",
              "CrossEntropyLoss", "CTCLoss"]


def test_hook_returns_a_record_per_layer():
    records = module_hooks.onemodel_modules()
    assert all(isinstance(r, ModuleDef) for r in records)
    names = [r.name for r in records]
    assert len(names) == len(set(names))
    assert set(API_LAYERS) <= set(names)
    for r in records:
        assert issubclass(r.cls, NnModule) and r.cls.__name__ == r.name
        assert r.doc or r.cls.__doc__ is None


def test_installed_plugin_serves_om_nn():
    mods = om.registry.modules()
    for name in API_LAYERS:
        assert mods[name].cls is getattr(om.nn, name)
        assert "onemodel-ops-nn" in (mods[name].provider or "")
