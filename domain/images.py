"""What an image costs in a request, from its size when its bytes are at hand.

Anthropic bills an image at about width × height / 750 tokens, after scaling it down to the
model's native resolution and padding each side to a multiple of 28 pixels (build-with-claude/
vision on platform.claude.com). Models before Claude Opus 4.7 scale to a long edge of 1,568
pixels (about 1.15 megapixels, 1,600 tokens at most); Opus 4.7 and later read up to 2,576
pixels on the long edge (about 3.75 megapixels, 5,000 tokens). An estimate must not fall short
of what the model bills, so every image is counted at the larger resolution: exact for today's
models, and at most about three times too high for an image over 1.15 megapixels sent to an
older one (the provider's usage then calibrates the estimate down).

An image whose size cannot be read here (by url, by Files API id, bytes in an unexpected
layout) counts as the largest an image can be billed, `MAX_IMAGE_TOKENS`.
"""

from __future__ import annotations

import math
from base64 import b64decode

__all__ = [
    "LONG_EDGE",
    "MAX_IMAGE_TOKENS",
    "MAX_PIXELS",
    "image_size",
    "image_tokens",
    "inline_image_tokens",
]

LONG_EDGE = 2_576
"""The longest side, in pixels, an image is read at (Claude Opus 4.7 and later)."""
MAX_PIXELS = 3_750_000
"""The most pixels an image is read at (about 3.75 megapixels, the same models)."""
PIXELS_PER_TOKEN = 750
PADDING = 28
"""Each side is padded up to a multiple of this many pixels."""
_HEAD_BYTES = 96 * 1024
"""The bytes read first for the size; a JPEG whose metadata runs longer is read whole."""


def image_tokens(width: int, height: int) -> int:
    """The tokens an image of `width` × `height` pixels is billed at, read at the largest
    native resolution (`LONG_EDGE`, `MAX_PIXELS`) and padded to multiples of `PADDING`."""
    width, height = max(1, width), max(1, height)
    scale = min(1.0, LONG_EDGE / max(width, height), math.sqrt(MAX_PIXELS / (width * height)))
    shown_width = _padded(max(1, math.floor(width * scale)))
    shown_height = _padded(max(1, math.floor(height * scale)))
    return math.ceil(shown_width * shown_height / PIXELS_PER_TOKEN)


def _padded(side: int) -> int:
    return -(-side // PADDING) * PADDING


MAX_IMAGE_TOKENS = 5_200
"""The most one image can be billed at (5,000 tokens for 3.75 megapixels, and the padding):
what an image of unknown size counts."""


def inline_image_tokens(data: str, media_type: str) -> int:
    """The tokens of a base64 image (`data`) of `media_type`, from the size its header gives;
    `MAX_IMAGE_TOKENS` when the size cannot be read."""
    size = image_size(_decoded(data, _HEAD_BYTES), media_type)
    if size is None and media_type == "image/jpeg" and len(data) * 3 // 4 > _HEAD_BYTES:
        size = image_size(_decoded(data, None), media_type)
    return MAX_IMAGE_TOKENS if size is None else image_tokens(*size)


def _decoded(data: str, limit: int | None) -> bytes:
    """The first `limit` bytes of base64 `data` (all of it for `None`); b"" if it is not
    base64."""
    text = data if limit is None else data[: (limit // 3) * 4]
    try:
        return b64decode(text, validate=True)
    except ValueError:  # binascii.Error is one
        return b""


def image_size(raw: bytes, media_type: str) -> tuple[int, int] | None:
    """(width, height) from the header of a PNG, GIF, WebP or JPEG image's bytes (`raw` may
    be only their start); `None` when they do not say."""
    reader = _READERS.get(media_type)
    size = reader(raw) if reader is not None else None
    if size is None or size[0] <= 0 or size[1] <= 0:
        return None
    return size


def _png(raw: bytes) -> tuple[int, int] | None:
    # The signature, then the IHDR chunk: length, type, width, height (big-endian).
    if len(raw) < 24 or raw[12:16] != b"IHDR":
        return None
    return int.from_bytes(raw[16:20], "big"), int.from_bytes(raw[20:24], "big")


def _gif(raw: bytes) -> tuple[int, int] | None:
    # "GIF87a" or "GIF89a", then the logical screen's width and height (little-endian).
    if len(raw) < 10:
        return None
    return int.from_bytes(raw[6:8], "little"), int.from_bytes(raw[8:10], "little")


def _webp(raw: bytes) -> tuple[int, int] | None:
    if len(raw) < 30 or raw[:4] != b"RIFF" or raw[8:12] != b"WEBP":
        return None
    chunk = raw[12:16]
    if chunk == b"VP8X":  # extended: 24-bit width - 1 and height - 1
        return int.from_bytes(raw[24:27], "little") + 1, int.from_bytes(raw[27:30], "little") + 1
    if chunk == b"VP8L":  # lossless: 14-bit width - 1 and height - 1 after the signature
        bits = int.from_bytes(raw[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8 ":  # lossy: the key frame's 14-bit width and height
        width = int.from_bytes(raw[26:28], "little") & 0x3FFF
        height = int.from_bytes(raw[28:30], "little") & 0x3FFF
        return width, height
    return None


_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
"""JPEG start-of-frame markers (the frame header gives the size); C4, C8 and CC are not."""


def _jpeg(raw: bytes) -> tuple[int, int] | None:
    position = 2
    while position + 9 <= len(raw):
        if raw[position] != 0xFF:
            return None
        marker = raw[position + 1]
        if marker == 0xFF:  # fill byte
            position += 1
            continue
        if marker in _SOF:
            height = int.from_bytes(raw[position + 5 : position + 7], "big")
            width = int.from_bytes(raw[position + 7 : position + 9], "big")
            return width, height
        if marker in (0x01, *range(0xD0, 0xD9)):  # markers without a length
            position += 2
            continue
        position += 2 + int.from_bytes(raw[position + 2 : position + 4], "big")
    return None


_READERS = {"image/png": _png, "image/gif": _gif, "image/webp": _webp, "image/jpeg": _jpeg}
