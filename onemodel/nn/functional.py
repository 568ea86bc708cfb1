"""``om.nn.functional``: PyTorch's ``torch.nn.functional`` habit (``import onemodel.nn.functional
as F``; ``F.relu(x)``, ``F.softmax(x, dim=-1)``, ``F.cross_entropy(logits, target)``).

It is ``om.ops`` under PyTorch's name: every op of every installed plugin, with the record's
signature and docstring, so a plugin's new op is here the moment it is installed. The ops carry
PyTorch's names and arguments (``dim`` for ``axis``, ``training=`` for dropout), so no list of
names is kept: the core knows no concrete op.
"""
from __future__ import annotations

from ..core.ops_namespace import ops as _ops


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(_ops, name)  # an unknown name: UnknownOpError (an AttributeError), with hints


def __dir__():
    return dir(_ops)
