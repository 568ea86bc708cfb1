"""The lowering's choices between kernels, per kernel copy: which convolution path wins depends
on the vector width and the cache sizes the copy was measured on, so the numbers live here,
keyed by the copy's name (`_native.isa()`), not in the ISA-agnostic rules.

The AVX2 and AVX-512 figures were measured (the docstrings say where). A copy with no
measured entry takes its ``base``'s (the next copy down that has one) until someone measures
it; `describe` says which figures a copy runs on, and `onemodel info` prints it."""
from __future__ import annotations

import attrs

from . import _native


@attrs.frozen
class ConvHeuristics:
    """When a convolution runs as an implicit GEMM (conv_gemm, om_conv_gemm.h) or a 1x1 one as
    one GEMM (conv1x1_gemm) instead of on the direct kernel, whose 24-position tiles are mostly
    empty on small output maps.

    AVX2 (2-core AMD EPYC, 1 thread, + ReLU, GEMM / direct time, b1 and b4): 3x3 stride 1 at
    2x2 512->512 0.24 / 0.22, 128->32 0.50 / 0.49; at 3x3 48->192 0.42 / 0.34; at 4x4 256->256
    0.73 / 0.85, 128->64 0.81 / 0.83, 128->32 0.87 / 0.97; at 7x7 32->128 0.97 / 0.90; at 8x8
    128->128 1.04 / 1.01 and at 15x15 / 16x16 1.16-1.45 (the direct kernel). Strided: 3x3 s2 to
    2x2 256->512 0.31 / 0.28, to 8x8 64->128 0.91 / 0.91, 1x1 s2 to 8x8 64->128 0.63 / 0.65, to
    2x2 256->512 0.32 / 0.28; a 3x3 s2 stem to 32x32 1.73 / 1.87. A 1x1 stride-1 convolution has
    no window to gather, so the GEMM only pays off over many input channels: 512->128 at 8x8
    0.74 / 0.78, 1024->512 at 4x4 0.88 / 0.85, 256->32 at 7x7 0.78 / 0.79, but 32->192 at 8x8
    1.29 / 1.38, 160->960 at 2x2 1.09 / 1.08 (conv1x1_gemm), 256->128 at 16x16 0.98 / 0.96.
    conv1x1_gemm (+ ReLU6): 160->960 at 2x2 58 -> 19 us, 96->576 at 4x4 42 -> 27 us; at 8x8
    the two are even (17 vs 22, 19 vs 17 us) and from 16x16 the direct kernel wins.

    Channels first (out = W x, om_conv1x1.h; + batch norm and ReLU prologue + ReLU, each
    instruction alone, medians of alternating runs, load 4-7, before -> after): 1024->128 at
    4x4 b1 122-135 -> 54-81 us, b4 500-544 -> 258-303; 512->128 at 8x8 164-187 -> 121-137;
    256->128 at 16x16 318-370 -> 260-268; 128->128 at 16x16 b4 690-754 -> 598-653; 768->128 at
    2x2 b4 126 -> 78. It loses where a panel is mostly empty or split across rows (2x2 at b1,
    4 of 16 columns: 160->960 31 -> 40-44 us; 15x15, 7x7, 3x3 maps 1.2-1.6x) and with few
    input channels (16->96 at 32x32 1.14x, 64->128 at 16x16 1.07x without the prologue,
    0.90x with it): those keep the paths above. The kxk form (conv_gemm_cols) on 4x4: 128->32
    3x3 b1 24-34 -> 23-31 us, b4 112-126 -> 89-131 (noisy, even at worst); on 8x8 and 16x16
    it is even with the direct kernel (86 vs 91, 331 vs 324 us), on 7x7 (runs of 7) and 2x2
    it loses (1.8x, 1.5x). On a Zen 1 (family 23, b4 unless said, W x / the other path) it
    loses to the direct kernel with few output channels: 144->24 on 16x16 1.26 (b1 1.14),
    192->32 on 8x8 1.17, 240->40 on 16x16 1.07 (b1 1.05), 16->96 on 32x32 1.16, 24->144 on
    16x16 1.10; it wins or ties from 48 on small maps, mostly against the implicit GEMM:
    320->48 on 8x8 0.93, 384->64 0.96, 480->80 0.99, 576->96 on 4x4 0.94, 672->112 0.95,
    96->576 0.92, 32->192 on 8x8 0.99. Hence, in the avx2 record, from 48 output channels.

    AVX-512 (`avx512`, a 2-core AMD EPYC of family 26, Zen 5, 1 thread, + bias and ReLU, each
    session alone, medians of alternating runs, a test run beside them). conv_gemm_cols is an
    8-lane kernel, and the implicit GEMM's 16-lane tiles beat it on every shape measured
    (cols / the implicit GEMM, 3x3 on 4x4: 128->32 1.29 (b1) / 1.34 (b4), 256->256
    1.67 / 1.74, 64->64 b4 1.41, 512->512 b1 1.61), so `cols_max_positions` is 0 there. W x
    runs on the 16-lane packed GEMM in that copy (om_conv1x1.h); against the positions-first
    paths it wins with many input and output channels on 8x8 and larger maps and loses on
    small maps or few channels (W x / the other path, b4 unless said): 128->128 16x16 0.70,
    256->128 16x16 0.76 (b1 0.75), 512->128 8x8 0.79 (b1 0.82), 128->32 8x8 0.97; 32->192 8x8
    0.88, 192->32 8x8 1.16, 144->24 16x16 1.08 (b1 1.30), 16->96 32x32 1.18, 24->144 16x16
    1.16; 1024->128 4x4 1.11 (b1 1.06), 576->96 4x4 1.00, 384->96 4x4 0.97, 96->576 4x4
    0.92; 2x2 maps 1.23-1.44. Hence W x there from 128 input channels, 64 output channels and
    64 positions. With its 8-lane form (before) W x lost everywhere (1.16-1.83).

    Channels in the lanes (conv2d_lanes, om_conv_lanes.h; an AVX-512 Zen 4, family 25, 1
    thread, + bias and ReLU, its time / the positions-in-lanes direct kernel's, alternating
    runs, the same bits): 16->32 3x3 on 14x14 + 2x2 pool b64 1209 / 1356 us (0.89), 1->16 on
    28x28 + pool b64 0.78, 3->32 on 112x112 + pool b1 0.89; SqueezeNet's expand 3x3 at b4
    16->64 55x55 0.98, 32->128 27x27 0.94, 48->192 and 64->256 13x13 0.82 / 0.81; 128->32
    on 14x14 / 28x28 b4 0.88 / 0.92, on 56x56 b1 0.87; ResNet's 64 on 56x56 0.90, 128 on
    28x28 0.90, 256 on 14x14 b4 0.82, 64->128 stride 2 0.81; 1x1 256->128 on 14x14 0.75,
    128->128 on 15x15 0.81. With few taps and no pool it loses or ties: 1->16 on 28x28 1.07,
    3->32 stride 1 and 2 0.98-1.16, 8->32 1.01, 1x1 16->96 on 32x32 1.33, 64->128 on 16x16
    0.99-1.05 (its output's transposes then cost as much as its FMAs). Hence, in the avx512
    record, from 16 output channels with a pool or 128 taps. On small maps it also beats the
    implicit GEMM (lanes / conv2d_gemm, 3x3): 32->128 on 7x7 b4 0.81, 128->32 on 7x7 b4
    0.63, 512->512 and 256->256 on 7x7 b1 0.82 / 0.91, 96->96 on 5x5 b4 0.86, 128->32 on 4x4
    b4 0.68, 256->512 stride 2 to 7x7 b1 0.95; not on 3x3 (64->256 b4 1.35: 6 accumulators
    a tile), hence `lanes_min_width` 4. On AVX2 (Zen 1, the 8-lane tiles of 3 positions)
    it only wins with a fused pool and 128 taps or more: 16->32 on 14x14 + pool b64 0.94-0.96
    (b1 0.95), 64->128 on 14x14 + pool b4 0.95, 128->128 on 8x8 + pool b16 0.96, on 28x28 and
    56x56 1.00-1.01; 3->32 + pool 1.03, 1->16 + pool 1.19; with no pool 0.98-1.08 (3x3
    layers of 144-2304 taps), 0.86-1.03 against the implicit GEMM on 7x7: hence, in the
    avx2 record, `lanes_only_pooled`.

    Depthwise (dw_small / dw_direct, ReLU6, alternating runs in one process, b4 unless said).
    AVX-512: on Zen 5 16x16 at stride 1 1.18 and 8x8 0.63; to 16x16 at stride 2, 96
    channels, 1.04 (b1 1.06); on a Zen 4, strided to 16x16 96, 144 and 32 channels 0.76-0.77
    (b1 0.86-0.89), 5x5 to 14x14 240 channels 0.65 (b1 0.71), 64 channels to 15x15 0.77:
    hence up to 64 positions at stride 1 and 256 strided. AVX2 (a 2-core AMD EPYC of family
    23, Zen 1, 1 thread): at stride 1, 3x3, 384 channels on 4x4 0.33, 192 on 8x8 0.69, 64 on
    15x15 0.79, 144 on 16x16 0.93 (b1 1.01), 72 on 20x20 0.96, 32 on 28x28 1.05, on 32x32
    1.09; 5x5, 480 on 7x7 0.31, 240 on 14x14 0.57, 672 on 14x14 b1 0.60, 120 on 28x28 b1
    0.89; strided, 3x3 to 16x16 96 and 144 channels 0.83-0.84 (b1 0.95), to 28x28 b1 0.96,
    to 56x56 b1 1.15, 5x5 to 14x14 240 channels 0.58: hence 400, 784 (5x5) and 784 strided
    there."""

    #: implicit GEMM for a kxk stride-1 convolution up to this many output positions
    gemm_max_positions: int = 49
    #: ... and for a strided one
    gemm_max_positions_strided: int = 64
    #: a 1x1 stride-1 convolution takes the implicit GEMM from this many input channels ...
    gemm_1x1_min_cin: int = 256
    #: ... on at most this many positions
    gemm_1x1_max_positions: int = 64
    #: other 1x1 convolutions on maps of at most this many positions take the implicit GEMM
    one_gemm_1x1_max_positions: int = 36
    #: a 1x1 stride-1 convolution runs as W x (conv1x1_gemm) from this many input channels ...
    wx_1x1_min_cin: int = 128
    #: ... or this many when it applies a batch norm and ReLU to its input (DenseNet's)
    wx_1x1_min_cin_prologue: int = 64
    #: ... on maps of at least this many positions ...
    wx_1x1_min_positions: int = 0
    #: ... with at least this many output channels ...
    wx_1x1_min_cout: int = 0
    #: ... when its columns (images x positions) are a multiple of this (whole panels)
    wx_1x1_columns: int = 16
    #: a kxk stride-1 convolution runs channels first on maps up to this many positions ...
    cols_max_positions: int = 49
    #: ... whose width is a multiple of this ...
    cols_width_multiple: int = 4
    #: ... with at least this many taps (input channels x kernel positions)
    cols_min_k: int = 64
    #: strided ones too (their runs gathered element by element: not measured to win)
    cols_strided: bool = False

    #: a convolution of one group whose output channels are a multiple of 16 and at least
    #: this many runs with its channels in the lanes (om_conv_lanes.h); 0: never ...
    lanes_min_cout: int = 0
    #: ... when it fuses a 2x2 max pool or has at least this many taps (input channels x
    #: kernel positions: fewer, and writing its output back to planes outweighs the FMAs)
    lanes_min_k: int = 128
    #: ... or, where set, only when it fuses a 2x2 max pool and has those taps too ...
    lanes_only_pooled: bool = False
    #: ... and a kxk one whose output rows are at least this wide takes it before the
    #: implicit GEMM on small maps (narrower rows leave its tiles too few accumulators)
    lanes_min_width: int = 4

    #: a depthwise convolution runs on the small-map kernel (om_kernels.h dw_small: 8
    #: channels in the lanes, its input gathered as [rows][columns][8]) up to this many
    #: output positions at stride 1 ...
    dw_small_max_positions: int = 64
    #: ... this many with 25 taps or more (5x5) ...
    dw_small_max_positions_wide: int = 64
    #: ... and this many at a larger stride; past them on the row kernel (om_dw.h dw_direct)
    dw_small_max_positions_strided: int = 256

    def dw_small_wins(self, kh: int, kw: int, stride, positions: int) -> bool:
        """Whether a depthwise convolution of `positions` outputs takes dw_small (else
        dw_direct where it fits, else the direct kernel's depthwise loop)."""
        if tuple(stride) != (1, 1):
            return positions <= self.dw_small_max_positions_strided
        wide = kh * kw >= 25
        return positions <= (self.dw_small_max_positions_wide if wide
                             else self.dw_small_max_positions)

    def lanes_win(self, groups: int, cin: int, cout: int, kh: int, kw: int, stride,
                  pool: bool) -> bool:
        """Whether a convolution the direct kernel would run takes conv2d_lanes instead
        (om_conv_lanes.h: one group, output channels a multiple of 16, a column stride of 1
        or 2)."""
        taps = cin * kh * kw >= self.lanes_min_k
        return 0 < self.lanes_min_cout <= cout and groups == 1 and cout % 16 == 0 \
            and tuple(stride)[1] <= 2 \
            and ((pool and taps) if self.lanes_only_pooled else (pool or taps))

    def lanes_before_gemm(self, groups: int, cin: int, cout: int, kh: int, kw: int, stride,
                          wo: int) -> bool:
        """Whether a kxk convolution of a small map the implicit GEMM would take runs on
        conv2d_lanes instead (its rows of `lanes_min_width` outputs or more)."""
        return (kh, kw) != (1, 1) and wo >= self.lanes_min_width \
            and self.lanes_win(groups, cin, cout, kh, kw, stride, False)

    def one_gemm_1x1_wins(self, cin: int, positions: int, images: int, prologue: bool,
                          cout: int) -> bool:
        """Whether a 1x1 stride-1 convolution of one group runs channels first as W x
        (conv1x1_gemm, om_conv1x1.h): when its columns (images x positions) fill whole
        16-column panels and it has enough input channels to pay for packing them (and,
        where the copy says so, enough positions and output channels)."""
        least = self.wx_1x1_min_cin_prologue if prologue else self.wx_1x1_min_cin
        return images * positions % self.wx_1x1_columns == 0 and cin >= least \
            and positions >= self.wx_1x1_min_positions and cout >= self.wx_1x1_min_cout

    def gemm_columns_win(self, cin: int, kh: int, kw: int, stride, images: int, ho: int,
                         wo: int) -> bool:
        """Whether a kxk stride-1 convolution of one group runs as the channels-first implicit
        GEMM (om_conv_gemm.h's conv_gemm_cols): its columns (images x positions) whole panels,
        its map at most `cols_max_positions` and its width a multiple of `cols_width_multiple`
        (a panel's rows are copied by runs of one output row: vector copies of 4, 8 or 16)."""
        return (kh, kw) != (1, 1) and (tuple(stride) == (1, 1) or self.cols_strided) \
            and images * ho * wo % self.wx_1x1_columns == 0 \
            and wo % self.cols_width_multiple == 0 \
            and ho * wo <= self.cols_max_positions and cin * kh * kw >= self.cols_min_k

    def gemm_wins(self, cin: int, kh: int, kw: int, stride, ho: int, wo: int) -> bool:
        """Whether a convolution of one group with no fused pool takes the implicit GEMM."""
        positions = ho * wo
        if (kh, kw) == (1, 1) and tuple(stride) == (1, 1):
            return cin >= self.gemm_1x1_min_cin and positions <= self.gemm_1x1_max_positions
        limit = self.gemm_max_positions if tuple(stride) == (1, 1) \
            else self.gemm_max_positions_strided
        return positions <= limit


