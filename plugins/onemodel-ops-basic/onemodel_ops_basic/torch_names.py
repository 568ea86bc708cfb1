"""PyTorch's name for each basic op (`OpDef.torch`), curated by hand and attached in plugin.py.

A matching name is not enough: our ``take`` is numpy's (torch.take flattens), ``equal`` is
elementwise (torch.equal answers one bool), ``max`` gives values only (torch.amax). None: torch
has no such op (graph-internal ops, ONNX's own ops)."""
from __future__ import annotations

TORCH = {
    "abs": "torch.abs", "acos": "torch.acos", "add": "torch.add", "all": "torch.all",
    "amax": "torch.amax", "amin": "torch.amin", "any": "torch.any", "arange": "torch.arange",
    "argmax": "torch.argmax", "argmin": "torch.argmin", "argsort": "torch.argsort",
    "asin": "torch.asin", "atan": "torch.atan", "atan2": "torch.atan2", "bmm": "torch.bmm",
    "cast": "Tensor.to", "ceil": "torch.ceil", "chunk": "torch.chunk", "clip": "torch.clamp",
    "concat": ("torch.cat", "torch.concat"), "copy": "Tensor.copy_", "cos": "torch.cos",
    "cumprod": "torch.cumprod", "cumsum": "torch.cumsum", "diag": "torch.diag",
    "div": "torch.div", "einsum": "torch.einsum", "equal": "torch.eq", "erf": "torch.erf",
    "exp": "torch.exp", "expand": "Tensor.expand", "expm1": "torch.expm1",
    "fill": ("torch.full_like", "Tensor.fill_"), "flatten": "torch.flatten",
    "flip": "torch.flip", "floor": "torch.floor", "floor_divide": "torch.floor_divide",
    "fmod": "torch.fmod", "full": "torch.full", "full_like": "torch.full_like",
    "gather": "torch.gather", "gather_nd": None, "greater": "torch.gt",
    "greater_equal": "torch.ge", "identity": None, "index": "Tensor.__getitem__",
    "index_mask": "Tensor.__getitem__", "index_put": "Tensor.__setitem__",
    "index_put_mask": "Tensor.__setitem__", "index_select": "torch.index_select",
    "isclose": "torch.isclose", "isinf": "torch.isinf", "isnan": "torch.isnan",
    "less": "torch.lt", "less_equal": "torch.le", "linspace": "torch.linspace",
    "bitcast": "Tensor.view", "bitwise_and": "torch.bitwise_and", "bitwise_or": "torch.bitwise_or",
    "bitwise_xor": "torch.bitwise_xor", "bitwise_not": "torch.bitwise_not",
    "log": "torch.log", "log1p": "torch.log1p", "logical_and": "torch.logical_and",
    "logical_not": "torch.logical_not", "logical_or": "torch.logical_or",
    "logsumexp": "torch.logsumexp", "masked_fill": "Tensor.masked_fill",
    "masked_select": "torch.masked_select", "matmul": "torch.matmul", "matmul_t": None,
    "max": "torch.amax", "maximum": "torch.maximum", "mean": "torch.mean", "min": "torch.amin",
    "minimum": "torch.minimum", "movedim": "torch.movedim", "mul": "torch.mul",
    "narrow": "torch.narrow", "neg": "torch.neg", "nonzero": "torch.nonzero",
    "norm": ("torch.norm", "torch.linalg.vector_norm"), "not_equal": "torch.ne",
    "one_hot": "F.one_hot", "ones_like": "torch.ones_like", "outer": "torch.outer",
    "pad": "F.pad", "permute": "torch.permute", "pow": "torch.pow", "prod": "torch.prod",
    "relu": "torch.relu", "remainder": "torch.remainder", "repeat": "Tensor.repeat",
    "repeat_interleave": "torch.repeat_interleave", "reshape": "torch.reshape",
    "roll": "torch.roll", "round": "torch.round", "rsqrt": "torch.rsqrt",
    "scatter": "torch.scatter", "scatter_add": "torch.scatter_add", "shape_from_data": None,
    "scatter_nd": None, "sized_from_data": None, "det": "torch.linalg.det",
    "sigmoid": "torch.sigmoid", "sign": "torch.sign", "sin": "torch.sin", "sort": "torch.sort",
    "split": "torch.split", "sqrt": "torch.sqrt", "squeeze": "torch.squeeze",
    "stack": "torch.stack", "std": "torch.std", "sub": "torch.sub", "sum": "torch.sum",
    "take": None, "tan": "torch.tan", "tanh": "torch.tanh", "tile": "torch.tile",
    "topk": "torch.topk", "transpose": "torch.transpose", "unbind": "torch.unbind",
    "unflatten": "torch.unflatten", "unique": "torch.unique", "unsqueeze": "torch.unsqueeze",
    "var": "torch.var", "where": "torch.where", "zeros_like": "torch.zeros_like",
    # ONNX's If, Loop and Scan: torch writes control flow in Python, which a trace unrolls
    "cond": None, "loop": None, "scan": None,
}
