"""The records plugins return from their hooks. One op is one `OpDef` carrying every capability.

Records are frozen attrs classes so that a test can call a hook and inspect what came back, and so
that nothing changes a record after the registry validated it.

Every named record (op, kernel, backend, pass, module) may say ``override=True``: it then
replaces a record of the same name from another plugin instead of clashing with it (a clash is
an error naming both distributions, and the name is unavailable until one of them goes).
"""
from __future__ import annotations

import math
import re
from typing import Any, Callable, Mapping

import attrs

from . import formula as _formula

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
    difference check (non-smooth points, integer outputs). ``onnx=False`` marks a call ONNX has
    no form for: the ONNX check then requires the export to refuse it (an `OnnxExportError`)
    instead of comparing a round trip.
    """

    args: tuple
    params: Mapping[str, Any] = attrs.field(factory=dict)
    grad: bool = True
    name: str = ""
    onnx: bool = True


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
    op type (``"Relu"``; ``"<domain>.<op type>"`` outside the default domain) to a rule turning
    one ONNX node into OneModel nodes (see docs/onnx.md)."""

    export: Callable | None = None
    imports: Mapping[str, Callable] = attrs.field(factory=dict)
    doc: str = ""


def _is_callable(inst, attribute, value):
    if not callable(value):
        raise TypeError(f"{attribute.name} must be callable, got {type(value).__name__}")


def _optional_callable(inst, attribute, value):
    if value is not None and not callable(value):
        raise TypeError(f"{attribute.name} must be callable or None, got {type(value).__name__}")


@attrs.frozen(kw_only=True)
class Pointwise:
    """The op is pointwise: ``out[i] = f(in0[i], in1[i], ...)`` after broadcasting, with one
    scalar formula a backend may fuse or compile (PyTorch's ``Tag.pointwise``, tinygrad's
    ``GroupOp.ALU``).

    * ``formula`` is a numpy expression over the op's input names and param names (see
      `onemodel.registry.formula` for the grammar): ``"a + b"``, ``"np.maximum(x, 0)"``; or
      ``f(params) -> str | None`` when the expression depends on a param (gelu's
      ``approximate``). Params it names are replaced by their values (numbers only; an
      application whose param is None or symbolic has no formula and is not fused).
      It only has to hold for float inputs of one dtype: fusion happens only there.
    * ``neutral`` maps an input position to a constant that makes the op return its other input
      (``add``: ``{0: 0.0, 1: 0.0}``, ``div``: ``{1: 1.0}``), for no-op elimination.
    """

    formula: str | Callable
    neutral: Mapping[int, float] = attrs.field(factory=dict)

    def expression(self, inputs: tuple[str, ...], params: Mapping[str, Any]):
        """The checked expression tree of this application (an `ast.expr` over ``inputs``), or
        None when it has no formula (a param that is not a number)."""
        _f = _formula
        text = self.formula(dict(params)) if callable(self.formula) else self.formula
        if text is None:
            return None
        names = tuple(i.rstrip("?*") for i in inputs)
        tree = _f.parse(text, names + tuple(params))
        values = {}
        for name in _f.free_names(tree) - set(names):
            value: Any = params.get(name)
            if not _f.is_number(value):
                return None
            values[name] = float(value) if not isinstance(value, int) else int(value)
        return _f.substitute(tree, values) if values else tree


@attrs.frozen(kw_only=True)
class OpCost:
    """What one application costs: ``flops`` of arithmetic, ``bytes`` of memory traffic, and
    ``packs``: elements of a constant operand a BLAS call re-packs on every call (so every row
    piece of a split pays them again)."""

    flops: float = 0.0
    bytes: float = 0.0
    packs: int = 0

    @classmethod
    def passes(cls, out_type, passes: float, flops_per_element: float = 0.0) -> "OpCost":
        """A memory-bound op that touches each element of ``out_type`` ``passes`` times."""
        n = math.prod(int(d) for d in out_type.shape)
        return cls(flops=flops_per_element * n, bytes=passes * n * out_type.dtype.itemsize)


