"""Builds the kernel library at install time (pip alone; nothing is compiled at run time).
Portable flags only: the AVX2 and AVX-512 copies of the kernels are enabled per function
(csrc/om_copy.h) and chosen per kernel at import.
-fno-trapping-math lets GCC vectorise the branch-free math (exp, erf, GELU: 3-4x); results are
unchanged (it only drops the assumption that a float comparison may trap). Never -ffast-math."""
from setuptools import Extension, setup

setup(ext_modules=[Extension(
    "onemodel_backend_compiled._native",
    sources=["onemodel_backend_compiled/csrc/native.c"],
    depends=["onemodel_backend_compiled/csrc/om_kernels.h",
             "onemodel_backend_compiled/csrc/om_math.h",
             "onemodel_backend_compiled/csrc/om_conv_gemm.h",
             "onemodel_backend_compiled/csrc/om_conv1x1.h",
             "onemodel_backend_compiled/csrc/om_conv_batch.h",
             "onemodel_backend_compiled/csrc/om_pool3.h",
             "onemodel_backend_compiled/csrc/om_prologue.h",
             "onemodel_backend_compiled/csrc/om_transpose8.h",
             "onemodel_backend_compiled/csrc/om_masks.h",
             "onemodel_backend_compiled/csrc/om_vmath.h",
             "onemodel_backend_compiled/csrc/om_program.h",
             "onemodel_backend_compiled/csrc/om_pool.h",
             "onemodel_backend_compiled/csrc/om_rnn.h",
             "onemodel_backend_compiled/csrc/om_split.h",
             "onemodel_backend_compiled/csrc/om_kind.h",
             "onemodel_backend_compiled/csrc/om_kinds.h",
             "onemodel_backend_compiled/csrc/om_copy.h",
             "onemodel_backend_compiled/csrc/om_exec.h",
             "onemodel_backend_compiled/csrc/om_wide.h",
             "onemodel_backend_compiled/csrc/om_sigrows.h",
             "onemodel_backend_compiled/csrc/om_vm.h",
             "onemodel_backend_compiled/csrc/om_dw.h",
             "onemodel_backend_compiled/csrc/om_vm_scale.h"],
    extra_compile_args=["-O3", "-std=gnu11", "-fno-math-errno", "-fno-trapping-math",
                        "-fno-strict-aliasing",
                        "-Wno-unused-function", "-Wno-psabi"],
)])
