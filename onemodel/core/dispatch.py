"""Applying an op record: bind the call, then run it eagerly (with autograd) or hand it to the
tracer. This is the only path from user code to a kernel, so every op behaves the same way."""
from __future__ import annotations

import difflib
import numbers
from typing import Any

import numpy as np

from ..errors import OneModelError, OpError
from ..registry.records import REQUIRED, OpDef, Param, VjpContext
from . import eager_cache, foreign, tracing_hooks
from .autograd import GradNode
from .dtype import DType, DTypeError
from .grad_mode import GradMode
from .kernel_call import check_outputs
from .size_tensors import is_size_tensor, size_from_tensor
from .symbolic import Dim
from .symint import SymInt
from .types import TensorType


def _input_name(raw: str) -> str:
    return raw.rstrip("?*")


def _check_param(op: OpDef, pname: str, p: Param, value: Any) -> Any:
    where = f"ops.{op.name}: parameter {pname!r}"
    if value is None:
        if p.optional or p.default is None:
            return None
        raise OpError(f"{where} may not be None")
    kind = p.kind
    if kind in ("shape", "size"):
        value = _size_tensors_as_ints(op, pname, value)
    if kind in ("int", "size"):
        if isinstance(value, (SymInt, Dim)):
            return value
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
            raise OpError(f"{where} must be an int, got {value!r}")
        return int(value)
    if kind == "axis":
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
            raise OpError(f"{where} must be an int axis, got {value!r}")
        return int(value)
    if kind == "float":
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            raise OpError(f"{where} must be a number, got {value!r}")
        return float(value)
    if kind == "bool":
        if not isinstance(value, (bool, np.bool_)):
            raise OpError(f"{where} must be True or False, got {value!r}")
        return bool(value)
    if kind == "str":
        if not isinstance(value, str):
            raise OpError(f"{where} must be a string, got {value!r}")
        if p.choices is not None and value not in p.choices:
            raise OpError(f"{where} must be one of {', '.join(map(repr, p.choices))}, got {value!r}")
        return value
    if kind == "dtype":
        try:
            return DType.parse(value)
        except DTypeError as exc:
            raise OpError(f"{where}: {exc}") from None
    if kind in ("shape", "axes", "ints"):
        if isinstance(value, (SymInt, Dim, numbers.Integral)) and not isinstance(value, bool):
            return (value,) if kind == "shape" else (
                value if isinstance(value, (SymInt, Dim)) else int(value))
        if isinstance(value, (tuple, list)):
            out = []
            for v in value:
                if isinstance(v, (SymInt, Dim)):  # Dim: a graph builder's symbolic size
                    out.append(v)
                elif isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)):
                    out.append(int(v))
                else:
                    raise OpError(f"{where} must hold ints, got {v!r} in {value!r}")
            return tuple(out)
        raise OpError(f"{where} must be an int or a tuple of ints, got {value!r}")
    if kind == "scalar":
        if isinstance(value, SymInt):
            return value
        if not isinstance(value, (numbers.Number, np.generic)):
            raise OpError(f"{where} must be a number, got {value!r}")
        return value.item() if isinstance(value, np.generic) else value
    return value


def _size_tensors_as_ints(op: OpDef, pname: str, value):
    """A size given as a 0-d integer tensor is its value (PyTorch's habit); while tracing, one
    the trace computed is refused as data-dependent (see `size_tensors`)."""
    if is_size_tensor(value):
        return size_from_tensor(value, f"ops.{op.name}: {pname}")
    if isinstance(value, (tuple, list)) and any(is_size_tensor(v) for v in value):
        return tuple(size_from_tensor(v, f"ops.{op.name}: {pname}[{i}]")
                     if is_size_tensor(v) else v for i, v in enumerate(value))
    return value


def torch_name(pname: str) -> str | None:
    """PyTorch's name for a param: ``dim`` for ``axis``, ``dims``, ``start_dim``, ``dim0``,
    ``keepdim`` for ``keepdims``; None when the name has no other spelling."""
    if pname == "keepdims":
        return "keepdim"
    if "axis" in pname or "axes" in pname:
        return pname.replace("axes", "dims").replace("axis", "dim")
    return None


def _torch_alias(op: OpDef, given: str) -> str | None:
    """The param ``given`` names under PyTorch's spelling (``dim`` -> ``axis``), or None."""
    for pname in op.params:
        if torch_name(pname) == given:
            return pname
    return None