#: `OpTraits.view` kinds: ``reshape`` keeps the elements in order (reshape, flatten, squeeze);
#: ``permute`` reorders axes (`OpTraits.permutation` says how); ``expand`` broadcasts;
#: ``slice`` takes windows of the input, an offset and strides each (basic indexing, the pieces
#: of a split).
VIEW_KINDS = ("reshape", "permute", "expand", "slice")
#: `OpTraits.epilogue` kinds, by the number of float parameters they take: activations a GEMM or
#: a convolution may apply to its results in registers instead of a pass of their own.
#: ``gelu`` is the erf form, ``gelu_tanh`` PyTorch's tanh approximation; ``clip`` takes
#: ``(lo, hi)`` (-inf / inf for a missing bound), ``hardsigmoid`` ``(alpha, beta)`` of
#: ``clip(alpha * x + beta, 0, 1)``, ``swish`` ``(beta,)`` of ``x * sigmoid(beta * x)``.
EPILOGUE_KINDS = {"relu": 0, "sigmoid": 0, "tanh": 0, "gelu": 0, "gelu_tanh": 0,
                  "hardswish": 0, "clip": 2, "hardsigmoid": 2, "swish": 1}
#: `OpTraits.batch` kinds: ``rows`` — rows of input 0 along axis 0 are independent and every
#: other input is read whole; ``broadcast`` — each input with the output's rank and axis-0
#: length is cut by rows, the others (lower rank, axis 0 of size 1) are read whole.
BATCH_KINDS = ("rows", "broadcast")


def _in(kinds):
    def check(inst, attribute, value):
        if value is not None and not callable(value) and value not in kinds:
            raise TypeError(f"{attribute.name} must be one of {kinds}, a callable or None, got "
                            f"{value!r}")
    return check


@attrs.frozen(kw_only=True)
class OpTraits:
    """What passes and backends may assume about an op, declared on its record so that they ask
    the registry instead of keeping lists of op names (PyTorch's op tags, tinygrad's op groups).

    * ``pointwise``: a `Pointwise` formula; the elementwise-chain fusion, the fused kernels and
      the threaded backend's row splits use it.
    * ``view``: one of `VIEW_KINDS` when the result is the input's data seen differently (zero
      cost; a reshape or expand to the input's own type is a no-op).
    * ``permutation``: for ``view="permute"``, ``f(params, rank) -> axes | None``.
    * ``noop_when_same_type``: the output equals input 0 whenever both have one type (``cast``),
      or ``f(params) -> bool`` (``dropout`` when not training).
    * ``batch``: one of `BATCH_KINDS`, or ``f(params, input_types) -> kind | None``: how the
      threaded backend may split an application along axis 0. Pointwise ops default to
      ``broadcast``.
    * ``cost``: ``f(input_types, output_types, params) -> OpCost`` on concrete types.
    * ``epilogue``: for a one-input pointwise activation, the `EPILOGUE_KINDS` entry it
      computes, or ``f(params) -> kind | (kind, *floats) | None`` when that depends on its
      params (``clip``'s bounds, ``gelu``'s ``approximate``); a backend may then apply it to a
      GEMM's or convolution's results in registers (`epilogue_of`).
    """

    pointwise: Pointwise | None = None
    view: str | None = attrs.field(default=None, validator=_in(VIEW_KINDS))
    permutation: Callable | None = attrs.field(default=None, validator=_optional_callable)
    noop_when_same_type: bool | Callable = False
    batch: str | Callable | None = attrs.field(default=None, validator=_in(BATCH_KINDS))
    cost: Callable | None = attrs.field(default=None, validator=_optional_callable)
    epilogue: str | Callable | None = attrs.field(default=None,
                                              validator=_in(tuple(EPILOGUE_KINDS)))

    def epilogue_of(self, params: Mapping[str, Any]) -> tuple | None:
        """``(kind, p0, p1)`` of this application as an epilogue (`EPILOGUE_KINDS`, unused
        parameters 0.0), or None: no epilogue trait, or none for these ``params`` (the op's
        params with their defaults)."""
        ep = self.epilogue
        if callable(ep):
            try:
                ep = ep(dict(params))
            except (KeyError, TypeError, ValueError):
                return None
        kind, *values = (ep,) if isinstance(ep, str) or ep is None else tuple(ep)
        if kind not in EPILOGUE_KINDS or len(values) != EPILOGUE_KINDS[kind]:
            return None
        try:
            floats = [float(v) for v in values]
        except (TypeError, ValueError):  # a symbolic or missing parameter
            return None
        return (kind, *floats, *(0.0,) * (2 - len(floats)))

    def batch_kind(self, params: Mapping[str, Any], input_types) -> str | None:
        """How this application splits along axis 0 (a `BATCH_KINDS` entry), or None."""
        kind = self.batch
        if kind is None and self.pointwise is not None:
            return "broadcast"
        if callable(kind):
            kind = kind(params, input_types)
        return kind if kind in BATCH_KINDS else None

    def is_noop_when_same_type(self, params: Mapping[str, Any]) -> bool:
        if self.view in ("reshape", "expand"):
            return True
        v = self.noop_when_same_type
        return bool(v(params) if callable(v) else v)


