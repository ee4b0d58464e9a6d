"""What a host may attach to a session to find it again: metadata (key → value) and tags.

Both are recorded in `Session.Started` and stored with every session, so they are kept small
and plain: strings only, bounded in number and length.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from abridged.domain.errors import InvalidMetadataError

MAX_ENTRIES = 64
"""At most this many metadata keys, and this many tags."""
MAX_KEY_LENGTH = 128
"""Longest metadata key or tag, in characters."""
MAX_VALUE_LENGTH = 1_024
"""Longest metadata value, in characters."""


def checked_metadata(metadata: Mapping[str, str] | None) -> dict[str, str]:
    """A copy of `metadata`; raises `InvalidMetadataError` for a key or value that is not a
    string, an empty or over-long key, an over-long value, or too many keys."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise InvalidMetadataError(f"metadata must be a mapping, got {type(metadata).__name__}")
    if len(metadata) > MAX_ENTRIES:
        raise InvalidMetadataError(f"at most {MAX_ENTRIES} metadata keys, got {len(metadata)}")
    checked: dict[str, str] = {}
    for key, value in metadata.items():
        _check_word(key, "metadata key")
        if not isinstance(value, str):
            raise InvalidMetadataError(
                f"metadata value for {key!r} must be a string, got {type(value).__name__}"
            )
        if len(value) > MAX_VALUE_LENGTH:
            raise InvalidMetadataError(
                f"metadata value for {key!r} is longer than {MAX_VALUE_LENGTH} characters"
            )
        _check_encodable(value, f"metadata value for {key!r}")
        checked[key] = value
    return checked


def checked_tags(tags: Iterable[str] | None) -> tuple[str, ...]:
    """The tags, without duplicates, in the order given; raises `InvalidMetadataError` for a
    tag that is not a non-empty string of at most `MAX_KEY_LENGTH` characters."""
    if tags is None:
        return ()
    if isinstance(tags, str):
        raise InvalidMetadataError("tags must be a list of strings, not one string")
    unique: list[str] = []
    for tag in tags:
        _check_word(tag, "tag")
        if tag not in unique:
            unique.append(tag)
    if len(unique) > MAX_ENTRIES:
        raise InvalidMetadataError(f"at most {MAX_ENTRIES} tags, got {len(unique)}")
    return tuple(unique)


def _check_word(word: object, what: str) -> None:
    if not isinstance(word, str):
        raise InvalidMetadataError(f"a {what} must be a string, got {type(word).__name__}")
    if not word.strip():
        raise InvalidMetadataError(f"a {what} cannot be empty")
    if len(word) > MAX_KEY_LENGTH:
        raise InvalidMetadataError(f"the {what} {word[:20]!r}… is over {MAX_KEY_LENGTH} characters")
    _check_encodable(word, f"the {what} {word[:20]!r}")


def _check_encodable(text: str, what: str) -> None:
    # A lone surrogate is a str but no UTF-8: the store could not write it.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise InvalidMetadataError(
            f"{what} holds a character UTF-8 cannot encode (a lone surrogate at {error.start})"
        ) from None