@attrs.frozen
class Heuristics:
    """Everything the lowering decides from measurements, for one kernel copy."""

    conv: ConvHeuristics = ConvHeuristics()


#: measured entries; the order of `_BASE` says which copy a missing one takes
MEASURED: dict[str, Heuristics] = {
    "avx2": Heuristics(ConvHeuristics(dw_small_max_positions=400, dw_small_max_positions_wide=784,
                                      dw_small_max_positions_strided=784, wx_1x1_min_cout=48,
                                      lanes_min_cout=16, lanes_only_pooled=True)),
    "avx512": Heuristics(ConvHeuristics(cols_max_positions=0, wx_1x1_min_cin=128,
                                        wx_1x1_min_cin_prologue=128, wx_1x1_min_positions=64,
                                        wx_1x1_min_cout=64, lanes_min_cout=16)),
}
#: a copy without a measured entry takes the first measured one in this chain (avx2-w16, the
#: avx512 copy's C built for AVX2, takes avx512's, so its plans test the same paths)
_BASE = {"avx2-w16": "avx512", "generic": "avx2"}


def source(isa: str) -> str:
    """The copy whose measurements `for_isa(isa)` returns."""
    seen = isa
    while seen not in MEASURED:
        if seen not in _BASE:
            return "avx2"
        seen = _BASE[seen]
    return seen


def for_isa(isa: str) -> Heuristics:
    """The heuristics the lowering uses when `isa` is the kernel copy in use."""
    return MEASURED[source(isa)]


def current() -> Heuristics:
    """The heuristics of the kernel copy in use now (plans are cached per copy)."""
    return for_isa(_native.isa())


def describe(isa: str) -> str:
    """One line for `onemodel info`: where this copy's figures come from."""
    src = source(isa)
    return "measured" if src == isa else f"{src}'s (not measured on {isa})"
