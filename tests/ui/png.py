"""Decoding a PNG screenshot without Pillow: chunks, zlib, scanline filters → pixel statistics.

Enough for "is this screenshot blank?": the number of distinct colours and the share of pixels
that differ from the most common one (the background).
"""

from __future__ import annotations

import struct
import zlib
from collections import Counter
from dataclasses import dataclass


@dataclass(frozen=True)
class PngStats:
    width: int
    height: int
    colors: int
    foreground: float  # share of pixels unlike the most common colour


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def _unfilter(kind: int, line: bytearray, prior: bytes, bpp: int) -> None:
    if kind == 0:
        return
    n = len(line)
    if kind == 1:
        for i in range(bpp, n):
            line[i] = (line[i] + line[i - bpp]) & 0xFF
    elif kind == 2:
        for i in range(n):
            line[i] = (line[i] + prior[i]) & 0xFF
    elif kind == 3:
        for i in range(n):
            left = line[i - bpp] if i >= bpp else 0
            line[i] = (line[i] + ((left + prior[i]) >> 1)) & 0xFF
    elif kind == 4:
        for i in range(n):
            left = line[i - bpp] if i >= bpp else 0
            upleft = prior[i - bpp] if i >= bpp else 0
            line[i] = (line[i] + _paeth(left, prior[i], upleft)) & 0xFF
    else:
        raise ValueError(f"unknown PNG filter {kind}")


def png_stats(data: bytes, *, step: int = 4) -> PngStats:
    """Statistics of an 8-bit RGB/RGBA PNG, sampling every `step`-th pixel of every row decoded."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat = 8, bytearray()
    width = height = bpp = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            if depth != 8 or color not in (2, 6):
                raise ValueError(f"unsupported PNG (depth {depth}, colour type {color})")
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(bytes(idat))
    stride = width * bpp
    prior = bytes(stride)
    counts: Counter[bytes] = Counter()
    for row in range(height):
        start = row * (stride + 1)
        line = bytearray(raw[start + 1 : start + 1 + stride])
        _unfilter(raw[start], line, prior, bpp)
        prior = bytes(line)
        if row % step == 0:
            for x in range(0, stride, bpp * step):
                counts[bytes(line[x : x + 3])] += 1
    total = sum(counts.values())
    top = counts.most_common(1)[0][1] if counts else 0
    return PngStats(width, height, len(counts), (total - top) / total if total else 0.0)
