"""Errors raised by the client, and the ones a handler raises to steer the outcome."""

from __future__ import annotations


class RotaError(Exception):
    """An error answer of the Rota API, or a failure to reach it.

    ``code`` is the API's snake_case error code (``not_found``, ``lease_lost``,
    ``invalid_request``, ...), ``"connection_error"`` when no answer arrived, or
    ``"invalid_response"`` for a success answer that is not JSON; ``status`` is the HTTP
    status (0 when no answer arrived); ``retry_after`` is the
    ``Retry-After`` header in seconds when the server sent one (429, 503).
    """

    def __init__(self, code: str, message: str, status: int = 0, retry_after: float | None = None) -> None:
        super().__init__(f"{code}: {message}" + (f" (HTTP {status})" if status else ""))
        self.code = code
        self.message = message
        self.status = status
        self.retry_after = retry_after

    @property
    def lease_lost(self) -> bool:
        """True for a 409 ``lease_lost``: the lease token is no longer the task's."""
        return self.code == "lease_lost"


class Retry(Exception):
    """Raise from a handler to fail the attempt and retry after ``after`` seconds.

    Without ``after`` the server's exponential backoff decides. The retry still uses an
    attempt: once ``max_attempts`` are used up the task is DEAD.
    """

    def __init__(self, message: str = "retry requested", *, after: float | None = None) -> None:
        super().__init__(message)
        if after is not None and after < 0:
            raise ValueError("Retry(after=...) must not be negative")
        self.after = after


class PermanentError(Exception):
    """Raise from a handler to fail the task at once (FAILED, no more attempts)."""


class Cancelled(Exception):
    """Raised by ``TaskContext.raise_if_cancelled`` once the attempt should stop.

    ``reason`` says why: ``"cancel_requested"`` (someone cancelled the task; the worker
    reports it and the task ends CANCELED), ``"lease_lost"`` (another worker may own the
    task now; nothing is reported), ``"timeout"`` (the task's timeout_seconds passed) or
    ``"shutdown"`` (the worker's shutdown grace period ended).
    """

    def __init__(self, reason: str) -> None:
        super().__init__(f"attempt cancelled: {reason}")
        self.reason = reason
