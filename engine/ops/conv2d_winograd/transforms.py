"""Winograd's F(m x m, 3x3) transform matrices (Lavin and Gray, 2015), and the straight-line CUDA that
applies one: `out = L · x · Rᵀ` for a row-major x, rows first, zeros left out, ±1 without a multiply,
and a row whose coefficients share one magnitude as a multiple of a plain sum."""
from __future__ import annotations

from fractions import Fraction as F
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from .tiling import WinogradTiles

# m -> (Bᵀ, G, Aᵀ): V = Bᵀ d Bᵀᵀ of an (m+2)² patch, U = G g Gᵀ of a 3x3 filter, Y = Aᵀ M Aᵀᵀ of the product.
MATRICES = {
    2: ([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]],
        [[1, 0, 0], [F(1, 2), F(1, 2), F(1, 2)], [F(1, 2), F(-1, 2), F(1, 2)], [0, 0, 1]],
        [[1, 1, 1, 0], [0, 1, -1, -1]]),
    4: ([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0], [0, -2, -1, 2, 1, 0],
         [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]],
        [[F(1, 4), 0, 0], [F(-1, 6), F(-1, 6), F(-1, 6)], [F(-1, 6), F(1, 6), F(-1, 6)],
         [F(1, 24), F(1, 12), F(1, 6)], [F(1, 24), F(-1, 12), F(1, 6)], [0, 0, 1]],
        [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]]),
}


def _literal(value: F) -> str:
    return f"{float(value)!r}f"


def _combination(terms: list[tuple[F, str]]) -> str:
    """Σ coefficient · variable as CUDA: zeros dropped, ±1 without a multiply, a common magnitude factored out;
    terms of several magnitudes summed by magnitude first, so each group costs one fused multiply-add
    (4·x1 - 4·x2 - x3 + x4 is x4 - x3 + 4·(x1 - x2): 3 operations, not 4)."""
    terms = [(F(c), v) for c, v in terms if c != 0]
    if not terms:
        return "0.0f"
    groups: dict[F, list[tuple[F, str]]] = {}
    for c, v in terms:
        groups.setdefault(abs(c), []).append((c, v))
    if len(groups) == 1:
        [(scale, members)] = groups.items()
        text = _signed_sum([(c / scale, v) for c, v in members])
        return text if scale == 1 else f"{_literal(scale)} * {text if len(members) == 1 else f'({text})'}"
    pieces = []
    for scale in sorted(groups, key=lambda m: (m != 1, m)):  # the unit group first: the others fuse into it
        members = groups[scale]
        if scale == 1:
            pieces.append(_signed_sum(sorted(members, key=lambda m: m[0] < 0)))
            continue
        sign = -1 if all(c < 0 for c, _ in members) else 1
        text = _signed_sum([(c / scale * sign, v) for c, v in sorted(members, key=lambda m: m[0] * sign < 0)])
        product = f"{_literal(scale)} * {text if len(members) == 1 else f'({text})'}"
        pieces.append(f"-{product}" if sign < 0 else product)
    return " + ".join(pieces).replace("+ -", "- ")


def _signed_sum(terms: list[tuple[F, str]]) -> str:
    """± variables, each coefficient ±1, in the order given."""
    text = " ".join(f"{'-' if c < 0 else '+'} {v}" for c, v in terms)
    return text[2:] if text.startswith("+ ") else "-" + text[2:]


def function(name: str, left: list[list], right: list[list]) -> str:
    """`__device__ void name(const float x[K·L], float y[R·S])`: y = left (R x K) · x (K x L) · rightᵀ (L x S)."""
    rows, inner, cols, width = len(left), len(left[0]), len(right), len(right[0])
    body = [f"    float t[{rows * width}];"]
    for i in range(rows):
        for l in range(width):
            body.append(f"    t[{i * width + l}] = {_combination([(left[i][k], f'x[{k * width + l}]') for k in range(inner)])};")
    for i in range(rows):
        for j in range(cols):
            body.append(f"    y[{i * cols + j}] = {_combination([(right[j][l], f't[{i * width + l}]') for l in range(width)])};")
    return (f"__device__ __forceinline__ void {name}(const float x[{inner * width}], float y[{rows * cols}]) {{\n"
            + "\n".join(body) + "\n}\n")


def functions(tile: int) -> str:
    """input_transform (patch to V), filter_transform (filter to U) and output_transform (M to the tile)."""
    b_t, g, a_t = MATRICES[tile]
    return (function("input_transform", b_t, b_t) + function("filter_transform", g, g)
            + function("output_transform", a_t, a_t))


def tile_stores(t: WinogradTiles) -> str:
    """Output tile `tile`'s outputs `out` (row-major) of channel `co` to the NCHW output `Y` (`tile` counts the
    tiles of all images, an image's row by row): `to`, where the tile starts (`oy`, `ox` in its image's plane),
    then each output, those past the plane's bottom (`oy + a`) or right edge (`ox + b`) left out."""
    c, m, plane = t.conv, t.tile, t.tiles_h * t.tiles_w
    lines = [f"const int image = tile / {plane}, oy = tile % {plane} / {t.tiles_w} * {m}, ox = tile % {t.tiles_w} * {m};",
             f"float* to = Y + ((size_t)(image * {c.co} + co) * {c.oh} + oy) * {c.ow} + ox;"]
    for a in range(m):
        row = [f"{'' if c.ow % m == 0 or b == 0 else f'if (ox + {b} < {c.ow}) '}to[{a * c.ow + b}] = out[{a * m + b}];"
               for b in range(m)]
        below = "" if c.oh % m == 0 or a == 0 else f"if (oy + {a} < {c.oh}) "
        lines.append(f"{below}{{ {' '.join(row)} }}")
    return "\n            ".join(lines)
