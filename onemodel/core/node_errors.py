"""The error for a kernel that raised while a graph ran, shared by every runner of graphs (the
reference interpreter, the dynamic plan, compiled plans and the backends), so none of them has
to import another to report one."""
from __future__ import annotations

from ..errors import OneModelError
from ..registry import REGISTRY
from .graph import Node


class NodeExecutionError(OneModelError, RuntimeError):
    """A kernel raised while a graph ran; the message names the node and its source line."""

    node: Node | None = None  #: the node whose kernel raised
    provider: str | None = None  #: the plugin whose kernel it was


def node_error(node: Node, exc: BaseException, provider: str | None = None
               ) -> NodeExecutionError:
    """The error for a kernel that raised while ``node`` ran: names the op, its outputs, the
    recorded source line and the plugin whose kernel it was (``provider``; by default the op's
    own plugin). The error keeps ``node`` and ``provider`` as attributes."""
    if provider is None:
        op = REGISTRY.tables().ops.get(node.op)
        provider = getattr(op, "provider", None)
    where = f", recorded at {node.source}" if node.source else ""
    by = f", kernel from plugin {provider}" if provider else ""
    err = NodeExecutionError(f"while executing node {node.op} -> %{', %'.join(node.outputs)}"
                             f"{where}{by}: {type(exc).__name__}: {exc}")
    err.node, err.provider = node, provider
    return err


__all__ = ["NodeExecutionError", "node_error"]
