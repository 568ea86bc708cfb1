"""The instruction format of the native executor: opcodes and names from the instruction table
(instructions.py, which csrc/om_program.h is generated from).

A program is a flat int64 array: each instruction is ``[opcode, length, fields...]``. An address
is ``(buffer << 40) | offset`` in bytes, -1 for none (`addr` makes every one, from an element
offset and the element's dtype: float32 data, int64 token ids, later int8 or bf16, each at its
own bytes); buffer 0 is the weight block, 1 the scratch arena, then the run's feeds and outputs.
Strides and sizes stay in elements of the operand. Floats travel as the bits of a double.
"""
from __future__ import annotations

import struct

import numpy as np

from . import instructions as T

BUF_SHIFT = T.BUF_SHIFT
WEIGHTS, ARENA = 0, 1

_OP = {ins.key: ins.opcode for ins in T.TABLE}
(I_GEMM, I_VM, I_SOFTMAX, I_LAYERNORM, I_ATTN, I_MAXPOOL, I_AVGPOOL, I_COPY, I_BMM,
 I_CONV_DIRECT, I_CONV1X1, I_MEAN_ROWS, I_CONCAT, I_CONV_GEMM, I_CONV_LANES, I_GATHER,
 I_ATTN_MASK, I_LSTM, I_GRU, I_FAIL) = (_OP[k] for k in (
     "GEMM", "VM", "SOFTMAX", "LAYERNORM", "ATTN", "MAXPOOL", "AVGPOOL", "COPY", "BMM",
     "CONV_DIRECT", "CONV1X1", "MEAN_ROWS", "CONCAT", "CONV_GEMM", "CONV_LANES", "GATHER",
     "ATTN_MASK", "LSTM", "GRU", "FAIL"))
#: what a plan's source prints for each opcode
NAMES = {ins.opcode: ins.name for ins in T.TABLE}

ACTIVATIONS = {None: 0, "none": 0, "relu": 1, "sigmoid": 2, "tanh": 3, "gelu": 4,
               "gelu_tanh": 5}
#: the convolution's epilogue (csrc act_rows) has these too, with parameters p0, p1
CONV_ACTIVATIONS = {**ACTIVATIONS, "clip": 6, "hardswish": 7, "hardsigmoid": 8, "swish": 9}


def itemsize(dtype) -> int:
    """The bytes of one element of ``dtype`` (a numpy dtype or its name)."""
    return np.dtype(dtype).itemsize


def addr(buf: int, offset: int, dtype="float32") -> int:
    """The address of element ``offset`` (of ``dtype``) of buffer ``buf``: the one place an
    address is made."""
    return (buf << BUF_SHIFT) | (int(offset) * itemsize(dtype))


def fbits(x: float) -> int:
    """A float as the int64 holding its double's bits."""
    return struct.unpack("<q", struct.pack("<d", float(x)))[0]


def instruction(opcode: int, *fields: int) -> list[int]:
    return [opcode, len(fields) + 2, *(int(f) for f in fields)]


def assemble(instructions: list[list[int]]) -> np.ndarray:
    flat = [x for ins in instructions for x in ins]
    return np.asarray(flat, dtype=np.int64)


__all__ = ["addr", "itemsize", "fbits", "instruction", "assemble", "ACTIVATIONS",
           "CONV_ACTIVATIONS", "NAMES", "WEIGHTS", "ARENA"]
