"""The records plugins return from their hooks. One op is one `OpDef` carrying every capability.

Records are frozen attrs classes so that a test can call a hook and inspect what came back, and so
that nothing changes a record after the registry validated it.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

import attrs

REQUIRED = attrs.make_class("Required", [], repr=False)()  # sentinel: parameter has no default

#: Parameter kinds understood by the core when binding calls and by the tracer:
#: ``shape`` / ``size`` entries may be symbolic sizes while tracing; ``axis``/``axes`` are
#: normalised by the op itself; ``any`` is passed through untouched.
PARAM_KINDS = frozenset(
    {"int", "float", "bool", "str", "dtype", "shape", "size", "axis", "axes", "ints", "scalar",
     "index", "any"}
)


@attrs.frozen(kw_only=True)
class Param:
    """A static (non-tensor) argument of an op: its kind, default and whether None is allowed."""

    kind: str = attrs.field(validator=attrs.validators.in_(PARAM_KINDS))
    default: Any = REQUIRED
    optional: bool = False
    choices: tuple | None = None
    doc: str = ""

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@attrs.frozen(kw_only=True)
class Sample:
    """One sample call for the generic tests (PyTorch's OpInfo idea).

    ``args`` holds numpy arrays for tensor inputs (a list of arrays for a variadic input, None for
    an absent optional one); ``params`` the static arguments. ``grad=False`` skips the finite
    difference check (non-smooth points, integer outputs).
    """

    args: tuple
    params: Mapping[str, Any] = attrs.field(factory=dict)
    grad: bool = True
    name: str = ""


@attrs.frozen(kw_only=True)
class VjpContext:
    """What a gradient rule may look at: the forward's arrays, params and whatever it saved."""

    inputs: tuple
    outputs: tuple
    params: Mapping[str, Any]
    saved: Any = None
    needs_grad: tuple = ()


@attrs.frozen(kw_only=True)
class OnnxSpec:
    """How an op maps to ONNX: ``export(ctx, node)`` emits ONNX nodes; ``imports`` maps an ONNX
    op type to a rule turning one ONNX node into OneModel nodes. Filled by the formats work."""

    export: Callable | None = None
    imports: Mapping[str, Callable] = attrs.field(factory=dict)
    doc: str = ""


def _is_callable(inst, attribute, value):
    if not callable(value):
        raise TypeError(f"{attribute.name} must be callable, got {type(value).__name__}")


def _optional_callable(inst, attribute, value):
    if value is not None and not callable(value):
        raise TypeError(f"{attribute.name} must be callable or None, got {type(value).__name__}")


def _str_tuple(value) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    return tuple(value)


@attrs.frozen(kw_only=True)
class OpDef:
    """An operator: eager kernel, inference, gradient, trace legality, ONNX mapping and samples.

    * ``inputs`` names the tensor inputs in call order. A name ending in ``?`` is optional (None
      allowed); a single name ending in ``*`` is variadic (a sequence of tensors, as ``concat``).
    * ``params`` are the static arguments, bound after the inputs, positionally or by keyword.
    * ``kernel(*arrays, **params)`` returns an array or a tuple of arrays (numpy).
    * ``forward`` (optional) is ``kernel`` that also returns ``saved`` for the gradient rule.
    * ``infer(*types, **params)`` returns the output type(s); types have ``.dtype`` (a DType) and
      ``.shape`` whose entries are ints or symbolic ``Dim`` expressions.
    * ``vjp(ctx, *grads)`` returns one gradient (or None) per input; None means "not
      differentiable". Broadcasting and dtype of gradients are reduced by the core.
    * ``untraceable`` is None (traceable), a reason, or ``f(params) -> reason | None``.
    * ``pure`` is False when the op has effects beyond its outputs (random draws, in-place
      updates), or ``f(params) -> bool`` when that depends on params; see `is_pure`.
    * ``signature`` (optional) is the positional order of a call when it is not "inputs, then
      params": every input and param name once, e.g. ``("x", "normalized_shape", "weight",
      "bias", "eps")`` for ``layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5)``.
    * ``methods`` are Tensor method / operator names taking the tensor as first input,
      ``reflected`` operator names taking it as second (``__radd__``), ``inplace`` in-place
      method names (``add_``) whose result is written back into the tensor.
    """

    name: str = attrs.field(validator=attrs.validators.matches_re(r"[a-z_][a-z0-9_]*"))
    inputs: tuple[str, ...] = attrs.field(converter=_str_tuple)
    params: Mapping[str, Param] = attrs.field(factory=dict)
    kernel: Callable = attrs.field(validator=_is_callable)
    infer: Callable = attrs.field(validator=_is_callable)
    vjp: Callable | None = attrs.field(validator=_optional_callable)
    samples: Callable = attrs.field(validator=_is_callable)
    forward: Callable | None = attrs.field(default=None, validator=_optional_callable)
    onnx: OnnxSpec | None = None
    untraceable: str | Callable | None = None
    methods: tuple[str, ...] = attrs.field(default=(), converter=_str_tuple)
    reflected: tuple[str, ...] = attrs.field(default=(), converter=_str_tuple)
    inplace: tuple[str, ...] = attrs.field(default=(), converter=_str_tuple)
    pure: bool | Callable = True
    doc: str = ""
    provider: str | None = None  # set by the registry: "distribution version" or plugin name
    signature: tuple[str, ...] = attrs.field(default=(), converter=_str_tuple)

    @property
    def variadic(self) -> bool:
        return len(self.inputs) == 1 and self.inputs[0].endswith("*")

    def is_pure(self, params: Mapping[str, Any]) -> bool:
        """Whether this application has no effect but its outputs (so it may be dropped, folded
        or merged); ``pure`` may be a bool or ``f(params) -> bool`` (batch_norm: only in eval)."""
        return bool(self.pure(params) if callable(self.pure) else self.pure)

    def trace_refusal(self, params: Mapping[str, Any]) -> str | None:
        """The reason this application cannot be traced, or None."""
        if self.untraceable is None or isinstance(self.untraceable, str):
            return self.untraceable
        return self.untraceable(params)

    def __attrs_post_init__(self):
        for pname, p in self.params.items():
            if not isinstance(p, Param):
                raise TypeError(f"param {pname!r} of op {self.name!r} must be a Param record")
        star = [i for i in self.inputs if i.endswith("*")]
        if star and len(self.inputs) != 1:
            raise TypeError(f"op {self.name!r}: a variadic input must be the only input")
        if self.signature:
            names = [i.rstrip("?*") for i in self.inputs] + list(self.params)
            if sorted(self.signature) != sorted(names) or star:
                raise TypeError(f"op {self.name!r}: signature {self.signature} must name every "
                                f"input and param once ({', '.join(names)})")


@attrs.frozen(kw_only=True)
class KernelDef:
    """A backend-specific kernel for an op defined anywhere: same signature as ``OpDef.kernel``.

    ``make(node_params, input_types)`` may return a specialised callable instead (pre-packing).
    """

    op: str
    backend: str
    kernel: Callable | None = attrs.field(default=None, validator=_optional_callable)
    make: Callable | None = attrs.field(default=None, validator=_optional_callable)
    doc: str = ""
    provider: str | None = None


@attrs.frozen(kw_only=True)
class BackendDef:
    """An execution backend: ``create(**options)`` returns an object with ``compile(graph)``."""

    name: str
    create: Callable = attrs.field(validator=_is_callable)
    doc: str = ""
    provider: str | None = None


@attrs.frozen(kw_only=True)
class PassDef:
    """A graph pass: ``run(graph) -> graph``; runs at ``level`` ("basic" or "all") and above."""

    name: str
    level: str = attrs.field(validator=attrs.validators.in_(("basic", "all")))
    run: Callable = attrs.field(validator=_is_callable)
    order: int = 100
    doc: str = ""
    provider: str | None = None


@attrs.frozen(kw_only=True)
class ModuleDef:
    """An ``om.nn`` layer class contributed by a plugin (``om.nn.<name>``)."""

    name: str
    cls: type
    doc: str = ""
    provider: str | None = None


RECORD_TYPES = {
    "onemodel_ops": OpDef,
    "onemodel_kernels": KernelDef,
    "onemodel_backends": BackendDef,
    "onemodel_passes": PassDef,
    "onemodel_modules": ModuleDef,
}

__all__ = ["REQUIRED", "Param", "Sample", "VjpContext", "OnnxSpec", "OpDef", "KernelDef",
           "BackendDef", "PassDef", "ModuleDef", "RECORD_TYPES", "Iterable"]
