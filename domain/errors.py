"""The domain's errors. `SessionError` is the root; each subclass names what to fix."""

from __future__ import annotations


class SessionError(Exception):
    """Root of every error abridged raises about a session or its messages."""


class UnknownSessionError(SessionError, LookupError):
    """No session has this id."""


class InvalidMessageError(SessionError, ValueError):
    """A message cannot be appended: it would make an invalid Messages API request."""


class MalformedBlockError(InvalidMessageError):
    """A content block is not of a shape the Messages API accepts."""


class RoleOrderError(InvalidMessageError):
    """The message's role breaks the user/assistant alternation (or the first is not user)."""


class MessageAlreadyAppendedError(RoleOrderError):
    """The message is the session's last one already: an earlier call appended it (a retry
    after a cancellation or a timeout whose call was saved). Nothing is appended again."""


class MisplacedSystemMessageError(RoleOrderError):
    """A `role: "system"` message is where the Messages API refuses it: it must follow a user
    turn (or another system message), never come first, and be followed by an assistant
    turn (or be the last message)."""

    def __init__(self, message: str, *, rule: str) -> None:
        super().__init__(message)
        self.rule = rule
        """Which placement rule it breaks: `first`, `after-assistant` or `before-user`."""


class EmptyContentError(InvalidMessageError):
    """A message has no blocks, or a text block is empty or only white space."""


class OrphanToolResultError(InvalidMessageError):
    """A tool_result answers no pending tool_use of the previous assistant message."""


class UnansweredToolUseError(InvalidMessageError):
    """A tool_use of the previous assistant message gets no tool_result in this one."""


class DuplicateToolIdError(InvalidMessageError):
    """A tool_use id is used twice in the messages the model would see."""


class MalformedToolIdError(InvalidMessageError):
    """A tool_use id or tool name does not match the pattern the API requires."""


class UnsignedThinkingError(InvalidMessageError):
    """A thinking block has no signature, so the API would reject it when sent back."""


class MisplacedBlockError(InvalidMessageError):
    """A block is in a message of the wrong role or at the wrong place in it."""


class ContextOverflowError(SessionError):
    """The next request cannot fit the budget, whatever is compacted; nothing is sent."""

    def __init__(self, message: str, *, position: int | None, tokens: int, budget: int) -> None:
        super().__init__(message)
        self.position = position
        self.tokens = tokens
        self.budget = budget


class ContextTooSmallError(ContextOverflowError):
    """What can never be reduced (the system prompt, the tools, signed thinking and server
    tool results of the current exchange) does not fit the budget: raised when the session
    starts or the message is appended, and nothing is written."""

    def __init__(
        self,
        message: str,
        *,
        system_tokens: int,
        tools_tokens: int,
        irreducible_tokens: int,
        budget: int,
    ) -> None:
        super().__init__(
            message,
            position=None,
            tokens=system_tokens + tools_tokens + irreducible_tokens,
            budget=budget,
        )
        self.system_tokens = system_tokens
        self.tools_tokens = tools_tokens
        self.irreducible_tokens = irreducible_tokens


class NothingToCompactError(SessionError):
    """A compaction was asked for, but only what must stay is in the context."""


class CompactionFailedError(SessionError):
    """A compaction asked for by the caller failed (the failure is recorded as an event)."""


class TurnNotWithdrawableError(SessionError, ValueError):
    """The turn cannot be withdrawn: no user prompt starts it in the retained tail (a
    compaction summarized it), or a reply after it began with the API's own compaction."""


class ConcurrentWriteError(SessionError):
    """Other writers kept changing the session while a command ran; nothing of it was saved.
    Running the command again is safe."""


class InvalidSettingsError(SessionError, ValueError):
    """A setting is out of range or inconsistent with the others."""


class SessionDeletedError(UnknownSessionError):
    """The session was deleted: it takes no more commands (its audit trail may remain)."""


class SessionErasedError(UnknownSessionError):
    """The session was erased (`delete_session(..., erase=True)`): the store refuses any
    later write of it, so a command that loaded it before the erase saved nothing."""


class InvalidMetadataError(SessionError, ValueError):
    """Session metadata or tags are not short strings (see `abridged.domain.metadata`)."""


class InvalidRequestOptionsError(SessionError, ValueError):
    """A request parameter (thinking, tool_choice, temperature, ...) is out of range or
    inconsistent with the others, so the API would refuse the request."""


class NotAnOverflowError(SessionError, ValueError):
    """`report_overflow` was given an error that is not the provider's "prompt is too long"."""


class MessageTooLargeError(InvalidMessageError):
    """A message is larger than the session store accepts (`max_message_bytes`)."""

    def __init__(self, message: str, *, size: int, limit: int) -> None:
        super().__init__(message)
        self.size = size
        self.limit = limit


class UnencodableContentError(MalformedBlockError):
    """A message holds what JSON cannot carry to the API: a lone surrogate, or nesting too
    deep to serialize."""


class InvalidToolDefinitionError(SessionError, ValueError):
    """A tool definition the Messages API would refuse: a bad `name` or `input_schema`."""


class InvalidUsageError(SessionError, ValueError):
    """Token counts a caller reported (a reply's usage, a request's estimate) that cannot be
    true: negative, not whole numbers, or beyond any model's window. Nothing is recorded."""


class InvalidArgumentError(SessionError, TypeError):
    """An argument of the wrong type (a string where a number is expected, ...)."""


class StoreError(SessionError):
    """The session store failed or timed out (unreachable, locked, cancelled); nothing of the
    command was saved, and running it again is safe once the store is back."""


class ServiceClosedError(SessionError, RuntimeError):
    """The service was closed (`Sessions.close()`, `AsyncSessions.aclose()`): it takes no
    more commands or queries. Build a new one (`bootstrap`) on the same store."""


class SessionExistsError(ConcurrentWriteError):
    """`start_session` was given the id of a session that already exists (another writer
    started it first)."""
