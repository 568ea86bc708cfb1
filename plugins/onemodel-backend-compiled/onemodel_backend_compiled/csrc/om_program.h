/* The instruction format shared with program.py: each instruction is
 * [opcode, length, fields...] of int64; an address is (buffer << OM_BUF_SHIFT) | offset in
 * floats, -1 for none. Buffers: 0 weights, 1 arena, then the feeds and outputs of the run. */
#ifndef OM_PROGRAM_H
#define OM_PROGRAM_H
#define OM_BUF_SHIFT 40
#define OM_OFF_MASK ((((int64_t)1) << OM_BUF_SHIFT) - 1)
enum { I_GEMM = 1, I_VM = 2, I_SOFTMAX = 3, I_LAYERNORM = 4, I_ATTN = 5, /* 6: was im2col conv */
       I_MAXPOOL = 7, I_AVGPOOL = 8, I_COPY = 9, I_BMM = 10, I_CONV_DIRECT = 11,
       I_CONV1X1 = 12, I_MEAN_ROWS = 13, I_CONCAT = 14,
       I_CONV_GEMM = 20, /* 20-29: convolution paths */
       I_GATHER = 30, I_ATTN_MASK = 31,
       I_LSTM = 40, I_GRU = 41, /* 40-49: recurrent layers (om_rnn.h) */
       I_FAIL = 99 };
enum { VM_LOAD = 1, VM_CONST, VM_ADD, VM_SUB, VM_MUL, VM_DIV, VM_MAX, VM_MIN, VM_POW, VM_NEG,
       VM_ABS, VM_EXP, VM_LOG, VM_SQRT, VM_TANH, VM_SIGMOID, VM_RELU, VM_ERF, VM_GELU,
       VM_GELU_TANH, VM_SQUARE, VM_RECIP, VM_SWISH, VM_COPY,
       /* masks (om_masks.h): an int64 load, bools as 0.0 / 1.0, where reads its condition
        * from the destination register */
       VM_LOADI64 = 30, VM_ISNAN, VM_WHERE, VM_EQ, VM_NE, VM_LT, VM_LE,
       /* om_vmath.h: trigonometry, rounding, log1p / expm1, float division's remainders,
        * logical ops on 0.0 / 1.0 */
       VM_SIN = 40, VM_COS, VM_TAN, VM_ASIN, VM_ACOS, VM_ATAN, VM_ATAN2, VM_FLOOR, VM_CEIL,
       VM_RINT, VM_LOG1P, VM_EXPM1, VM_FMOD, VM_REMAINDER, VM_FLOORDIV, VM_AND, VM_OR, VM_NOT,
       VM_ISFINITE };
#define VM_MAXREG 16
#define VM_MAXIN 16
#define VM_MAXCONST 32
#endif
