"""The objects of the Rota API as typed dataclasses.

Times stay RFC 3339 strings (UTC), as the API sends them; ``parse_time`` turns one into a
``datetime``. Fields the server adds later are kept in ``extra`` rather than refused.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Mapping, TypeVar

# Task statuses (DESIGN.md section 4).
PENDING = "PENDING"
ENQUEUED = "ENQUEUED"
PROCESSING = "PROCESSING"
SUCCEEDED = "SUCCEEDED"
FAILED = "FAILED"
DEAD = "DEAD"
CANCELED = "CANCELED"

T = TypeVar("T")


def parse_time(value: str | None) -> datetime | None:
    """Parses an RFC 3339 time of the API (``None`` stays ``None``)."""
    if value is None:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _build(cls: type[T], data: Mapping[str, Any]) -> T:
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    known = {k: v for k, v in data.items() if k in names and k != "extra"}
    extra = {k: v for k, v in data.items() if k not in names}
    return cls(**known, extra=extra)


@dataclass
class Task:
    """A task as the API shows it (``GET /api/tasks/{id}``)."""

    id: str
    queue: str
    kind: str
    payload: Any = None
    status: str = ""
    priority: int = 0
    scheduled_for: str | None = None
    attempt_count: int = 0
    max_attempts: int = 0
    idempotency_key: str | None = None
    #: The task's group within its queue (group limits, fair claiming); None when none.
    group_key: str | None = None
    timeout_seconds: int = 0
    worker_id: str | None = None
    lease_expires_at: str | None = None
    cancel_requested_at: str | None = None
    enqueued_at: str | None = None
    processing_started_at: str | None = None
    completed_at: str | None = None
    last_error: str | None = None
    #: What the attempt that succeeded returned (any JSON value); None when none.
    output: Any = None
    created_at: str | None = None
    updated_at: str | None = None
    #: A flow step's task: its flow, its step's name and its inputs (each dependency's
    #: output by step name). None for a plain task.
    flow_id: str | None = None
    step: str | None = None
    inputs: dict[str, Any] | None = None
    #: A for_each step's task: the element it runs for (may itself be None) and its
    #: 0-based position (None for any other task).
    item: Any = None
    index: int | None = None
    #: Set on what ``enqueue`` returns: the task was created, but no live worker may run it
    #: yet (its queue has none, or none handles its kind). Not part of the task: equality
    #: ignores it, and ``get`` never has it.
    warnings: list[str] = field(default_factory=list, compare=False)
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Task":
        return _build(cls, data)


@dataclass
class ClaimedTask(Task):
    """A task leased by a claim: ``lease_token`` proves the lease to heartbeat, complete and fail."""

    lease_token: str = ""
    #: W3C trace context of the call that created the task ("" when it was not traced):
    #: the worker sends it back with heartbeat, complete and fail, and a handler may
    #: continue the trace with it (for example with OpenTelemetry's propagator).
    traceparent: str = ""
    tracestate: str = ""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "ClaimedTask":
        return _build(cls, data)


@dataclass
class Attempt:
    """One attempt of a task (``GET /api/tasks/{id}/attempts``).

    ``outcome`` is ``SUCCEEDED``, ``FAILED``, ``LEASE_EXPIRED``, ... once the attempt
    ended; the attempt running now comes last with ``id`` 0 and ``outcome`` None.
    """

    id: int
    task_id: str
    attempt: int
    worker_id: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    outcome: str | None = None
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Attempt":
        return _build(cls, data)


@dataclass
class TaskPage:
    """One page of ``GET /api/tasks``; ``next_cursor`` is ``""`` on the last page."""

    tasks: list[Task]
    next_cursor: str


@dataclass
class NewTask:
    """One task to create, for ``Client.enqueue_many``; the fields of ``POST /api/tasks``.

    Give at most one of ``delay_seconds`` and ``scheduled_for``; ``None`` fields are left
    out so the server's defaults apply.
    """

    kind: str
    payload: Any = None
    queue: str | None = None
    delay_seconds: float | None = None
    scheduled_for: datetime | str | None = None
    max_attempts: int | None = None
    priority: int | None = None
    idempotency_key: str | None = None
    timeout_seconds: int | None = None
    group_key: str | None = None

    def to_json(self) -> dict[str, Any]:
        if self.delay_seconds is not None and self.scheduled_for is not None:
            raise ValueError("give delay_seconds or scheduled_for, not both")
        body: dict[str, Any] = {"kind": self.kind}
        for name in ("queue", "payload", "delay_seconds", "max_attempts", "priority",
                     "idempotency_key", "timeout_seconds", "group_key"):
            value = getattr(self, name)
            if value is not None:
                body[name] = value
        if self.scheduled_for is not None:
            body["scheduled_for"] = format_time(self.scheduled_for)
        return body


def format_time(value: datetime | str) -> str:
    """RFC 3339 for the API; a naive datetime is refused (its zone would be a guess)."""
    if isinstance(value, str):
        return value
    if value.tzinfo is None:
        raise ValueError("scheduled_for needs a timezone-aware datetime (e.g. datetime.now(timezone.utc))")
    return value.isoformat()


# Flow statuses (DESIGN.md section 10); a step is WAITING until its tasks exist, then
# has a task status.
RUNNING = "RUNNING"
WAITING = "WAITING"


@dataclass
class FlowStep:
    """One step of a flow: its status, task ids in element order, output and error."""

    name: str
    kind: str
    status: str = ""
    queue: str = ""
    depends_on: list[str] = field(default_factory=list)
    for_each: str | None = None
    #: The group key every task of the step carries (None when none).
    group_key: str | None = None
    task_ids: list[str] = field(default_factory=list)
    #: The step's output once it SUCCEEDED: its task's, or for a for_each step the list
    #: of its tasks' outputs in element order.
    output: Any = None
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "FlowStep":
        return _build(cls, data)


@dataclass
class Flow:
    """A flow as the API shows it (``GET /api/flows/{id}``); list answers have no steps."""

    id: str
    status: str
    queue: str = ""
    name: str | None = None
    idempotency_key: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    completed_at: str | None = None
    steps: list[FlowStep] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Flow":
        flow = _build(cls, {k: v for k, v in data.items() if k != "steps"})
        flow.steps = [FlowStep.from_json(s) for s in data.get("steps") or []]
        return flow

    def step(self, name: str) -> FlowStep:
        """The step called ``name`` (KeyError when none)."""
        for s in self.steps:
            if s.name == name:
                return s
        raise KeyError(name)

    @property
    def ended(self) -> bool:
        return self.status != RUNNING
