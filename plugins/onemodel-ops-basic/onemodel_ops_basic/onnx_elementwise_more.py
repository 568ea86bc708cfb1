"""ONNX mappings of elementwise_math, division and logical (``ONNX = {op_name: OnnxSpec}``, merged
into onnx_mapping's table by plugin.py).

ONNX ops are used where they exist (Sin, Cos, Tan, Atan, Asin, Acos, Floor, Ceil, Round — half
to even, as torch —, Sign, Mod, And, Or, Not); the others are compositions: log1p = Log(1 + x),
expm1 = Exp(x) - 1, atan2 from Atan and the quadrant, float ``remainder`` from Mod(fmod=1)
(ONNX's fmod=0 takes ints only), ``floor_divide`` by Python's float algorithm, isclose from its
inequality. Composite lowerings lose what their ONNX pieces lose (Log(1 + x) for tiny x; signed
zeros in atan2).
"""
from __future__ import annotations

import math

from onemodel.core import DType
from onemodel.core.dtype import promote_types
from onemodel.formats.onnx_lowering import export_chain, import_unary, scalar_const
from onemodel.registry import OnnxSpec


def _unary_in(ctx, node):
    """The input cast to the output dtype, the output dtype and a constant maker."""
    (x,) = ctx.inputs(node)
    dt = ctx.output_types(node)[0].dtype
    return ctx.cast(x, ctx.input_types(node)[0].dtype, dt), dt, lambda v: scalar_const(ctx, v, dt)


def _binary_in(ctx, node, dtype=None):
    """Both inputs cast to ``dtype`` (default the output's)."""
    dt = dtype or ctx.output_types(node)[0].dtype
    return [ctx.cast(i, t.dtype, dt) for i, t in zip(ctx.inputs(node), ctx.input_types(node))], dt


def _promoted(ctx, node):
    return promote_types(*(t.dtype for t in ctx.input_types(node)))


# -- unary math -----------------------------------------------------------------------------------
def _export_log1p(ctx, node):
    x, _dt, c = _unary_in(ctx, node)
    ctx.make_node("Log", [ctx.make_node("Add", [x, c(1.0)], name="log1p")], ctx.outputs(node))


def _export_expm1(ctx, node):
    x, _dt, c = _unary_in(ctx, node)
    ctx.make_node("Sub", [ctx.make_node("Exp", [x], name="expm1"), c(1.0)], ctx.outputs(node))


def _export_atan2(ctx, node):
    """atan(a / b), plus or minus pi where b < 0, +-pi/2 (or 0) where b == 0."""
    (a, b), dt = _binary_in(ctx, node)

    def c(v):
        return scalar_const(ctx, v, dt)

    def mk(op, *ins):
        return ctx.make_node(op, list(ins), name="atan2")

    zero = c(0.0)
    base = mk("Atan", mk("Div", a, b))
    a_nonneg = mk("GreaterOrEqual", a, zero)
    left = mk("Where", a_nonneg, mk("Add", base, c(math.pi)), mk("Sub", base, c(math.pi)))
    on_axis = mk("Where", mk("Greater", a, zero), c(math.pi / 2),
                 mk("Where", mk("Less", a, zero), c(-math.pi / 2), zero))
    rest = mk("Where", mk("Less", b, zero), left, on_axis)
    ctx.make_node("Where", [mk("Greater", b, zero), base, rest], ctx.outputs(node))


def _export_rounding(onnx_type):
    def export(ctx, node):
        x, dt, c = _unary_in(ctx, node)
        if not dt.is_float:  # an int tensor is its own floor / ceil / round
            ctx.make_node("Identity", [x], ctx.outputs(node))
            return
        d = int(node.params.get("decimals", 0) or 0)
        if d == 0:
            ctx.make_node(onnx_type, [x], ctx.outputs(node))
        elif d > 0:
            scale = c(10.0 ** d)
            r = ctx.make_node(onnx_type, [ctx.make_node("Mul", [x, scale], name="round")])
            ctx.make_node("Div", [r, scale], ctx.outputs(node))
        else:
            scale = c(10.0 ** -d)
            r = ctx.make_node(onnx_type, [ctx.make_node("Div", [x, scale], name="round")])
            ctx.make_node("Mul", [r, scale], ctx.outputs(node))
    return export