NO_TRAITS = OpTraits()


def _str_tuple(value) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    return tuple(value)


#: How a torch name is spelled in `OpDef.torch`: ``torch.<...>`` (``torch.cumsum``,
#: ``torch.nn.LSTM``), ``F.<name>`` (``torch.nn.functional``) or ``Tensor.<name>`` (a method).
TORCH_NAME = re.compile(r"(torch|F|Tensor)(\.[A-Za-z_][A-Za-z0-9_]*)+")


def _torch_names(value):
    return None if value is None else _str_tuple(value)


def _check_torch(inst, attribute, value):
    for name in value or ():
        if not isinstance(name, str) or not TORCH_NAME.fullmatch(name):
            raise TypeError(f"op {inst.name!r}: torch name {name!r} must be spelled "
                            f"'torch.<name>', 'F.<name>' or 'Tensor.<name>'")


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
      A variadic input may only come last there, and then takes the remaining positional
      arguments: ``("equation", "operands")`` is ``einsum(equation, *operands)``.
    * ``traits`` (`OpTraits`) are the facts passes and backends may rely on: pointwise with a
      scalar formula, a view, batch-major, a cost function.
    * ``decomposition`` (optional) builds the op from other ops, PyTorch's
      ``register_decomposition``: ``f(ops, *inputs, **params)`` called like ``kernel`` with
      ``ops`` a namespace called like ``om.ops`` (see `onemodel.core.decompose`). ONNX export
      uses it when the op has no ``onnx.export`` (or its export calls ``ctx.decompose``), and
      `onemodel.passes.decompose` expands nodes with it for a backend without a kernel.
    * ``torch`` names PyTorch's counterpart(s), curated (a matching name can mislead: our
      ``take`` is numpy's, not ``torch.take``): ``"torch.cumsum"``, ``"F.conv1d"``,
      ``"Tensor.masked_fill"``; None says torch has no such op; ``()`` (the default) says nothing.
      The op table and the PyTorch guide show it.
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
    override: bool = False  # replace a record of the same name from another plugin (see registry)
    signature: tuple[str, ...] = attrs.field(default=(), converter=_str_tuple)
    traits: OpTraits = attrs.field(default=NO_TRAITS,
                                   validator=attrs.validators.instance_of(OpTraits))
    decomposition: Callable | None = attrs.field(default=None, validator=_optional_callable)
    torch: tuple[str, ...] | None = attrs.field(default=(), converter=_torch_names,
                                                validator=_check_torch)

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
            if sorted(self.signature) != sorted(names) or (
                    star and self.signature[-1] != star[0].rstrip("*")):
                raise TypeError(f"op {self.name!r}: signature {self.signature} must name every "
                                f"input and param once ({', '.join(names)}), a variadic input "
                                f"last")
        pw = self.traits.pointwise
        if pw is not None:
            if star:
                raise TypeError(f"op {self.name!r}: a variadic op cannot be pointwise")
            if isinstance(pw.formula, str):
                names = tuple(i.rstrip("?*") for i in self.inputs) + tuple(self.params)
                try:
                    _formula.parse(pw.formula, names)
                except _formula.FormulaError as exc:
                    raise TypeError(f"op {self.name!r}: {exc}") from None
            elif not callable(pw.formula):
                raise TypeError(f"op {self.name!r}: Pointwise.formula must be a str or callable")


