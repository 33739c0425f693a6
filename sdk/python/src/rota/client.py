"""A client of Rota's HTTP API (docs/api.md), on the standard library only."""

from __future__ import annotations

import http.client
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime
from typing import Any, Iterable, Iterator, Mapping

from .errors import RotaError
from .models import Attempt, ClaimedTask, Flow, NewTask, Task, TaskPage

DEFAULT_SERVER = "http://127.0.0.1:8080"


class Client:
    """Talks to one Rota server.

    ``base_url`` defaults to ``$ROTA_SERVER``, else ``http://$ROTA_ADDR``, else
    ``http://127.0.0.1:8080`` (as the CLI's client commands do); ``token`` to
    ``$ROTA_API_TOKEN`` (sent as a Bearer token when set). ``timeout`` bounds each request
    in seconds; a long-poll claim adds its wait to it. Every error answer raises
    ``RotaError`` with the API's code, message and HTTP status. A client is safe to share
    between threads: each call opens its own connection.
    """

    def __init__(self, base_url: str | None = None, *, token: str | None = None, timeout: float = 30.0) -> None:
        base = base_url or os.environ.get("ROTA_SERVER") or ""
        if not base:  # like the CLI's client commands: ROTA_SERVER, else http:// + ROTA_ADDR
            addr = os.environ.get("ROTA_ADDR", "")
            base = "http://" + addr if addr else DEFAULT_SERVER
        if "://" not in base:
            base = "http://" + base
        self.base_url = base.rstrip("/")
        self.token = token if token is not None else (os.environ.get("ROTA_API_TOKEN") or None)
        self.timeout = timeout

    # --- tasks -------------------------------------------------------------------------

    def enqueue(
        self,
        kind: str,
        payload: Any = None,
        *,
        queue: str | None = None,
        delay_seconds: float | None = None,
        scheduled_for: datetime | str | None = None,
        max_attempts: int | None = None,
        priority: int | None = None,
        idempotency_key: str | None = None,
        timeout_seconds: int | None = None,
        group_key: str | None = None,
        traceparent: str | None = None,
        tracestate: str | None = None,
    ) -> Task:
        """Creates one task (``POST /api/tasks``).

        With an ``idempotency_key`` that a live task holds, the server returns that task
        instead of a new one; ``enqueue_status`` tells the two apart. ``group_key`` (at
        most 128 characters) puts the task in a group of its queue: the queue's group
        limits count per key, and claims take the groups in turn. ``traceparent`` (and
        ``tracestate``), a W3C trace context, is sent as that header: the task's attempt
        then continues that trace.
        """
        task, _ = self.enqueue_status(NewTask(
            kind=kind, payload=payload, queue=queue, delay_seconds=delay_seconds,
            scheduled_for=scheduled_for, max_attempts=max_attempts, priority=priority,
            idempotency_key=idempotency_key, timeout_seconds=timeout_seconds,
            group_key=group_key,
        ), traceparent=traceparent, tracestate=tracestate)
        return task

    def enqueue_status(
        self, new: NewTask, *, traceparent: str | None = None, tracestate: str | None = None
    ) -> tuple[Task, bool]:
        """Like ``enqueue``; also returns True when the task is new (201), False for an
        idempotency hit (200)."""
        status, body = self._call("POST", "/api/tasks", new.to_json(), trace=(traceparent, tracestate))
        return Task.from_json(body), status == 201

    def enqueue_many(
        self,
        tasks: Iterable[NewTask | Mapping[str, Any]],
        *,
        traceparent: str | None = None,
        tracestate: str | None = None,
    ) -> list[Task]:
        """Creates 1 to 1,000 tasks in one transaction (``POST /api/tasks/batch``): all or
        nothing. Items are ``NewTask`` or dicts with the same fields. ``traceparent`` as
        for ``enqueue``, for every task. The batch's warnings (see ``Task.warnings``) are on
        every task returned."""
        items = [t.to_json() if isinstance(t, NewTask) else NewTask(**t).to_json() for t in tasks]
        _, body = self._call("POST", "/api/tasks/batch", {"tasks": items}, trace=(traceparent, tracestate))
        made = [Task.from_json(t) for t in body["tasks"]]
        for t in made:
            t.warnings = list(body.get("warnings") or [])
        return made

    def get(self, task_id: str) -> Task:
        """``GET /api/tasks/{id}``; a missing task raises RotaError ``not_found`` (404)."""
        _, body = self._call("GET", f"/api/tasks/{_seg(task_id)}")
        return Task.from_json(body)

    def list(
        self,
        *,
        status: str | Iterable[str] | None = None,
        queue: str | None = None,
        kind: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> TaskPage:
        """One page of ``GET /api/tasks``, newest first. Pass ``next_cursor`` back as
        ``cursor`` until it is ``""``; ``iter_tasks`` does that for you."""
        query: list[tuple[str, str]] = []
        if status is not None:
            query.append(("status", status if isinstance(status, str) else ",".join(status)))
        for name, value in (("queue", queue), ("kind", kind), ("limit", limit), ("cursor", cursor)):
            if value is not None and value != "":
                query.append((name, str(value)))
        path = "/api/tasks" + ("?" + urllib.parse.urlencode(query) if query else "")
        _, body = self._call("GET", path)
        return TaskPage(tasks=[Task.from_json(t) for t in body["tasks"]], next_cursor=body.get("next_cursor") or "")

    def iter_tasks(
        self,
        *,
        status: str | Iterable[str] | None = None,
        queue: str | None = None,
        kind: str | None = None,
        page_size: int | None = None,
    ) -> Iterator[Task]:
        """Every task matching the filters, page after page."""
        cursor: str | None = None
        while True:
            page = self.list(status=status, queue=queue, kind=kind, limit=page_size, cursor=cursor)
            yield from page.tasks
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def attempts(self, task_id: str) -> list[Attempt]:
        """``GET /api/tasks/{id}/attempts``: the attempt history, oldest first."""
        _, body = self._call("GET", f"/api/tasks/{_seg(task_id)}/attempts")
        return [Attempt.from_json(a) for a in body["attempts"]]

    def cancel(self, task_id: str) -> Task:
        """``POST /api/tasks/{id}/cancel``: a waiting task is CANCELED at once; a running
        one stays PROCESSING with ``cancel_requested_at`` set until its worker stops."""
        _, body = self._call("POST", f"/api/tasks/{_seg(task_id)}/cancel")
        return Task.from_json(body)

    def replay(self, task_id: str) -> Task:
        """``POST /api/tasks/{id}/replay``: a DEAD, FAILED or CANCELED task runs again (PENDING)."""
        _, body = self._call("POST", f"/api/tasks/{_seg(task_id)}/replay")
        return Task.from_json(body)

    # --- flows -------------------------------------------------------------------------

    def start_flow(
        self,
        steps: Iterable[Mapping[str, Any]],
        *,
        name: str | None = None,
        queue: str | None = None,
        idempotency_key: str | None = None,
    ) -> Flow:
        """Starts a flow (``POST /api/flows``). Each step is a dict of the API's step
        fields: ``name``, ``kind``, and optionally ``payload``, ``depends_on``,
        ``for_each``, ``queue``, ``max_attempts``, ``priority``, ``timeout_seconds``,
        ``group_key`` (every task of the step gets it).
        An invalid graph raises RotaError ``invalid_request`` (400) naming the step, and
        nothing is written. With an ``idempotency_key`` a live or succeeded flow holds,
        that flow is returned; ``start_flow_status`` tells the two apart."""
        flow, _ = self.start_flow_status(steps, name=name, queue=queue, idempotency_key=idempotency_key)
        return flow

    def start_flow_status(
        self,
        steps: Iterable[Mapping[str, Any]],
        *,
        name: str | None = None,
        queue: str | None = None,
        idempotency_key: str | None = None,
    ) -> tuple[Flow, bool]:
        """Like ``start_flow``; also returns True when the flow is new (201), False for an
        idempotency hit (200)."""
        body: dict[str, Any] = {"steps": [dict(s) for s in steps]}
        for key, value in (("name", name), ("queue", queue), ("idempotency_key", idempotency_key)):
            if value is not None:
                body[key] = value
        status, answer = self._call("POST", "/api/flows", body)
        return Flow.from_json(answer), status == 201

    def get_flow(self, flow_id: str) -> Flow:
        """``GET /api/flows/{id}``: the flow with its steps; RotaError ``not_found`` (404)."""
        _, body = self._call("GET", f"/api/flows/{_seg(flow_id)}")
        return Flow.from_json(body)

    def list_flows(
        self,
        *,
        status: str | Iterable[str] | None = None,
        name: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> tuple[list[Flow], str]:
        """``GET /api/flows``: one page of flows, newest first, without their steps, and
        the next cursor (``""`` on the last page)."""
        query: dict[str, str] = {}
        if status:
            query["status"] = status if isinstance(status, str) else ",".join(status)
        if name:
            query["name"] = name
        if limit:
            query["limit"] = str(limit)
        if cursor:
            query["cursor"] = cursor
        path = "/api/flows" + ("?" + urllib.parse.urlencode(query) if query else "")
        _, body = self._call("GET", path)
        return [Flow.from_json(f) for f in body["flows"]], body["next_cursor"]

    def cancel_flow(self, flow_id: str) -> Flow:
        """``POST /api/flows/{id}/cancel``: a RUNNING flow becomes CANCELED (409 once it
        ended SUCCEEDED or FAILED)."""
        _, body = self._call("POST", f"/api/flows/{_seg(flow_id)}/cancel")
        return Flow.from_json(body)

    def replay_flow(self, flow_id: str) -> Flow:
        """``POST /api/flows/{id}/replay``: a FAILED or CANCELED flow runs its failed and
        canceled steps again (RUNNING); 409 otherwise."""
        _, body = self._call("POST", f"/api/flows/{_seg(flow_id)}/replay")
        return Flow.from_json(body)

    # --- worker protocol ---------------------------------------------------------------

    def claim(
        self,
        queue: str,
        worker_id: str,
        *,
        limit: int = 1,
        lease_seconds: int = 30,
        wait_seconds: float = 0,
    ) -> list[ClaimedTask]:
        """``POST /api/queues/{queue}/claim``: leases up to ``limit`` (max 100) due tasks.
        With ``wait_seconds`` (max 20) it long-polls until a task is due."""
        body = {"worker_id": worker_id, "limit": limit, "lease_seconds": lease_seconds, "wait_seconds": wait_seconds}
        _, answer = self._call("POST", f"/api/queues/{_seg(queue)}/claim", body, timeout=self.timeout + wait_seconds)
        return [ClaimedTask.from_json(t) for t in answer["tasks"]]

    def heartbeat(
        self, task_id: str, lease_token: str, *, lease_seconds: int | None = None, traceparent: str | None = None
    ) -> Task:
        """Extends the lease. A set ``cancel_requested_at`` in the answer means: stop and
        report ``fail``. RotaError ``lease_lost`` (409): stop and report nothing."""
        body: dict[str, Any] = {"lease_token": lease_token}
        if lease_seconds is not None:
            body["lease_seconds"] = lease_seconds
        _, answer = self._call("POST", f"/api/tasks/{_seg(task_id)}/heartbeat", body, trace=(traceparent, None))
        return Task.from_json(answer)

    def complete(self, task_id: str, lease_token: str, *, output: Any = None,
                 traceparent: str | None = None) -> Task:
        """Records success (SUCCEEDED), with ``output`` as the task's result (any JSON
        value, at most ``MAX_OUTPUT_BYTES``; None: none). RotaError ``lease_lost`` (409)
        when the lease is gone, ``payload_too_large`` (413) when the output is larger (the
        task is unchanged: still PROCESSING under the lease). ``traceparent`` (the claimed
        task's) puts the request in the task's trace."""
        body: dict[str, Any] = {"lease_token": lease_token}
        if output is not None:
            body["output"] = output
        _, answer = self._call("POST", f"/api/tasks/{_seg(task_id)}/complete", body, trace=(traceparent, None))
        return Task.from_json(answer)

    def fail(
        self,
        task_id: str,
        lease_token: str,
        error: str,
        *,
        retryable: bool = True,
        retry_after_seconds: float | None = None,
        traceparent: str | None = None,
    ) -> Task:
        """Records a failed attempt: retried (PENDING after ``retry_after_seconds`` or the
        server's backoff) or DEAD when attempts are used up; FAILED when not retryable;
        CANCELED when a cancel was requested. RotaError ``lease_lost`` (409) when the
        lease is gone."""
        body: dict[str, Any] = {"lease_token": lease_token, "error": error or "failed", "retryable": retryable}
        if retry_after_seconds is not None and retryable:
            body["retry_after_seconds"] = retry_after_seconds
        _, answer = self._call("POST", f"/api/tasks/{_seg(task_id)}/fail", body, trace=(traceparent, None))
        return Task.from_json(answer)

    # --- transport ---------------------------------------------------------------------

    def _call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        timeout: float | None = None,
        trace: tuple[str | None, str | None] = (None, None),
    ) -> tuple[int, Any]:
        data = None
        headers = {"Accept": "application/json"}
        traceparent, tracestate = trace
        if traceparent:  # W3C Trace Context, passed through as is
            headers["traceparent"] = traceparent
            if tracestate:
                headers["tracestate"] = tracestate
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        req = urllib.request.Request(self.base_url + path, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=timeout or self.timeout) as resp:
                raw = resp.read()
                return resp.status, (json.loads(raw) if raw else None)
        except urllib.error.HTTPError as err:
            raise _api_error(err) from None
        except (OSError, http.client.HTTPException) as err:  # URLError, timeouts, resets, cut bodies
            reason = getattr(err, "reason", err)
            raise RotaError("connection_error", f"{method} {self.base_url}{path}: {reason}") from err
        except ValueError as err:  # a 2xx whose body is not JSON: not Rota, or a proxy in between
            raise RotaError("invalid_response", f"{method} {self.base_url}{path}: {err}") from err


MAX_OUTPUT_BYTES = 1 << 20
"""A task's output at most: 1 MiB of compact JSON text (the server answers 413 past it)."""


def check_output(output: Any) -> None:
    """Raises ValueError when ``output`` cannot be a task's output: it does not encode as
    JSON (NaN and infinities included) or is larger than ``MAX_OUTPUT_BYTES`` of compact
    JSON, measured as the server measures it."""
    try:
        text = json.dumps(output, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as err:
        raise ValueError(f"the output does not encode as JSON: {err}") from None
    size = len(text.encode())
    if size > MAX_OUTPUT_BYTES:
        raise ValueError(f"the output is {size} bytes of JSON, more than the {MAX_OUTPUT_BYTES} allowed")


def _seg(value: str) -> str:
    """Quotes one path segment (ids and queue names are plain, but never trust that)."""
    return urllib.parse.quote(str(value), safe="")


def _api_error(err: urllib.error.HTTPError) -> RotaError:
    raw = err.read()
    code, message = "http_error", raw.decode("utf-8", "replace").strip() or err.reason
    try:
        e = json.loads(raw)["error"]
        code, message = e["code"], e["message"]
    except (ValueError, KeyError, TypeError):
        pass
    retry_after = None
    header = err.headers.get("Retry-After") if err.headers else None
    if header:
        try:
            retry_after = float(header)
        except ValueError:
            pass
    return RotaError(code, str(message), err.code, retry_after)
