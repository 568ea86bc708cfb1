"""Reverse-mode autograd, small enough to read in one sitting (micrograd's shape, numpy arrays).

Each op application that needs a gradient leaves a `GradNode` on its outputs: the op's vjp, the
arrays it needs, and the input tensors. `backward` orders the nodes topologically and walks them
once. Nodes point only to their inputs, never to their outputs, so there are no reference cycles;
after `backward` the saved arrays are released unless ``retain_graph=True``.
"""
from __future__ import annotations

import numpy as np

from ..errors import OneModelError
from ..registry.records import VjpContext


class AutogradError(OneModelError, RuntimeError):
    """backward() cannot run (non-scalar root without grad, freed graph, tensor changed in place)."""


class GradNode:
    __slots__ = ("op", "inputs", "versions", "ctx", "n_outputs", "__weakref__")

    def __init__(self, op, inputs, ctx: VjpContext, n_outputs: int):
        self.op = op
        self.inputs = inputs  # tuple of Tensor | None
        self.versions = tuple(t._version if t is not None else 0 for t in inputs)
        self.ctx = ctx
        self.n_outputs = n_outputs

    def __repr__(self) -> str:
        return f"<GradNode {self.op.name}>"


def unbroadcast(grad: np.ndarray, shape: tuple) -> np.ndarray:
    """Sum a gradient over the axes broadcasting added or stretched, back to ``shape``."""
    if grad.shape == shape:
        return grad
    extra = grad.ndim - len(shape)
    if extra > 0:
        grad = grad.sum(axis=tuple(range(extra)))
    axes = tuple(i for i, (g, s) in enumerate(zip(grad.shape, shape)) if s == 1 and g != 1)
    if axes:
        grad = grad.sum(axis=axes, keepdims=True)
    if grad.shape != shape:
        grad = np.broadcast_to(grad, shape)
    return grad


def _topological(root_node: GradNode) -> list[GradNode]:
    order: list[GradNode] = []
    seen: set[int] = set()
    stack = [(root_node, False)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for t in node.inputs:
            if t is not None and t._node is not None and id(t._node) not in seen:
                stack.append((t._node, False))
    return order  # inputs before the nodes that use them


def backward(root, grad: np.ndarray, retain_graph: bool = False) -> None:

    node0 = root._node
    if node0 is None:  # a leaf: its gradient is the seed itself
        _accumulate_leaf(root, grad)
        return
    pending: dict[int, list] = {id(node0): [None] * node0.n_outputs}
    pending[id(node0)][root._out_index] = grad
    for node in reversed(_topological(node0)):
        grads = pending.pop(id(node), None)
        if grads is None:
            continue
        ctx = node.ctx
        if ctx is None:
            raise AutogradError(
                f"backward through {node.op.name!r} a second time: its saved arrays were freed; "
                f"pass retain_graph=True to the first backward()")
        for t, v in zip(node.inputs, node.versions):
            if t is not None and t._version != v:
                raise AutogradError(
                    f"a tensor that ops.{node.op.name} needs for its gradient was changed in place "
                    f"after it was used; clone it before the in-place change")
        grads = [g if g is not None else np.zeros_like(o) for g, o in zip(grads, ctx.outputs)]
        in_grads = node.op.vjp(ctx, *grads)
        if not isinstance(in_grads, (tuple, list)):
            in_grads = (in_grads,)
        if len(in_grads) != len(node.inputs):
            raise AutogradError(f"the gradient rule of ops.{node.op.name} returned {len(in_grads)} "
                                f"gradients for {len(node.inputs)} inputs (plugin {node.op.provider})")
        for t, g in zip(node.inputs, in_grads):
            if t is None or g is None or not t.requires_grad:
                continue
            g = np.asarray(g)
            g = unbroadcast(g, t._data.shape)
            if g.dtype != t._data.dtype:
                g = g.astype(t._data.dtype)
            if t._node is None:
                _accumulate_leaf(t, g)
            else:
                slot = pending.setdefault(id(t._node), [None] * t._node.n_outputs)
                prev = slot[t._out_index]
                slot[t._out_index] = g if prev is None else prev + g
        if not retain_graph:
            node.ctx = None


def _accumulate_leaf(t, g: np.ndarray) -> None:
    from .tensor import Tensor

    if g.shape != t._data.shape:
        g = unbroadcast(g, t._data.shape)
    if t.grad is None:
        t.grad = Tensor._wrap(np.array(g, dtype=t._data.dtype, copy=True))
    else:
        t.grad = Tensor._wrap(t.grad._data + g)
