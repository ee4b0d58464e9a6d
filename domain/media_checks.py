"""What the API checks of an image's or a document's bytes and source, checked at append: a
message it would refuse, stored, would poison every later request of its session."""

from __future__ import annotations

from base64 import b64decode

from abridged.domain.errors import MalformedBlockError
from abridged.domain.messages import IMAGE_MEDIA_TYPES, ImageBlock


def check_image(block: ImageBlock, where: str) -> None:
    if block.source_type == "url":
        if not block.url:
            raise MalformedBlockError(f"{where}: an image by url needs the url")
        return
    if block.media_type not in IMAGE_MEDIA_TYPES:
        raise MalformedBlockError(
            f"{where}: image media_type must be one of {', '.join(sorted(IMAGE_MEDIA_TYPES))}"
        )
    if not block.data:
        raise MalformedBlockError(f"{where}: a base64 image needs its data")
    try:
        raw = b64decode(block.data, validate=True)
    except ValueError:  # binascii.Error is one
        raise MalformedBlockError(f"{where}: the image data is not valid base64") from None
    if not _has_signature(raw, block.media_type):
        # The API refuses an image whose bytes are not of the declared type; better to say so
        # at append than to store a message that poisons every later request.
        raise MalformedBlockError(
            f"{where}: the image data is not {block.media_type} (its first bytes do not match)"
        )


_IMAGE_SIGNATURES = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
}


def _has_signature(raw: bytes, media_type: str) -> bool:
    if media_type == "image/webp":
        return raw[:4] == b"RIFF" and raw[8:12] == b"WEBP"
    return raw.startswith(_IMAGE_SIGNATURES.get(media_type, (b"",)))


_DOCUMENT_SOURCES = frozenset({"base64", "text", "content", "url", "file"})


def check_document(wire: dict[str, object], where: str) -> None:
    source = wire.get("source")
    if not isinstance(source, dict) or source.get("type") not in _DOCUMENT_SOURCES:
        raise MalformedBlockError(
            f"{where}: a document needs a source of type {', '.join(sorted(_DOCUMENT_SOURCES))}"
        )
    kind = source["type"]
    needed = {"base64": "data", "text": "data", "url": "url", "file": "file_id"}.get(kind)
    # A text source may be empty: the API itself returns such documents (a web fetch of an
    # empty page), so a session must take them back as they came.
    empty_ok = kind == "text"
    if needed is not None and not (
        isinstance(source.get(needed), str) and (source[needed].strip() or empty_ok)
    ):
        raise MalformedBlockError(f"{where}: a {kind} document source needs its {needed!r}")
    if kind == "base64":
        check_pdf(source, where)
    if kind == "content" and not isinstance(source.get("content"), str | list):
        raise MalformedBlockError(f"{where}: a content document source needs its content")


def check_pdf(source: dict[str, object], where: str) -> None:
    """A base64 document is a PDF: its media type, its data base64, and `%PDF` in its first
    1,024 bytes (where a PDF's header may sit): the API refuses any other, so it is said at
    append rather than stored to poison every later request, as an image is."""
    if source.get("media_type") != "application/pdf":
        raise MalformedBlockError(f"{where}: a base64 document must be application/pdf")
    try:
        raw = b64decode(str(source.get("data")), validate=True)
    except ValueError:  # binascii.Error is one
        raise MalformedBlockError(f"{where}: the document data is not valid base64") from None
    if b"%PDF" not in raw[:1_024]:
        raise MalformedBlockError(f"{where}: the base64 document is not a PDF (no %PDF header)")
