"""What the core needs from the layers above it, handed down by those layers.

A `Session` optimises its graph and may be given a model file; a `TracedModel` saves itself.
The pass pipeline and the file formats sit above the core, so instead of importing upward the
core asks for them here, and ``onemodel.passes`` / ``onemodel.formats`` provide them when they
are imported (``import onemodel`` imports both).
"""
from __future__ import annotations

from typing import Callable

from ..errors import OneModelError

#: service name -> (the function, the layer that provides it)
_PROVIDED: dict[str, tuple[Callable, str]] = {}

SERVICES = {
    "optimize": "onemodel.passes",     # optimize(graph, level, disabled=...) -> Graph
    "load": "onemodel.formats",        # load(path) -> Graph (OneModel or ONNX, by content)
    "save": "onemodel.formats",        # save(graph, path): the OneModel format
    "save_onnx": "onemodel.formats",   # save_onnx(graph, path, opset=None)
    "dumps": "onemodel.formats",       # dumps(graph) -> the OneModel file's bytes
    "loads": "onemodel.formats",       # loads(bytes) -> Graph, checked as a file is
}


def provide(name: str, fn: Callable) -> None:
    """Called by an upper layer at import: ``fn`` is what the core uses for ``name``."""
    if name not in SERVICES:
        raise OneModelError(f"unknown core service {name!r}; known: {', '.join(SERVICES)}")
    _PROVIDED[name] = (fn, SERVICES[name])


def service(name: str) -> Callable:
    """The function an upper layer provided for ``name``, or an error saying which layer to
    import (only reachable when ``onemodel.core`` is used without ``import onemodel``)."""
    try:
        return _PROVIDED[name][0]
    except KeyError:
        raise OneModelError(f"{name} needs {SERVICES.get(name, 'an upper layer')}, which is not "
                            f"loaded; import onemodel first") from None