def _export_sign(ctx, node):
    x, dt, c = _unary_in(ctx, node)
    if dt == DType.BOOL:
        ctx.make_node("Identity", [x], ctx.outputs(node))
        return
    if not dt.is_float:
        ctx.make_node("Sign", [x], ctx.outputs(node))
        return
    # (x > 0) - (x < 0): 0 at NaN, as torch.sign (ONNX Sign leaves NaN to the runtime)
    pos = ctx.make_node("Cast", [ctx.make_node("Greater", [x, c(0.0)], name="sign")],
                        name="sign", to=ctx.onnx_dtype(dt))
    neg = ctx.make_node("Cast", [ctx.make_node("Less", [x, c(0.0)], name="sign")],
                        name="sign", to=ctx.onnx_dtype(dt))
    ctx.make_node("Sub", [pos, neg], ctx.outputs(node))


# -- remainder / fmod / floor_divide --------------------------------------------------------------
def _fix_sign(ctx, a_mod, b, c):
    """Where a C remainder is nonzero and its sign differs from b's: True."""
    nonzero = ctx.make_node("Not", [ctx.make_node("Equal", [a_mod, c(0.0)], name="mod")],
                            name="mod")
    differ = ctx.make_node("Xor", [ctx.make_node("Less", [a_mod, c(0.0)], name="mod"),
                                   ctx.make_node("Less", [b, c(0.0)], name="mod")], name="mod")
    return ctx.make_node("And", [nonzero, differ], name="mod")


def _export_remainder(ctx, node):
    (a, b), dt = _binary_in(ctx, node)
    if not dt.is_float:
        ctx.make_node("Mod", [a, b], ctx.outputs(node), fmod=0)
        return

    def c(v):
        return scalar_const(ctx, v, dt)

    r = ctx.make_node("Mod", [a, b], name="mod", fmod=1)
    ctx.make_node("Where", [_fix_sign(ctx, r, b, c), ctx.make_node("Add", [r, b], name="mod"),
                            r], ctx.outputs(node))


def _export_fmod(ctx, node):
    (a, b), _dt = _binary_in(ctx, node)
    ctx.make_node("Mod", [a, b], ctx.outputs(node), fmod=1)


def _export_floor_divide(ctx, node):
    (a, b), dt = _binary_in(ctx, node)
    if not dt.is_float:  # a - a % b is a multiple of b: Div's truncation is exact there
        m = ctx.make_node("Mod", [a, b], name="floordiv", fmod=0)
        ctx.make_node("Div", [ctx.make_node("Sub", [a, m], name="floordiv"), b],
                      ctx.outputs(node))
        return

    def c(v):
        return scalar_const(ctx, v, dt)

    def mk(op, *ins, **kw):
        return ctx.make_node(op, list(ins), name="floordiv", **kw)

    # Python's float floor division (float_floor_div), which numpy and torch follow
    m = mk("Mod", a, b, fmod=1)
    div = mk("Div", mk("Sub", a, m), b)
    div = mk("Where", _fix_sign(ctx, m, b, c), mk("Sub", div, c(1.0)), div)
    fl = mk("Floor", div)
    fl = mk("Where", mk("Greater", mk("Sub", div, fl), c(0.5)), mk("Add", fl, c(1.0)), fl)
    # b == 0: a / b (+-inf, or NaN for 0 / 0)
    ctx.make_node("Where", [mk("Equal", b, c(0.0)), mk("Div", a, b), fl], ctx.outputs(node))


def _import_mod(ctx, node):
    op = "fmod" if node.attr("fmod", 0) else "remainder"
    return [ctx.emit(op, [node.inputs[0], node.inputs[1]])]


# -- logical and isclose --------------------------------------------------------------------------
def _export_logical(onnx_type):
    def export(ctx, node):
        ins = [ctx.cast(i, t.dtype, DType.BOOL)
               for i, t in zip(ctx.inputs(node), ctx.input_types(node))]
        ctx.make_node(onnx_type, ins, ctx.outputs(node))
    return export


def _import_logical(op):
    def rule(ctx, node):
        return [ctx.emit(op, [i for i in node.inputs if i])]
    return rule