def _separate_sizes_hint(op: OpDef, names: list, pnames: list, rest: tuple) -> str:
    """For ``ops.reshape(x, n, -1)``: the shape is one argument, a tuple."""
    if not pnames or op.params[pnames[0]].kind != "shape":
        return ""
    if not all(is_size_tensor(v) or isinstance(v, (SymInt, numbers.Integral)) for v in rest):
        return ""
    return (f"; {pnames[0]!r} is one argument: give the sizes as one tuple, "
            f"ops.{op.name}({', '.join(names)}, ({', '.join('...' for _ in rest)}))")


def bind(op: OpDef, args: tuple, kwargs: dict) -> tuple[list, dict]:
    """Split a call into tensor inputs and validated params, with errors naming the argument."""
    raw_inputs, params = split_call(op, args, kwargs)
    names = [_input_name(i) for i in op.inputs]
    inputs = _to_tensors(op, raw_inputs, names if not op.variadic else [names[0]] * len(raw_inputs))
    return inputs, params


def split_call(op: OpDef, args: tuple, kwargs: dict) -> tuple[list, dict]:
    """`bind` without making tensors: the raw input arguments (None for an absent optional one)
    and the validated params. A graph builder (`onemodel.core.decompose`) binds its own
    values through it."""
    from .tensor import Tensor

    names = [_input_name(i) for i in op.inputs]
    pnames = list(op.params)
    if op.signature and args and not (op.variadic and isinstance(args[0], (list, tuple))):
        # a positional order other than "inputs, then params" (a variadic op given its sequence
        # first keeps the record's own order); a variadic input last in the signature takes
        # every remaining positional argument, as torch's ``einsum(equation, *operands)``
        if op.variadic and len(args) >= len(op.signature):
            k = len(op.signature) - 1
            tail = args[k:]
            one_seq = len(tail) == 1 and isinstance(tail[0], (list, tuple))
            args = (*args[:k], tail[0] if one_seq else list(tail))
        if len(args) > len(op.signature):
            raise OpError(f"ops.{op.name}() takes {len(op.signature)} arguments "
                          f"({', '.join(op.signature)}), got {len(args)}")
        kwargs = dict(kwargs)
        for name, value in zip(op.signature, args):
            if name in kwargs:
                raise OpError(f"ops.{op.name}() got argument {name!r} twice")
            kwargs[name] = value
        args = ()
    if op.variadic:
        if not args and names[0] in kwargs:
            args = (kwargs.pop(names[0]),) + tuple(args)
        if not args:
            raise OpError(f"ops.{op.name}() missing its input {names[0]!r} (a sequence of tensors)")
        seq = args[0]
        if isinstance(seq, Tensor) or not isinstance(seq, (list, tuple)):
            raise OpError(f"ops.{op.name}: {names[0]!r} must be a list or tuple of tensors")
        if not seq:
            raise OpError(f"ops.{op.name}: {names[0]!r} is empty")
        if any(t is None for t in seq):
            raise OpError(f"ops.{op.name}: {names[0]}[{[t is None for t in seq].index(True)}] "
                          f"is None")
        raw_inputs = list(seq)
        rest = args[1:]
        n_in = 1
    else:
        n_in = len(names)
        if len(args) > n_in + len(pnames):
            raise OpError(f"ops.{op.name}() takes {n_in + len(pnames)} arguments "
                          f"({', '.join(names + pnames)}), got {len(args)}"
                          f"{_separate_sizes_hint(op, names, pnames, args[n_in:])}")
        raw_inputs = list(args[:n_in]) + [REQUIRED] * max(0, n_in - len(args))
        rest = args[n_in:]
        for i, name in enumerate(names):
            if name in kwargs:
                if raw_inputs[i] is not REQUIRED:
                    raise OpError(f"ops.{op.name}() got input {name!r} twice")
                raw_inputs[i] = kwargs.pop(name)
        for i, raw in enumerate(op.inputs):
            if raw_inputs[i] is REQUIRED:
                if raw.endswith("?"):
                    raw_inputs[i] = None
                else:
                    raise OpError(f"ops.{op.name}() missing input {names[i]!r}")
            elif raw_inputs[i] is None and not raw.endswith("?"):
                raise OpError(f"ops.{op.name}: input {names[i]!r} is required, got None")
    params = dict(zip(pnames, rest))
    for k, v in kwargs.items():
        given = k
        if k not in op.params:
            k = _torch_alias(op, k)
            if k is None:
                spelled = [t for t in map(torch_name, pnames) if t]
                close = difflib.get_close_matches(given, pnames + names + spelled, n=2)
                hint = f"; did you mean {' or '.join(close)}?" if close else ""
                raise OpError(f"ops.{op.name}() got an unknown argument {given!r}{hint}")
            if k in params or k in kwargs:
                raise OpError(f"ops.{op.name}() got parameter {k!r} twice ({given!r} is "
                              f"PyTorch's name for {k!r}; give one of them)")
        if k in params:
            raise OpError(f"ops.{op.name}() got parameter {k!r} twice")
        params[k] = v
    for pname, p in op.params.items():
        if pname not in params:
            if p.required:
                raise OpError(f"ops.{op.name}() missing parameter {pname!r}")
            params[pname] = p.default
        params[pname] = _check_param(op, pname, p, params[pname])
    return raw_inputs, params


