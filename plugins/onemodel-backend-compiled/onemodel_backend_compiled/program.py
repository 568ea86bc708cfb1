"""The instruction format of the native executor (mirrors csrc/om_program.h).

A program is a flat int64 array: each instruction is ``[opcode, length, fields...]``. An address
is ``(buffer << 40) | offset`` in float32 elements, -1 for none; buffer 0 is the weight block,
1 the scratch arena, then the run's feeds and outputs. Floats travel as the bits of a double.
"""
from __future__ import annotations

import struct

import numpy as np

BUF_SHIFT = 40
WEIGHTS, ARENA = 0, 1

I_GEMM, I_VM, I_SOFTMAX, I_LAYERNORM, I_ATTN = 1, 2, 3, 4, 5  # 6 was im2col conv
I_MAXPOOL, I_AVGPOOL, I_COPY, I_BMM, I_CONV_DIRECT, I_CONV1X1 = 7, 8, 9, 10, 11, 12
I_MEAN_ROWS, I_CONCAT, I_FAIL = 13, 14, 99
I_CONV_GEMM = 20  # 20-29: convolution paths
I_GATHER, I_ATTN_MASK = 30, 31  # the text helper's range: 30-39
I_LSTM, I_GRU = 40, 41  # 40-49: recurrent layers (csrc/om_rnn.h, rnn_rules.py)
NAMES = {I_GEMM: "gemm", I_VM: "pointwise", I_SOFTMAX: "softmax", I_LAYERNORM: "layer_norm",
         I_ATTN: "attention", I_MAXPOOL: "max_pool2d",
         I_AVGPOOL: "avg_pool2d", I_COPY: "copy", I_BMM: "matmul",
         I_CONV_DIRECT: "conv2d_direct", I_CONV1X1: "conv2d_1x1_gemm",
         I_MEAN_ROWS: "mean", I_CONCAT: "concat", I_CONV_GEMM: "conv2d_gemm",
         I_GATHER: "gather", I_ATTN_MASK: "attention", I_LSTM: "lstm", I_GRU: "gru",
         I_FAIL: "fail"}

ACTIVATIONS = {None: 0, "none": 0, "relu": 1, "sigmoid": 2, "tanh": 3, "gelu": 4,
               "gelu_tanh": 5}
#: the convolution's epilogue (csrc act_rows) has these too, with parameters p0, p1
CONV_ACTIVATIONS = {**ACTIVATIONS, "clip": 6, "hardswish": 7, "hardsigmoid": 8, "swish": 9}


def addr(buf: int, offset: int) -> int:
    return (buf << BUF_SHIFT) | int(offset)


def fbits(x: float) -> int:
    """A float as the int64 holding its double's bits."""
    return struct.unpack("<q", struct.pack("<d", float(x)))[0]


def instruction(opcode: int, *fields: int) -> list[int]:
    return [opcode, len(fields) + 2, *(int(f) for f in fields)]


def assemble(instructions: list[list[int]]) -> np.ndarray:
    flat = [x for ins in instructions for x in ins]
    return np.asarray(flat, dtype=np.int64)


__all__ = ["addr", "fbits", "instruction", "assemble", "ACTIVATIONS", "CONV_ACTIVATIONS", "NAMES", "WEIGHTS",
           "ARENA"]
