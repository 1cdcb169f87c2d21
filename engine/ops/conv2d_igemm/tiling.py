"""An NCHW fp32 convolution as an implicit GEMM on the CUDA cores: engine.ops.gemm's warp-tiled
SGEMM with its B gathered from the input and its C scattered to the output.

Args are `conv2d_nchw.cuda`'s (engine.ops.conv2d): the two templates tune the same layers, and each
one's leaderboard links the other's (same args, `Workload.same_shape`). The GEMM view (CUTLASS's "implicit GEMM"):

    M = CO output channels, N = batch · OH · OW output pixels, K = CI · KH · KW
    C[co, pixel] = Σ_k A[co, k] · B[k, pixel]

A is the OIHW weights as they lie (row-major M x K, so every GEMM rule about A holds unchanged).
B is never formed: the threads' loaders read B[k, pixel] = data[image, ci, oh·sh + ky - pad_top,
ow·sw + kx - pad_left] (k = (ci, ky, kx) in the weights' order), zero where the tap falls in the
padding. C goes to output[image, co, oh, ow]; with batch 1 that is the GEMM's own row-major M x N.
Split K's partials stay row-major in the workspace, and the fix-up scatters their sum.

Only the threads' loaders (no tensor map describes a padded, strided gather in this layout), and
B one float at a time unless the convolution is a plain 1x1 (stride 1, no padding), whose B is the
input's channel planes: then vector_b floats of one image's plane at once.

Gathering costs integer work per element (the divisions that split k into channel and tap, the
address), on the pipe the multiply-adds use. `step_channels` > 0 makes a K step that many whole
input channels (block_k = step_channels · KH · KW, in place of the block_k knob): every step then
starts at a channel's first tap, a thread's load rounds keep their taps and pixels from step to
step, and their offsets and padding tests (and the weights' offsets) are worked out once before the
K loop (`load_invariants`); a step adds only its first channel's plane (and its first k).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ...space import ConfigEntity
from ..conv2d.tiling import ConvParams
from ..gemm.tiling import GemmParams, GemmTiling, gemm_tiling

TEMPLATE_NAME = "conv2d_nchw_implicit_gemm"
LOADERS = ("threads",)
# K steps of whole input channels (a 3x3 conv's 9, 18 or 36 rows of K), at most this many rows a step
STEP_CHANNELS, MAX_STEP_TAPS = (1, 2, 4), 64


@dataclass(frozen=True, kw_only=True)
class ConvGemmParams(GemmParams):
    conv: ConvParams

    # The cuDNN baseline reads a conv task's geometry by these names (engine.gpu.baselines).
    @property
    def padding(self) -> tuple[int, int, int, int]:
        return self.conv.padding

    @property
    def stride(self) -> tuple[int, int]:
        return self.conv.stride


def conv_gemm_params(conv: ConvParams) -> ConvGemmParams:
    return ConvGemmParams(conv.co, conv.n * conv.oh * conv.ow, conv.ci * conv.kh * conv.kw, conv.args, conv=conv)


def plain_pointwise(conv: ConvParams) -> bool:
    """A 1x1 convolution of stride 1 without padding: B's rows are the input's channel planes."""
    return conv.kh == conv.kw == 1 and conv.stride == (1, 1) and not any(conv.padding)


@dataclass(frozen=True, kw_only=True)
class ConvGemmTiling(GemmTiling):
    conv: ConvParams
    # > 0: K steps of this many whole input channels (block_k is step_channels · KH · KW; see load_invariants)
    step_channels: int = 0

    # The data (B) comes first: a conv task's arrays are (data, kernel, output), as cuDNN's baseline reads them.
    operand_parameters = "const float* __restrict__ B, const float* __restrict__ A, float* __restrict__ C"
    operand_names = ("data", "kernel", "output")

    @property
    def pixels(self) -> int:
        return self.conv.oh * self.conv.ow

    @property
    def c_row_length(self) -> int:
        return self.pixels

    @property
    def taps(self) -> int:
        return self.conv.kh * self.conv.kw

    def b_element(self, k: str, col: str) -> tuple[str, str | None, str]:
        """Input element of GEMM row k (ci, ky, kx) and output pixel col; literal sizes, so every
        division is a multiply and shift. With K steps of whole channels, all of it but the step's
        first channel was worked out before the K loop (`load_invariants`), and k and col go unread."""
        if self.step_channels:
            inside = "b_inside[r]" if any(self.conv.padding) else None
            return "", inside, f"B + (b_offset[r] + k0 / {self.taps} * {self.conv.h * self.conv.w})"
        where, inside, (image, channel, row, column) = self._source(k, col)
        if row is None:
            return where, None, f"B + ((size_t){image} * {self.conv.ci} + gk) * {self.pixels} + {column}"
        return where, inside, f"B + ((size_t)({image} * {self.conv.ci} + {channel}) * {self.conv.h} + gh) * {self.conv.w} + gw"

    def a_element(self) -> str:
        if self.step_channels:
            return "A + (a_offset[r] + k0)"
        return super().a_element()

    def load_invariants(self, operand: str) -> tuple[str, str]:
        """K steps of whole channels (block_k = step_channels · KH · KW, so every step starts at a tap (0, 0)):
        a load round's weight offset, and its tap, pixel, padding test and input offset, stay the same from
        step to step but for the step's first channel."""
        if not self.step_channels:
            return "", ""
        # Offsets of rows and pixels past the edges are never read: 0, so no int overflows near 2^31 elements.
        if operand == "A":
            offset = f"(block_row + row) * {self.k} + kk"
            if self.m % self.block_m:
                offset = f"block_row + row < {self.m} ? {offset} : 0"
            return f"int a_offset[{self.a_rounds}];", f"a_offset[r] = {offset};"
        where, inside, (image, channel, _, _) = self._source("kk", "block_col + col")
        c = self.conv
        offset = f"(({image} * {c.ci} + {channel}) * {c.h} + gh) * {c.w} + gw"
        if self.n % self.block_n:
            offset = f"gn < {self.n} ? {offset} : 0"
        statements = [f"b_offset[r] = {offset};"]
        declarations = f"int b_offset[{self.b_rounds}];"
        if inside:
            declarations += f" bool b_inside[{self.b_rounds}];"
            statements.append(f"b_inside[r] = {inside};")
        return declarations, where + _joined(statements)

    def _source(self, k: str, col: str) -> tuple[str, str | None, tuple[str, str, str | None, str]]:
        """Statements that place GEMM row k and pixel col in the input, the padding test (None: none), and
        the image, channel, input row and column (row None: a plain 1x1, whose column is the pixel)."""
        c = self.conv
        (sh, sw), (top, left) = c.stride, c.padding[:2]
        image, pixel = ("0", "gn") if c.n == 1 else ("gi", "gp")
        where = [f"const int gk = {k}, gn = {col};"]
        if c.n > 1:
            where.append(f"const int gi = gn / {self.pixels}, gp = gn % {self.pixels};")
        if plain_pointwise(c):
            return _joined(where), None, (image, "gk", None, pixel)
        taps = self.taps
        channel = "gk" if taps == 1 else "gc"
        if taps > 1:
            where.append(f"const int gc = gk / {taps}, gr = gk % {taps} / {c.kw}, gs = gk % {c.kw};")
        row = _sum(f"{pixel} / {c.ow} * {sh}" if sh > 1 else f"{pixel} / {c.ow}", "gr" if c.kh > 1 else "", -top)
        column = _sum(f"{pixel} % {c.ow} * {sw}" if sw > 1 else f"{pixel} % {c.ow}", "gs" if c.kw > 1 else "", -left)
        where.append(f"const int gh = {row}, gw = {column};")
        # Without padding every tap of a valid pixel lies in the input (the output size's floor).
        inside = f"(unsigned)gh < {c.h}u && (unsigned)gw < {c.w}u" if any(c.padding) else None
        return _joined(where), inside, (image, channel, "gh", "gw")

    def c_address(self, row: str, col: str) -> str | None:
        if self.conv.n == 1:  # output[0] is C, row-major CO x OH·OW
            return None
        p = self.pixels
        return f"C + ((size_t)({col}) / {p} * {self.conv.co} + {row}) * {p} + ({col}) % {p}"

    def why_not_tiled(self) -> str | None:
        reason = super().why_not_tiled()
        if reason:
            return reason
        if self.loader not in LOADERS:
            return f"loader {self.loader}: the implicit-GEMM conv gathers B with the threads' loaders only"
        if self.vector_b > 1 and not plain_pointwise(self.conv):
            return (f"vector_b {self.vector_b}: B is gathered one float at a time but for a 1x1 conv of stride 1 "
                    "without padding")
        if self.vector_b > 1 and self.pixels % self.vector_b:
            return f"vector_b {self.vector_b} does not divide the {self.pixels} pixels of an image's plane"
        if self.block_k % self.vector_a:
            return f"vector_a {self.vector_a} does not divide the K step of {self.block_k}"
        return None

    @property
    def registers(self) -> int:
        """The GEMM's, and the offsets (and padding tests, packed as predicate bits) that K steps of whole
        channels keep. With the GEMM's addresses a load round, of 60 random valid configs (ptxas -v, sm_90a) 9 of
        12 that spilled are refused on 56² 256→64 1×1 at batch 32 (none of the 48 clean), and 6 of 9 on 7² 512→512
        3×3 at batch 32 (5 of the 51 clean, 24 of the 60 with whole-channel steps)."""
        if not self.step_channels:
            return super().registers
        tests = -(-self.b_rounds // 32) if any(self.conv.padding) else 0
        return super().registers + self.a_rounds + self.b_rounds + tests


def _sum(*terms) -> str:
    """An index expression from its terms, zeros left out and a negative constant subtracted."""
    text = " + ".join(str(t) for t in terms if t not in ("", 0))
    return text.replace("+ -", "- ") or "0"


def _joined(statements: list[str]) -> str:
    return "".join(f"\n                {s}" for s in statements)


def step_channel_choices(conv: ConvParams) -> list[int]:
    """K steps of whole channels (0: of block_k) where a channel has several taps and a step stays
    within MAX_STEP_TAPS."""
    taps = conv.kh * conv.kw
    return [0] + [c for c in STEP_CHANNELS if taps > 1 and c * taps <= MAX_STEP_TAPS]


def conv_gemm_tiling(params: ConvGemmParams, config: ConfigEntity) -> ConvGemmTiling:
    channels = config["step_channels"].val
    tiling = gemm_tiling(params, config, ConvGemmTiling, conv=params.conv, step_channels=channels)
    if channels:
        tiling = dataclasses.replace(tiling, block_k=channels * params.conv.kh * params.conv.kw)
    return tiling  # type: ignore[return-value]