def _to_tensors(op: OpDef, raw: list, names: list[str]) -> list:
    from .tensor import Tensor

    tensors = [r for r in raw if isinstance(r, Tensor)]
    like = None
    if tensors:
        from .dtype import promote_types

        like = promote_types(*(t.dtype for t in tensors))
    out = []
    for r, name in zip(raw, names):
        if r is None or isinstance(r, Tensor):
            out.append(r)
        elif isinstance(r, np.ndarray):
            out.append(Tensor.from_numpy(r))
        elif isinstance(r, SymInt):
            tracer = tracing_hooks.current()
            if tracer is None or not hasattr(tracer, "size_tensor"):
                r._refuse(f"ops.{op.name}: using a size as the tensor value {name!r}")
            dt = like if like is not None and like != DType.BOOL else DType.I64
            out.append(tracer.size_tensor(r, dt))  # recorded: the size computed at run time
        elif isinstance(r, (bool, np.bool_)):
            dt = like if like is not None else DType.BOOL
            out.append(Tensor._wrap(np.asarray(r, dtype=dt.numpy)))
        elif isinstance(r, numbers.Integral):
            dt = like if like is not None and like != DType.BOOL else DType.I64
            out.append(Tensor._wrap(np.asarray(r, dtype=dt.numpy)))
        elif isinstance(r, numbers.Real):
            dt = like if like is not None and like.is_float else DType.F32
            out.append(Tensor._wrap(np.asarray(r, dtype=dt.numpy)))
        elif isinstance(r, (list, tuple)):
            out.append(Tensor._from_data(r))
        elif foreign.is_array_like(r):  # a torch tensor, a JAX array...: see core/foreign.py
            out.append(Tensor.from_numpy(foreign.as_array(r, f"ops.{op.name}: input {name!r}")))
        else:
            raise OpError(f"ops.{op.name}: input {name!r} must be a Tensor, an array or a number, "
                          f"got {foreign.type_name(r)}")
    return out


def infer(op: OpDef, types: list, params: dict):
    """Run the op's inference, turning a plugin's plain exceptions into an OpError naming it."""
    try:
        out = op.infer(*types, **params)
    except OneModelError:
        raise
    except Exception as exc:  # noqa: BLE001 - report any plugin failure with the op's name
        shapes = ", ".join(str(t) for t in types if t is not None)
        raise OpError(f"ops.{op.name}({shapes}): {exc}") from exc
    outs = out if isinstance(out, (tuple, list)) else (out,)
    if not outs or not all(isinstance(t, TensorType) for t in outs):
        raise OpError(f"ops.{op.name}: the inference of plugin {op.provider} returned "
                      f"{out!r:.80}, not a TensorType (or a tuple of them)")
    return out


def run_kernel(op: OpDef, arrays: list, params: dict, want_saved: bool):
    try:
        if want_saved and op.forward is not None:
            out, saved = op.forward(*arrays, **params)
        else:
            out, saved = op.kernel(*arrays, **params), None
    except OneModelError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise _kernel_error(op, arrays, exc) from exc
    return out, saved


def _kernel_error(op: OpDef, arrays: list, exc: Exception) -> OpError:
    shapes = ", ".join(f"{a.dtype}{list(a.shape)}" for a in arrays if a is not None)
    return OpError(f"ops.{op.name}({shapes}) failed in the kernel from {op.provider}: "
                   f"{type(exc).__name__}: {exc}")


def eager(op: OpDef, inputs: list, params: dict):
    """Run one op on concrete tensors, recording a GradNode when a gradient is needed."""
    return _eager(op, inputs, params)[0]