@attrs.frozen(kw_only=True)
class KernelDef:
    """A backend-specific kernel for an op defined anywhere: same signature as ``OpDef.kernel``.

    ``make(node_params, input_types)`` may return a specialised callable instead (pre-packing).

    ``lower(ctx, node, params)`` is a native lowering, for a backend that compiles to its own
    instructions (the ``compiled`` backend: docs/guide/backends.md, "A native lowering"): it
    emits the node's instructions through the backend's lowering context ``ctx`` and binds its
    outputs, or refuses (the backend's ``Unsupported`` with a reason), and the node then runs
    its numpy kernel. A record may carry only ``lower``.
    """

    op: str
    backend: str
    kernel: Callable | None = attrs.field(default=None, validator=_optional_callable)
    make: Callable | None = attrs.field(default=None, validator=_optional_callable)
    lower: Callable | None = attrs.field(default=None, validator=_optional_callable)
    doc: str = ""
    provider: str | None = None
    override: bool = False


def _not_reserved(name) -> None:
    if name == "auto":
        raise ValueError("the backend name 'auto' is reserved: it asks for the fastest "
                         "installed backend")


@attrs.frozen(kw_only=True)
class BackendDef:
    """An execution backend: ``create(**options)`` returns an object with ``compile(graph)``.

    ``auto_rank``: where ``backend="auto"`` (the default) tries it, highest first; None (the
    default for a third party's backend) means it runs only when named. ``supports(graph)``
    returns None when the backend can run the graph, else a sentence saying why not; auto then
    passes it over (None: it runs every graph). ``platform()`` says what the backend runs on
    in this process, as a mapping with ``"isa"`` (the instruction set its kernels dispatched
    to, e.g. ``"avx2"``) and optionally ``"peak_gflops"`` (one core's float32 peak on that
    ISA); `onemodel info`, `onemodel bench` and the benchmark headers show it."""

    name: str = attrs.field(validator=lambda _s, _a, v: _not_reserved(v))
    create: Callable = attrs.field(validator=_is_callable)
    doc: str = ""
    auto_rank: int | None = None
    supports: Callable | None = attrs.field(default=None, validator=_optional_callable)
    platform: Callable | None = attrs.field(default=None, validator=_optional_callable)
    provider: str | None = None
    override: bool = False


@attrs.frozen(kw_only=True)
class PassDef:
    """A graph pass: ``run(graph) -> graph``; runs at ``level`` ("basic" or "all") and above.
    ``on_load=True``: ONNX import runs it too (a recogniser of a pattern exporters decompose)."""

    name: str
    level: str = attrs.field(validator=attrs.validators.in_(("basic", "all")))
    run: Callable = attrs.field(validator=_is_callable)
    order: int = 100
    doc: str = ""
    provider: str | None = None
    on_load: bool = False  # also run by ONNX import: it recognises a pattern exporters decompose
    override: bool = False


@attrs.frozen(kw_only=True)
class ModuleDef:
    """An ``om.nn`` layer class contributed by a plugin (``om.nn.<name>``)."""

    name: str
    cls: type
    doc: str = ""
    provider: str | None = None
    override: bool = False


RECORD_TYPES = {
    "onemodel_ops": OpDef,
    "onemodel_kernels": KernelDef,
    "onemodel_backends": BackendDef,
    "onemodel_passes": PassDef,
    "onemodel_modules": ModuleDef,
}

__all__ = ["REQUIRED", "Param", "Sample", "VjpContext", "OnnxSpec", "Pointwise", "OpCost",
           "OpTraits", "NO_TRAITS", "TORCH_NAME", "VIEW_KINDS", "EPILOGUE_KINDS", "BATCH_KINDS",
           "OpDef", "KernelDef", "BackendDef", "PassDef", "ModuleDef", "RECORD_TYPES"]
