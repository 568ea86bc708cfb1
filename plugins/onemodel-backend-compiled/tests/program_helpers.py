"""Hand-built compiled programs shared by the plugin's tests of the instruction table and of the
byte addresses (test_instructions.py, test_byte_addresses.py)."""
from __future__ import annotations

from onemodel_backend_compiled import instructions as T
from onemodel_backend_compiled import program as P


def gemm_program(**change):
    """A one-instruction program: a valid 4x8x16 GEMM from feed 2 into buffer 3, with the
    fields named in ``change`` replaced."""
    f = dict(a=P.addr(2, 0), lda=8, m=4, k=8, n=16, bp=P.addr(0, 0), bias=-1, bias_mode=0,
             resid=-1, ldr=0, c=P.addr(3, 0), ldc=16, act=0)
    f.update(change)
    ins = T.BY_OPCODE[P.I_GEMM]
    return P.assemble([P.instruction(P.I_GEMM, *[f[x.name] for x in ins.fields])])