def _eager(op: OpDef, inputs: list, params: dict):
    """`eager`, also returning the inferred output types (what the cache keeps)."""
    types = [TensorType(t.dtype, t._data.shape) if t is not None else None for t in inputs]
    out_types = infer(op, types, params)
    multi = isinstance(out_types, (tuple, list))
    if not multi:
        out_types = (out_types,)
    record = _records(op, inputs)
    arrays = [t._data if t is not None else None for t in inputs]
    out, saved = run_kernel(op, arrays, params, record)
    arrays_out = _checked_outputs(op, out, out_types)
    return _results(op, inputs, arrays, arrays_out, params, saved, record, multi), out_types, multi


def _records(op: OpDef, inputs: list) -> bool:
    """Whether autograd records this application."""
    if op.vjp is None or not GradMode.is_enabled():
        return False
    for t in inputs:
        if t is not None and t.requires_grad:
            return True
    return False


def _checked_outputs(op: OpDef, out, out_types) -> list:
    """The kernel's result as arrays of the inferred types (`kernel_call.check_outputs`)."""
    return check_outputs(out, out_types, op.name, op.provider)


def _results(op, inputs, arrays, arrays_out, params, saved, record, multi):
    results = [_wrap(a) for a in arrays_out]
    if record:
        ctx = VjpContext(inputs=tuple(arrays), outputs=tuple(arrays_out), params=dict(params),
                         saved=saved, needs_grad=tuple(t is not None and t.requires_grad
                                                       for t in inputs))
        node = GradNode(op, tuple(inputs), ctx, len(results))
        for i, r in enumerate(results):
            if r.dtype.is_float:
                r._node, r._out_index, r.requires_grad = node, i, True
    return tuple(results) if multi else results[0]


def _replay(entry, slots: list):
    """A call whose signature is cached: no binding, no inference; the kernel's result is
    checked in full only when it is not already an array of the expected dtype and shape.
    (The hot path of every repeated eager call: kept flat on purpose.)"""
    op, params = entry.op, entry.params
    direct = entry.direct
    inputs = ([slots[k] for k in direct] if direct is not None
              else eager_cache.inputs_of(entry, slots))
    record = False
    if op.vjp is not None:
        for t in inputs:
            if t is not None and t.requires_grad:
                record = GradMode.is_enabled()
                break
    arrays = [t._data if t is not None else None for t in inputs]
    if record:
        out, saved = run_kernel(op, arrays, params, True)
    else:
        saved = None
        try:
            out = op.kernel(*arrays, **params)
        except OneModelError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise _kernel_error(op, arrays, exc) from exc
    if not entry.multi:
        dt, shape = entry.expect[0]
        if type(out) is np.ndarray and (out.dtype is dt or out.dtype == dt) and out.shape == shape:
            if not record:
                return _wrap(out)
            arrays_out = [out]
        else:
            arrays_out = _checked_outputs(op, out, entry.out_types)
        return _results(op, inputs, arrays, arrays_out, params, saved, record, False)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    arrays_out = list(outs)
    if len(outs) != len(entry.expect):
        arrays_out = _checked_outputs(op, out, entry.out_types)
    else:
        for a, (dt, shape) in zip(outs, entry.expect):
            if type(a) is not np.ndarray or a.dtype != dt or a.shape != shape:
                arrays_out = _checked_outputs(op, out, entry.out_types)
                break
    return _results(op, inputs, arrays, arrays_out, params, saved, record, True)


def _wrap(array):
    """``Tensor._wrap`` (bound on first use: tensor.py imports this module)."""
    global _wrap
    _wrap = eager_cache._tensor_class()._wrap
    return _wrap(array)


def apply(op: OpDef, args: tuple, kwargs: dict):
    """Apply ``op`` to a call. Outside a trace, a call whose signature was seen before skips
    binding and inference (`eager_cache`); anything the cache cannot describe goes the full way."""
    key = None
    if tracing_hooks.current() is None:
        slots: list = []
        try:
            key = eager_cache.key(op, args, kwargs, slots)
        except eager_cache.Unkeyable:
            key = None
        else:
            entry = eager_cache.TABLE.get(key)
            if entry is not None:
                if entry is eager_cache.UNCACHEABLE:
                    key = None
                elif entry.op is op:  # not another record that got a dropped one's id
                    return _replay(entry, slots)
    inputs, params = bind(op, args, kwargs)
    tracer = tracing_hooks.current()
    if tracer is not None:
        return tracer.apply(op, inputs, params)
    result, out_types, multi = _eager(op, inputs, params)
    if key is not None:
        eager_cache.store(key, op, slots, inputs, params, out_types, multi)
    return result
