"""The lowering's kernel choices come from the heuristics of the kernel copy in use
(heuristics.py), not from constants in the rules: a copy's own table changes the plan, a copy
without measurements takes its base's, and `onemodel info` says which."""
from __future__ import annotations

import attrs
import numpy as np

import onemodel as om
from onemodel import Tensor
from onemodel_backend_compiled import _native, heuristics
from onemodel_backend_compiled.platform import platform


def _conv_plan(h: int) -> str:
    rng = np.random.default_rng(3)
    W = rng.standard_normal((16, 8, 3, 3)).astype(np.float32)

    def fn(x):
        return om.ops.relu(om.ops.conv2d(x, Tensor.from_numpy(W), padding=1))

    x = rng.standard_normal((2, 8, h, h)).astype(np.float32)
    traced = om.trace(fn, Tensor.from_numpy(x), "batch", None, None, None)
    return om.Session(traced, backend="compiled").plan_source({"input": x})


def test_copies_without_measurements_take_their_base():
    for isa in ("avx2", "avx512"):
        assert heuristics.source(isa) == isa and heuristics.describe(isa) == "measured"
    for isa, base in (("avx2-w16", "avx512"), ("generic", "avx2"), ("some-future-isa", "avx2")):
        assert heuristics.source(isa) == base
        assert heuristics.for_isa(isa) is heuristics.MEASURED[base]
        assert heuristics.describe(isa) == f"{base}'s (not measured on {isa})"


def test_the_avx512_copy_takes_the_channels_first_forms_less_often():
    """On AVX-512 conv_gemm_cols (8-lane) lost on every shape measured, and W x (16-lane
    there) only wins with many channels on 8x8 and larger maps (heuristics.py): where avx2
    takes them, avx512 keeps to the positions-first paths."""
    wide, avx2 = heuristics.for_isa("avx512").conv, heuristics.for_isa("avx2").conv
    for case in ((1024, 16, 1, False, 128), (192, 64, 4, False, 48), (256, 4, 4, True, 128)):
        assert avx2.one_gemm_1x1_wins(*case) and not wide.one_gemm_1x1_wins(*case), case
    assert wide.one_gemm_1x1_wins(256, 256, 4, True, 128)  # DenseNet's 16x16 bottleneck
    assert wide.one_gemm_1x1_wins(512, 64, 1, False, 128)
    assert avx2.gemm_columns_win(128, 3, 3, (1, 1), 1, 4, 4)
    assert not wide.gemm_columns_win(128, 3, 3, (1, 1), 1, 4, 4)
    assert wide.gemm_wins(128, 3, 3, (1, 1), 4, 4)  # the implicit GEMM, positions first


def test_the_copy_in_use_decides_the_convolution_path(monkeypatch):
    assert "conv2d_gemm" in _conv_plan(4)  # 16 positions: the implicit GEMM (AVX2 figures)
    src = heuristics.source(_native.isa())
    never = attrs.evolve(heuristics.MEASURED[src],
                         conv=heuristics.ConvHeuristics(gemm_max_positions=0,
                                                        cols_max_positions=0))
    monkeypatch.setitem(heuristics.MEASURED, src, never)
    plan = _conv_plan(4)
    assert "conv2d_gemm" not in plan and "conv2d_direct" in plan


def test_gemm_wins_follows_its_fields():
    conv = heuristics.ConvHeuristics(gemm_max_positions=9, gemm_max_positions_strided=4,
                                     gemm_1x1_min_cin=32, gemm_1x1_max_positions=16)
    assert conv.gemm_wins(8, 3, 3, (1, 1), 3, 3) and not conv.gemm_wins(8, 3, 3, (1, 1), 3, 4)
    assert conv.gemm_wins(8, 3, 3, (2, 2), 2, 2) and not conv.gemm_wins(8, 3, 3, (2, 2), 3, 2)
    assert conv.gemm_wins(32, 1, 1, (1, 1), 4, 4) and not conv.gemm_wins(31, 1, 1, (1, 1), 4, 4)
    assert not conv.gemm_wins(32, 1, 1, (1, 1), 4, 5)


def test_dw_small_wins_follows_its_fields_and_each_copy_measured():
    conv = heuristics.ConvHeuristics(dw_small_max_positions=16, dw_small_max_positions_wide=49,
                                     dw_small_max_positions_strided=64)
    assert conv.dw_small_wins(3, 3, (1, 1), 16) and not conv.dw_small_wins(3, 3, (1, 1), 17)
    assert conv.dw_small_wins(5, 5, (1, 1), 49) and not conv.dw_small_wins(5, 5, (1, 1), 50)
    assert conv.dw_small_wins(3, 3, (2, 2), 64) and not conv.dw_small_wins(3, 3, (2, 2), 65)
    # AVX-512 (Zen 4 / Zen 5): dw_direct past 8x8 at stride 1; AVX2 (Zen 1): dw_small to 20x20
    wide, avx2 = heuristics.for_isa("avx512").conv, heuristics.for_isa("avx2").conv
    assert wide.dw_small_wins(3, 3, (1, 1), 64) and not wide.dw_small_wins(3, 3, (1, 1), 256)
    assert avx2.dw_small_wins(3, 3, (1, 1), 256) and not avx2.dw_small_wins(3, 3, (1, 1), 784)
    assert avx2.dw_small_wins(5, 5, (1, 1), 196) and not wide.dw_small_wins(5, 5, (1, 1), 196)
    assert avx2.dw_small_wins(3, 3, (2, 2), 784) and not wide.dw_small_wins(3, 3, (2, 2), 784)


def test_the_avx2_copy_keeps_w_x_from_few_output_channels():
    """On a Zen 1 W x lost to the direct kernel with 24-40 output channels (heuristics.py)."""
    avx2 = heuristics.for_isa("avx2").conv
    assert not avx2.one_gemm_1x1_wins(144, 256, 4, False, 24)  # MobileNetV2's projection
    assert avx2.one_gemm_1x1_wins(320, 64, 4, False, 48)


def test_platform_says_where_the_heuristics_come_from():
    info = platform()
    assert info["heuristics"] == heuristics.describe(info["isa"])
