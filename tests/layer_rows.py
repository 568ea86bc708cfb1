"""The table behind tests/test_nn_layers_table.py: one row per layer configuration.

A row names an ``om.nn`` layer (also ``torch.nn``'s name), its constructor arguments, an example
input shape with the axis names to trace (symbolic where the layer allows), and a numpy reference
``ref(module, x)`` built from tests/references (formulas written apart from the kernels) and the
module's parameters. Adding a row tests a layer end to end.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .references import REFERENCES as R


@dataclass
class Row:
    id: str
    name: str
    args: tuple
    ref: Callable
    shape: tuple
    axes: tuple
    kwargs: dict = field(default_factory=dict)
    train: bool = False        # reference and gradients in training mode (batch statistics)
    scale: float = 1.0         # input spread, to reach the activations' tails
    onnx: bool = True
    traceable: bool = True     # False: the trace is refused with a TraceException

    def other_shape(self) -> tuple:
        """Another size for each symbolic axis: the batch 5 -> 3, spatial axes + 2."""
        return tuple((3 if a == "batch" else s + 2) if a else s
                     for s, a in zip(self.shape, self.axes))


def P(m, name):
    v = getattr(m, name)
    return None if v is None else np.asarray(v)


B = "batch"


def _conv1d_same(x, m, mode):
    k, d = m.kernel_size[0], m.dilation[0]
    total = d * (k - 1)
    x = R["pad"](x, (total // 2, total - total // 2), mode=mode)
    return R["conv1d"](x, P(m, "weight"), P(m, "bias"), dilation=d, groups=m.groups)


def _bn(m, x):
    return R["batch_norm"](x, P(m, "running_mean"), P(m, "running_var"), P(m, "weight"),
                           P(m, "bias"), training=m.training or m.running_mean is None,
                           eps=m.eps)


def _inorm(m, x):
    use_input = m.training or not m.track_running_stats
    return R["instance_norm"](x, P(m, "running_mean"), P(m, "running_var"), P(m, "weight"),
                              P(m, "bias"), use_input_stats=use_input, eps=m.eps)


def _act(op, **params):
    return lambda m, x: R[op](x, **params)


ROWS = [
    # -- convolutions -------------------------------------------------------------------------
    Row("conv1d", "Conv1d", (3, 4, 3), lambda m, x: R["conv1d"](x, P(m, "weight"), P(m, "bias")),
        (5, 3, 9), (B, None, "seq")),
    Row("conv1d_strided_grouped", "Conv1d", (4, 6, 3),
        lambda m, x: R["conv1d"](x, P(m, "weight"), P(m, "bias"), stride=2, padding=1,
                                 dilation=2, groups=2),
        (5, 4, 11), (B, None, "seq"), dict(stride=2, padding=1, dilation=2, groups=2)),
    Row("conv1d_same_reflect", "Conv1d", (3, 4, 4), lambda m, x: _conv1d_same(x, m, "reflect"),
        (5, 3, 9), (B, None, "seq"), dict(padding="same", padding_mode="reflect", bias=False)),
    Row("conv1d_same_even_zeros", "Conv1d", (3, 2, 2),
        lambda m, x: _conv1d_same(x, m, "constant"), (5, 3, 9), (B, None, "seq"),
        dict(padding="same")),
    Row("conv1d_replicate", "Conv1d", (2, 3, 3),
        lambda m, x: R["conv1d"](R["pad"](x, (1, 1), mode="replicate"), P(m, "weight"),
                                 P(m, "bias")),
        (5, 2, 8), (B, None, "seq"), dict(padding=1, padding_mode="replicate")),
    Row("conv_transpose1d", "ConvTranspose1d", (4, 2, 3),
        lambda m, x: R["conv_transpose1d"](x, P(m, "weight"), P(m, "bias"), stride=2, padding=1,
                                           output_padding=1),
        (5, 4, 6), (B, None, "seq"), dict(stride=2, padding=1, output_padding=1)),
    Row("conv_transpose2d", "ConvTranspose2d", (4, 4, 3),
        lambda m, x: R["conv_transpose2d"](x, P(m, "weight"), P(m, "bias"), stride=2,
                                           padding=1, output_padding=1, groups=2),
        (5, 4, 3, 6), (B, None, "h", "w"), dict(stride=2, padding=1, output_padding=1,
                                                groups=2)),
    Row("conv_transpose2d_rect_dilated", "ConvTranspose2d", (2, 3, (2, 3)),
        lambda m, x: R["conv_transpose2d"](x, P(m, "weight"), None, dilation=(2, 1)),
        (5, 2, 4, 6), (B, None, "h", "w"), dict(bias=False, dilation=(2, 1))),
    # -- pools ---------------------------------------------------------------------------------
    Row("max_pool1d", "MaxPool1d", (3,),
        lambda m, x: R["max_pool1d"](x, 3, 2, 1), (5, 3, 9), (B, None, "seq"),
        dict(stride=2, padding=1)),
    Row("max_pool1d_dilated_ceil", "MaxPool1d", (2,),
        lambda m, x: R["max_pool1d"](x, 2, 2, 0, 2, True), (5, 3, 10), (B, None, "seq"),
        dict(dilation=2, ceil_mode=True)),
    Row("avg_pool1d_exclude_pad", "AvgPool1d", (3,),
        lambda m, x: R["avg_pool1d"](x, 3, 2, 1, count_include_pad=False), (5, 3, 9),
        (B, None, "seq"), dict(stride=2, padding=1, count_include_pad=False)),
    Row("avg_pool1d", "AvgPool1d", (2,), lambda m, x: R["avg_pool1d"](x, 2), (5, 3, 8),
        (B, None, "seq")),
    # ONNX has no adaptive pool: the export needs fixed spatial sizes (or a global pool)
    Row("adaptive_avg_pool1d", "AdaptiveAvgPool1d", (4,),
        lambda m, x: R["adaptive_avg_pool1d"](x, 4), (5, 3, 10), (B, None, "seq"), onnx=False),
    Row("adaptive_avg_pool1d_fixed_length", "AdaptiveAvgPool1d", (4,),
        lambda m, x: R["adaptive_avg_pool1d"](x, 4), (5, 3, 10), (B, None, None)),
    Row("adaptive_avg_pool2d_global", "AdaptiveAvgPool2d", (1,),
        lambda m, x: R["adaptive_avg_pool2d"](x, 1), (5, 3, 4, 6), (B, None, "h", "w")),
    Row("adaptive_max_pool2d_fixed_size", "AdaptiveMaxPool2d", ((2, 3),),
        lambda m, x: R["adaptive_max_pool2d"](x, (2, 3)), (5, 3, 4, 6), (B, None, None, None)),
    Row("adaptive_avg_pool2d", "AdaptiveAvgPool2d", ((2, None),),
        lambda m, x: R["adaptive_avg_pool2d"](x, (2, None)), (5, 3, 4, 6), (B, None, "h", "w"),
        onnx=False),
    Row("adaptive_max_pool2d", "AdaptiveMaxPool2d", (3,),
        lambda m, x: R["adaptive_max_pool2d"](x, 3), (5, 3, 8, 7), (B, None, "h", "w"),
        onnx=False),
    # -- resizing ------------------------------------------------------------------------------
    Row("upsample_nearest", "Upsample", (),
        lambda m, x: R["interpolate"](x, scale_factor=2.0), (5, 3, 4, 6), (B, None, "h", "w"),
        dict(scale_factor=2)),
    Row("upsample_bilinear_size", "Upsample", (),
        lambda m, x: R["interpolate"](x, size=(6, 9), mode="bilinear", align_corners=True),
        (5, 3, 4, 6), (B, None, None, None), dict(size=(6, 9), mode="bilinear",
                                                   align_corners=True)),
    Row("upsample_linear", "Upsample", (),
        lambda m, x: R["interpolate"](x, scale_factor=3.0, mode="linear"), (5, 3, 4),
        (B, None, "seq"), dict(scale_factor=3, mode="linear")),
    Row("pixel_shuffle", "PixelShuffle", (2,), lambda m, x: R["pixel_shuffle"](x, 2),
        (5, 8, 3, 4), (B, None, "h", "w")),
    Row("pixel_unshuffle", "PixelUnshuffle", (2,), lambda m, x: R["pixel_unshuffle"](x, 2),
        (5, 2, 4, 6), (B, None, None, None)),  # ops.pixel_unshuffle: H, W fixed in a trace
    # -- normalisation -------------------------------------------------------------------------
    Row("batch_norm1d_2d", "BatchNorm1d", (3,), _bn, (5, 3), (B, None)),
    Row("batch_norm1d_3d", "BatchNorm1d", (3,), _bn, (5, 3, 6), (B, None, "seq")),
    Row("batch_norm1d_train", "BatchNorm1d", (3,), _bn, (5, 3, 6), (B, None, "seq"),
        train=True),
    Row("batch_norm1d_nobias", "BatchNorm1d", (3,), _bn, (5, 3, 6), (B, None, "seq"),
        dict(bias=False)),
    Row("group_norm_nobias", "GroupNorm", (2, 4),
        lambda m, x: R["group_norm"](x, P(m, "weight"), None, 2), (5, 4, 6), (B, None, "seq"),
        dict(bias=False)),
    Row("batch_norm1d_nostats", "BatchNorm1d", (3,), _bn, (5, 3), (B, None),
        dict(affine=False, track_running_stats=False), onnx=False, traceable=False),
    Row("group_norm", "GroupNorm", (2, 4),
        lambda m, x: R["group_norm"](x, P(m, "weight"), P(m, "bias"), 2), (5, 4, 6),
        (B, None, "seq")),
    Row("group_norm_noaffine", "GroupNorm", (1, 4),
        lambda m, x: R["group_norm"](x, None, None, 1, 1e-3), (5, 4, 3, 6),
        (B, None, "h", "w"), dict(affine=False, eps=1e-3)),
    Row("instance_norm1d", "InstanceNorm1d", (3,), _inorm, (5, 3, 6), (B, None, "seq")),
    Row("instance_norm1d_running", "InstanceNorm1d", (3,), _inorm, (5, 3, 6), (B, None, "seq"),
        dict(affine=True, track_running_stats=True)),
    Row("instance_norm2d_affine", "InstanceNorm2d", (3,), _inorm, (5, 3, 4, 6),
        (B, None, "h", "w"), dict(affine=True)),
    Row("instance_norm2d_train_stats", "InstanceNorm2d", (3,), _inorm, (5, 3, 4, 6),
        (B, None, "h", "w"), dict(track_running_stats=True), train=True),
    Row("rms_norm", "RMSNorm", (6,),
        lambda m, x: R["rms_norm"](x, P(m, "weight"), (6,)), (5, 3, 6), (B, "seq", None)),
    Row("rms_norm_two_axes", "RMSNorm", ((3, 6),),
        lambda m, x: R["rms_norm"](x, None, (3, 6), 1e-6), (5, 3, 6), (B, None, None),
        dict(eps=1e-6, elementwise_affine=False)),
    # -- activations ---------------------------------------------------------------------------
    Row("leaky_relu", "LeakyReLU", (0.2,), _act("leaky_relu", negative_slope=0.2), (5, 4),
        (B, None), scale=3),
    Row("silu", "SiLU", (), _act("silu"), (5, 4), (B, None), scale=3),
    Row("elu", "ELU", (0.7,), _act("elu", alpha=0.7), (5, 4), (B, None), scale=3),
    Row("selu", "SELU", (), _act("selu"), (5, 4), (B, None), scale=3),
    Row("softplus", "Softplus", (2.0, 5.0), _act("softplus", beta=2.0, threshold=5.0), (5, 4),
        (B, None), scale=3),
    Row("mish", "Mish", (), _act("mish"), (5, 4), (B, None), scale=3),
    Row("hardswish", "Hardswish", (), _act("hardswish"), (5, 4), (B, None), scale=4),
    Row("hardsigmoid", "Hardsigmoid", (), _act("hardsigmoid"), (5, 4), (B, None), scale=4),
    Row("prelu_shared", "PReLU", (), lambda m, x: R["prelu"](x, P(m, "weight")), (5, 4),
        (B, None), scale=3),
    Row("prelu_channels", "PReLU", (3,), lambda m, x: R["prelu"](x, P(m, "weight")),
        (5, 3, 4), (B, None, "seq"), scale=3),
    Row("glu", "GLU", (), _act("glu"), (5, 6), (B, None), scale=2),
    Row("glu_dim1", "GLU", (1,), _act("glu", axis=1), (5, 4, 3), (B, None, "seq"), scale=2),
    Row("relu6", "ReLU6", (), _act("relu6"), (5, 4), (B, None), scale=5),
    Row("hardtanh", "Hardtanh", (-0.5, 2.0), _act("hardtanh", min_val=-0.5, max_val=2.0),
        (5, 4), (B, None), scale=3),
    Row("softsign", "Softsign", (), _act("softsign"), (5, 4), (B, None), scale=3),
    Row("log_sigmoid", "LogSigmoid", (), _act("log_sigmoid"), (5, 4), (B, None), scale=3),
    # -- dropout (eval: the identity), shapes and padding ----------------------------------------
    Row("dropout1d_eval", "Dropout1d", (0.4,), lambda m, x: x, (5, 3, 4), (B, None, "seq")),
    Row("dropout2d_eval", "Dropout2d", (), lambda m, x: x, (5, 3, 4, 6), (B, None, "h", "w")),
    Row("unflatten", "Unflatten", (1, (2, -1)), lambda m, x: x.reshape(x.shape[0], 2, 3, 4),
        (5, 6, 4), (B, None, None)),
    Row("identity", "Identity", (), lambda m, x: x, (5, 4), (B, None)),
    Row("zero_pad2d", "ZeroPad2d", ((1, 0, 2, 1),), lambda m, x: R["pad"](x, (1, 0, 2, 1)),
        (5, 3, 4, 6), (B, None, "h", "w")),
    Row("constant_pad1d", "ConstantPad1d", (2, 1.5),
        lambda m, x: R["pad"](x, (2, 2), value=1.5), (5, 3, 4), (B, None, "seq")),
    Row("constant_pad2d", "ConstantPad2d", ((1, 1, 0, 2), -1.0),
        lambda m, x: R["pad"](x, (1, 1, 0, 2), value=-1.0), (5, 3, 4, 6), (B, None, "h", "w")),
    Row("reflection_pad1d", "ReflectionPad1d", ((2, 1),),
        lambda m, x: R["pad"](x, (2, 1), mode="reflect"), (5, 3, 6), (B, None, "seq")),
    Row("reflection_pad2d", "ReflectionPad2d", (1,),
        lambda m, x: R["pad"](x, (1, 1, 1, 1), mode="reflect"), (5, 3, 4, 6),
        (B, None, "h", "w")),
    Row("replication_pad1d", "ReplicationPad1d", (2,),
        lambda m, x: R["pad"](x, (2, 2), mode="replicate"), (5, 3, 4), (B, None, "seq")),
    Row("replication_pad2d", "ReplicationPad2d", ((0, 1, 2, 0),),
        lambda m, x: R["pad"](x, (0, 1, 2, 0), mode="replicate"), (5, 3, 4, 6),
        (B, None, "h", "w")),
]