def _export_isclose(ctx, node):
    p = node.params
    promoted = _promoted(ctx, node)
    (a, b), _ = _binary_in(ctx, node, promoted)
    close = ctx.make_node("Equal", [a, b], name="isclose")
    ft = promoted if promoted.is_float else DType.F32
    fa, fb = ctx.cast(a, promoted, ft), ctx.cast(b, promoted, ft)
    if promoted.is_float and p.get("equal_nan"):
        both = ctx.make_node("And", [ctx.make_node("IsNaN", [fa], name="isclose"),
                                     ctx.make_node("IsNaN", [fb], name="isclose")],
                             name="isclose")
        close = ctx.make_node("Or", [close, both], name="isclose")
    if p.get("rtol", 1e-5) or p.get("atol", 1e-8):
        err = ctx.make_node("Abs", [ctx.make_node("Sub", [fa, fb], name="isclose")],
                            name="isclose")
        allowed = ctx.make_node("Add", [scalar_const(ctx, p.get("atol", 1e-8), ft),
                                        ctx.make_node("Mul", [
                                            scalar_const(ctx, p.get("rtol", 1e-5), ft),
                                            ctx.make_node("Abs", [fb], name="isclose")],
                                            name="isclose")], name="isclose")
        within = ctx.make_node("LessOrEqual", [err, allowed], name="isclose")  # False at NaN
        finite = ctx.make_node("Not", [ctx.make_node("IsInf", [err], name="isclose")],
                               name="isclose")
        close = ctx.make_node("Or", [close, ctx.make_node("And", [within, finite],
                                                          name="isclose")], name="isclose")
    ctx.make_node("Identity", [close], ctx.outputs(node))


ONNX = {
    "sin": OnnxSpec(export=export_chain(("Sin", {})), imports={"Sin": import_unary("sin")}),
    "cos": OnnxSpec(export=export_chain(("Cos", {})), imports={"Cos": import_unary("cos")}),
    "tan": OnnxSpec(export=export_chain(("Tan", {})), imports={"Tan": import_unary("tan")}),
    "atan": OnnxSpec(export=export_chain(("Atan", {})), imports={"Atan": import_unary("atan")}),
    "asin": OnnxSpec(export=export_chain(("Asin", {})), imports={"Asin": import_unary("asin")}),
    "acos": OnnxSpec(export=export_chain(("Acos", {})), imports={"Acos": import_unary("acos")}),
    "log1p": OnnxSpec(export=_export_log1p, doc="Log(x + 1)"),
    "expm1": OnnxSpec(export=_export_expm1, doc="Exp(x) - 1"),
    "rsqrt": OnnxSpec(export=export_chain(("Sqrt", {}), ("Reciprocal", {})),
                      doc="Reciprocal(Sqrt(x))"),
    "atan2": OnnxSpec(export=_export_atan2, doc="Atan(a / b) and the quadrant (Where)"),
    "floor": OnnxSpec(export=_export_rounding("Floor"),
                      imports={"Floor": import_unary("floor")}),
    "ceil": OnnxSpec(export=_export_rounding("Ceil"), imports={"Ceil": import_unary("ceil")}),
    "round": OnnxSpec(export=_export_rounding("Round"),
                      imports={"Round": import_unary("round")}),
    "sign": OnnxSpec(export=_export_sign, imports={"Sign": import_unary("sign")}),
    "remainder": OnnxSpec(export=_export_remainder, imports={"Mod": _import_mod}),
    "fmod": OnnxSpec(export=_export_fmod, imports={"Mod": _import_mod}),
    "floor_divide": OnnxSpec(export=_export_floor_divide,
                             doc="Python's floor division from Mod, Div and Floor"),
    "logical_and": OnnxSpec(export=_export_logical("And"),
                            imports={"And": _import_logical("logical_and")}),
    "logical_or": OnnxSpec(export=_export_logical("Or"),
                           imports={"Or": _import_logical("logical_or")}),
    "logical_not": OnnxSpec(export=_export_logical("Not"),
                            imports={"Not": _import_logical("logical_not")}),
    "isclose": OnnxSpec(export=_export_isclose, doc="Equal, or |a - b| <= atol + rtol * |b|"),
}
