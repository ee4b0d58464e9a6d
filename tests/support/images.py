"""Image files built byte by byte, for tests of what an image counts."""

from __future__ import annotations

import base64
import struct
import zlib


def chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png(width: int, height: int) -> bytes:
    """A real PNG of `width` × `height` black pixels (8-bit grey)."""
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    rows = zlib.compress(b"".join(b"\x00" + bytes(width) for _ in range(height)))
    signature = b"\x89PNG\r\n\x1a\n"
    return signature + chunk(b"IHDR", header) + chunk(b"IDAT", rows) + chunk(b"IEND", b"")


def gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00\x00\x00;"


def jpeg(width: int, height: int, metadata: int = 18) -> bytes:
    """A JPEG's markers up to its frame header: JFIF, then `metadata` bytes of an APP1 segment
    (EXIF) in pieces of at most 65,533, then SOF2 (progressive) with the size."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    app1 = b""
    while metadata > 0:
        piece = min(metadata, 65_533)
        app1 += b"\xff\xe1" + struct.pack(">H", piece + 2) + bytes(piece)
        metadata -= piece
    frame = b"\xff\xc2" + struct.pack(">HBHHB", 17, 8, height, width, 3) + bytes(9)
    return b"\xff\xd8" + app0 + app1 + frame + b"\xff\xd9"


def webp(kind: bytes, width: int, height: int) -> bytes:
    if kind == b"VP8X":
        data = b"\x00\x00\x00\x00" + (width - 1).to_bytes(3, "little")
        data += (height - 1).to_bytes(3, "little")
    elif kind == b"VP8L":
        data = b"\x2f" + ((width - 1) | (height - 1) << 14).to_bytes(4, "little") + bytes(5)
    else:
        data = b"\x00\x00\x00\x9d\x01\x2a" + struct.pack("<HH", width, height) + bytes(4)
    body = b"WEBP" + kind + struct.pack("<I", len(data)) + data
    return b"RIFF" + struct.pack("<I", len(body)) + body


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()
