"""What an image counts: its size read from its header, billed as today's models bill it."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from abridged.application.inputs import as_message
from abridged.domain.errors import MalformedBlockError
from abridged.domain.images import (
    LONG_EDGE,
    MAX_IMAGE_TOKENS,
    MAX_PIXELS,
    image_size,
    image_tokens,
    inline_image_tokens,
)
from abridged.domain.messages import ImageBlock, WireBlock
from abridged.domain.tokens import BLOCK_OVERHEAD, block_tokens
from abridged.domain.validation import check_blocks
from tests.support.images import b64, gif, jpeg, png, webp


@pytest.mark.parametrize(
    ("raw", "media_type"),
    [
        (png(1280, 800), "image/png"),
        (gif(1280, 800), "image/gif"),
        (jpeg(1280, 800), "image/jpeg"),
        (jpeg(1280, 800, metadata=300_000), "image/jpeg"),  # past the first 96 KB read
        (webp(b"VP8 ", 1280, 800), "image/webp"),
        (webp(b"VP8L", 1280, 800), "image/webp"),
        (webp(b"VP8X", 1280, 800), "image/webp"),
    ],
    ids=["png", "gif", "jpeg", "jpeg-long-exif", "webp-lossy", "webp-lossless", "webp-extended"],
)
def test_the_size_is_read_from_each_format_header(raw: bytes, media_type: str) -> None:
    assert image_size(raw, media_type) == (1280, 800)
    # 1,288 × 812 after padding to multiples of 28: 1,395 tokens (1,600 counted before).
    assert inline_image_tokens(b64(raw), media_type) == 1_395


def test_images_are_billed_as_the_models_that_read_them_largest_bill() -> None:
    # A screenshot at its size, padded; a large photo scaled to 2,576 pixels or 3.75 MP.
    assert image_tokens(1_000, 1_000) == 1_355  # 1,008 × 1,008 / 750, rounded up
    assert image_tokens(4_032, 3_024) == image_tokens(2_232, 1_674)
    assert 4_900 <= image_tokens(4_032, 3_024) <= 5_100
    assert image_tokens(8_000, 100) == image_tokens(2_576, 32)


@given(st.integers(1, 20_000), st.integers(1, 20_000))
def test_no_image_counts_more_than_the_most_an_image_can_cost(width: int, height: int) -> None:
    assert 1 <= image_tokens(width, height) <= MAX_IMAGE_TOKENS


@given(st.integers(1, 20_000), st.integers(1, 20_000))
def test_an_image_counts_what_it_counts_once_scaled_to_what_the_model_reads(
    width: int, height: int
) -> None:
    # Scaling it down first (what a host may do to save tokens) changes nothing billed.
    scale = min(1.0, LONG_EDGE / max(width, height), math.sqrt(MAX_PIXELS / (width * height)))
    read = (max(1, math.floor(width * scale)), max(1, math.floor(height * scale)))
    assert image_tokens(*read) == image_tokens(width, height)


@given(st.integers(1, 2_575), st.integers(1, 1_400))
def test_within_what_the_model_reads_a_larger_image_never_counts_less(
    width: int, height: int
) -> None:
    # Past the limits it may: a wider image is read with a shorter height (3,069 × 1,469
    # reads as 2,576 × 1,233, padded to 1,260; 3,070 × 1,469 as 2,576 × 1,232, padded to
    # 1,232), so only images the model reads at their size are compared.
    assert image_tokens(width + 1, height) >= image_tokens(width, height)
    assert image_tokens(width, height + 1) >= image_tokens(width, height)


def test_an_image_whose_size_cannot_be_read_counts_the_most() -> None:
    unreadable = b"\x89PNG\r\n\x1a\n" + bytes(4)  # the signature, no header
    assert inline_image_tokens(b64(unreadable), "image/png") == MAX_IMAGE_TOKENS
    by_url = ImageBlock("url", url="https://example.com/chart.png")
    assert block_tokens(by_url, len) == BLOCK_OVERHEAD + MAX_IMAGE_TOKENS


def test_a_large_screenshot_counts_what_todays_models_bill_not_1600() -> None:
    # Before: every image counted 1,600, a third of what Opus 4.7 and later bill for a
    # 2,560 × 1,440 screenshot, so requests of screenshots ran past the window.
    block = ImageBlock("base64", media_type="image/png", data=b64(png(2_560, 1_440)))
    assert block_tokens(block, len) == BLOCK_OVERHEAD + image_tokens(2_560, 1_440)
    assert block_tokens(block, len) > 4_900


def test_an_image_by_files_api_id_is_accepted_and_kept_as_it_came() -> None:
    wire = {
        "type": "image",
        "source": {"type": "file", "file_id": "file_011CNha8iCJcU1wXNR6q4V8w"},
        "cache_control": {"type": "ephemeral"},
    }
    message = as_message({"role": "user", "content": [wire, {"type": "text", "text": "What?"}]})
    check_blocks(message)

    block = message.content[0]
    assert isinstance(block, WireBlock)
    # As sent, but for the host's breakpoint: abridged places a request's four itself.
    assert block.to_wire() == {k: v for k, v in wire.items() if k != "cache_control"}
    assert block_tokens(block, len) >= MAX_IMAGE_TOKENS


def test_an_image_by_file_without_its_id_is_refused() -> None:
    message = as_message(
        {"role": "user", "content": [{"type": "image", "source": {"type": "file"}}]}
    )
    with pytest.raises(MalformedBlockError, match="file_id"):
        check_blocks(message)


def document(data: str) -> dict[str, object]:
    source = {"type": "base64", "media_type": "application/pdf", "data": data}
    return {"role": "user", "content": [{"type": "document", "source": source}]}


PDF = b64(b"%PDF-1.7\n1 0 obj<</Type/Catalog>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n")


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ("not base64!", "not valid base64"),
        (PDF[:-3], "not valid base64"),  # cut inside a group
        (b64(b"PK\x03\x04 a zip file, not a PDF"), "not a PDF"),
    ],
    ids=["not base64", "cut", "not a pdf"],
)
def test_a_base64_document_the_api_would_refuse_is_refused_at_append(data: str, match: str) -> None:
    # As an image whose bytes are not of its type: stored, it would make every later request
    # refused (the API reads each PDF it is sent).
    with pytest.raises(MalformedBlockError, match=match):
        check_blocks(as_message(document(data)))


def test_a_pdf_whose_header_follows_a_few_bytes_is_taken() -> None:
    check_blocks(as_message(document(PDF)))
    check_blocks(as_message(document(b64(b"\xef\xbb\xbf\n" + b"%PDF-1.4 body"))))
