"""The errors the client raises.

Every error is a SnowidError; its subclass says what the caller can do:

- Unavailable: no ID now (the buffer stayed empty for empty_wait while no
  node answered, or the client is closed). Worth retrying later.
- InvalidArgument (also a ValueError): a bad option or argument, or a node
  refused this client's request (bearer token, agent, count, tag name:
  HTTP 400, 401, 403). Retrying the same request does not help.
- NotFound (also a LookupError): the nodes do not know the segment tag, or
  it has no business-ID template (404).
- FailedPrecondition: the tag's state refuses a business-ID call (409: the
  tag is retired, or this period's numbers outgrew the template's width).
  Retrying does not help until an administrator changes the tag.

`status` is the HTTP status of the refusal that caused the error, if any.
Exception classes only: safe to use from any thread.
"""

from __future__ import annotations


class SnowidError(Exception):
    """Base class of the client's errors."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status

    def fresh(self) -> SnowidError:
        """A new instance with the same class, message and status, to raise
        from several threads without sharing one traceback."""
        return type(self)(str(self), self.status)


class Unavailable(SnowidError):
    """No ID could be had within the wait allowed."""


class InvalidArgument(SnowidError, ValueError):
    """A bad option or argument, or a request the nodes refuse."""


class NotFound(SnowidError, LookupError):
    """The nodes do not know the segment tag."""


class FailedPrecondition(SnowidError):
    """The tag's state refuses the call (retired, or its template too narrow)."""
