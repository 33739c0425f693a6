"""A worker that runs Python handlers for Rota tasks over the HTTP worker protocol.

The shape of one attempt: claim (long poll) -> run the handler in a thread while a
heartbeat thread extends the lease -> complete or fail. Python threads cannot be killed,
so stopping a handler is cooperative: the handler's ``TaskContext`` says when it should
stop (``ctx.cancelled``, ``ctx.wait()``, ``ctx.raise_if_cancelled()``).

Shutdown order (``stop()``, SIGTERM or SIGINT): stop claiming; let running handlers
finish and report within ``shutdown_grace`` seconds; then mark the rest cancelled
(``reason == "shutdown"``), stop their heartbeats and report nothing for them: their
leases expire and the server's lease reaper gives the tasks to another worker.
"""

from __future__ import annotations

import logging
import math
import os
import signal
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from types import FrameType
from typing import Any, Callable, Sequence

from .client import Client, check_output
from .errors import Cancelled, PermanentError, Retry, RotaError
from .models import ClaimedTask

Handler = Callable[["TaskContext"], Any]
"""A handler takes the task's context; returning means success, raising means failure.

What it returns (any JSON value, at most 1 MiB of compact JSON) becomes the task's output;
None means none. A handler may instead call ``ctx.set_output(value)``: once it has, that
value is the output and the return value is ignored. An output that cannot be kept fails
the task permanently, rather than losing the result."""

_MAX_CLAIM = 100  # the API's cap on one claim's limit


class TaskContext:
    """What a handler gets: the task and the signal to stop.

    ``cancelled`` turns True when the attempt should stop: the task was cancelled
    (``cancel_reason == "cancel_requested"``), the lease was lost (``"lease_lost"``: another
    worker may run the task now, so stop without side effects), the task's timeout passed
    (``"timeout"``) or the worker's shutdown grace ended (``"shutdown"``).
    """

    def __init__(self, task: ClaimedTask, worker_id: str, logger: logging.Logger) -> None:
        self.task = task
        self.worker_id = worker_id
        self.logger = logger
        self._event = threading.Event()
        self._lock = threading.Lock()
        self.cancel_reason: str | None = None
        self.cancel_requested = False
        self.lease_lost = False
        self.timed_out = False
        #: The result ``set_output`` set, sent with ``complete`` in place of the return value.
        self.output: Any = None
        self._output_set = False

    @property
    def id(self) -> str:
        return self.task.id

    @property
    def kind(self) -> str:
        return self.task.kind

    @property
    def queue(self) -> str:
        return self.task.queue

    @property
    def payload(self) -> Any:
        return self.task.payload

    @property
    def attempt(self) -> int:
        """1 for the first attempt."""
        return self.task.attempt_count

    # A flow step's task (DESIGN.md section 10): its flow, step, inputs and element.

    @property
    def flow_id(self) -> str | None:
        """The flow the task's step belongs to; None for a plain task."""
        return self.task.flow_id

    @property
    def step(self) -> str | None:
        """The name of the flow step the task runs; None for a plain task."""
        return self.task.step

    @property
    def inputs(self) -> dict[str, Any]:
        """Each dependency's output by step name ({} for a step without dependencies or a
        plain task)."""
        return self.task.inputs or {}

    def input(self, step: str) -> Any:
        """The output of the dependency called ``step`` (KeyError when it is none)."""
        return self.inputs[step]

    @property
    def item(self) -> Any:
        """The element a for_each step's task runs for (None for other tasks; check
        ``index``, as an element may be None too)."""
        return self.task.item

    @property
    def index(self) -> int | None:
        """The 0-based position of a for_each task's element; None for other tasks."""
        return self.task.index

    def set_output(self, value: Any) -> None:
        """Sets the task's result, sent with ``complete`` once the handler returns, in place
        of whatever the handler returns: any JSON value of at most ``MAX_OUTPUT_BYTES`` as
        compact JSON (None: none). A later call replaces an earlier one. Raises ValueError
        at once (``check_output``) for a value that cannot be kept, so the handler can
        still decide; the value is checked again before ``complete``."""
        if value is not None:
            check_output(value)
        self.output = value
        self._output_set = True

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def wait(self, seconds: float | None = None) -> bool:
        """Sleeps up to ``seconds``, waking early on cancellation; True if cancelled."""
        return self._event.wait(seconds)

    def raise_if_cancelled(self) -> None:
        """Raises ``Cancelled`` once the attempt should stop."""
        if self._event.is_set():
            raise Cancelled(self.cancel_reason or "cancelled")

    def _cancel(self, reason: str) -> None:
        with self._lock:
            if reason == "cancel_requested":
                self.cancel_requested = True
            elif reason == "lease_lost":
                self.lease_lost = True
            elif reason == "timeout":
                self.timed_out = True
            if self.cancel_reason is None:
                self.cancel_reason = reason
        self._event.set()


@dataclass
class WorkerStats:
    """Counters of one worker, for logs and tests."""

    claimed: int = 0
    succeeded: int = 0
    failed: int = 0  # fail reported: retry, permanent, cancel, timeout, unknown kind
    lease_lost: int = 0  # outcomes not reported (or refused with 409) because the lease was gone
    abandoned: int = 0  # handlers still running when the shutdown grace ended


class _Attempt:
    """One running attempt: its context and whether its outcome is settled."""

    def __init__(self, task: ClaimedTask, ctx: TaskContext) -> None:
        self.task = task
        self.ctx = ctx
        self.settled = threading.Event()  # outcome reported (or dropped): heartbeats stop
        self.abandoned = False


class Worker:
    """Claims tasks from ``queues`` and runs the handler registered for each task's kind.

    - ``client``: the ``Client`` to use (default: ``Client()``, from ``ROTA_SERVER`` and
      ``ROTA_API_TOKEN``).
    - ``concurrency``: handler threads at most (default 10); a claim never asks for more
      tasks than there are free threads. With several queues, one claim holds at most
      ``ceil(concurrency / len(queues))`` of them while it waits.
    - ``lease_seconds``: lease of a claim and of each heartbeat (default 30).
    - ``heartbeat_interval``: seconds between heartbeats (default ``lease_seconds / 3``).
    - ``wait_seconds``: long-poll wait of a claim (default 5, max 20); a shutdown waits
      for the claim under way, so this also bounds how long ``stop()`` takes to stop claiming.
    - ``shutdown_grace``: seconds running handlers get to finish after ``stop()`` (default 30).
    - ``worker_id``: names this worker in the task history (default host-pid-random).
    """

    def __init__(
        self,
        client: Client | None = None,
        *,
        queues: Sequence[str] = ("default",),
        concurrency: int = 10,
        lease_seconds: int = 30,
        heartbeat_interval: float | None = None,
        wait_seconds: float = 5.0,
        shutdown_grace: float = 30.0,
        worker_id: str | None = None,
        logger: logging.Logger | None = None,
    ) -> None:
        if isinstance(queues, str):
            queues = [queues]
        if not queues:
            raise ValueError("a worker needs at least one queue")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if not 1 <= lease_seconds <= 3600:
            raise ValueError("lease_seconds must be between 1 and 3600")
        if heartbeat_interval is not None and heartbeat_interval <= 0:
            raise ValueError("heartbeat_interval must be positive")
        if not 0 <= wait_seconds <= 20:
            raise ValueError("wait_seconds must be between 0 and 20")
        self.client = client or Client()
        self.queues = list(queues)
        self.concurrency = concurrency
        self.lease_seconds = lease_seconds
        self.heartbeat_interval = heartbeat_interval if heartbeat_interval is not None else lease_seconds / 3
        self.wait_seconds = wait_seconds
        self.shutdown_grace = shutdown_grace
        self.worker_id = worker_id or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.log = logger or logging.getLogger("rota.worker")
        self.stats = WorkerStats()
        self._handlers: dict[str, Handler] = {}
        self._stop = threading.Event()
        self._grace_cut = threading.Event()  # a second signal ends the grace period at once
        self._slots = threading.Condition()
        self._free = concurrency
        self._running: set[_Attempt] = set()
        self._stats_lock = threading.Lock()
        self._claimers: list[threading.Thread] = []
        self._runner: threading.Thread | None = None

    # --- handlers ----------------------------------------------------------------------

    def register(self, kind: str, handler: Handler) -> None:
        """Runs ``handler(ctx)`` for tasks of ``kind``."""
        self._handlers[kind] = handler

    def handler(self, kind: str) -> Callable[[Handler], Handler]:
        """Decorator form of ``register``: ``@worker.handler("email.send")``."""

        def decorate(fn: Handler) -> Handler:
            self.register(kind, fn)
            return fn

        return decorate

    # --- lifecycle ---------------------------------------------------------------------

    def run(self, *, install_signal_handlers: bool = True) -> None:
        """Works until ``stop()`` or SIGTERM/SIGINT, then shuts down (see the module doc).

        A second signal ends the grace period at once.
        """
        restore = self._install_signals() if install_signal_handlers else {}
        try:
            self._start_claimers()
            self._stop.wait()
            self._shutdown()
        finally:
            for sig, previous in restore.items():
                signal.signal(sig, previous)

    def start(self) -> None:
        """Runs the worker in a background thread (without signal handlers)."""
        self._runner = threading.Thread(target=self.run, kwargs={"install_signal_handlers": False},
                                        name=f"rota-worker-{self.worker_id}", daemon=True)
        self._runner.start()

    def stop(self) -> None:
        """Asks the worker to shut down; ``run`` returns once it has."""
        self._stop.set()
        with self._slots:
            self._slots.notify_all()

    def join(self, timeout: float | None = None) -> bool:
        """Waits for a ``start``-ed worker to finish; True once it has."""
        if self._runner is None:
            return True
        self._runner.join(timeout)
        return not self._runner.is_alive()

    def _install_signals(self) -> dict[int, Any]:
        if threading.current_thread() is not threading.main_thread():
            return {}

        def on_signal(signum: int, _frame: FrameType | None) -> None:
            if self._stop.is_set():
                self.log.warning("second %s: ending the shutdown grace period now", signal.Signals(signum).name)
                self._grace_cut.set()
                return
            self.log.info("%s: stopping (no new claims; running handlers get %ss)",
                          signal.Signals(signum).name, self.shutdown_grace)
            self.stop()

        previous = {}
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, on_signal)
        return previous

    def _start_claimers(self) -> None:
        self.log.info("worker %s started: queues=%s concurrency=%d lease=%ss",
                      self.worker_id, ",".join(self.queues), self.concurrency, self.lease_seconds)
        per_claim = min(_MAX_CLAIM, math.ceil(self.concurrency / len(self.queues)))
        for queue in self.queues:
            t = threading.Thread(target=self._claim_loop, args=(queue, per_claim),
                                 name=f"rota-claim-{queue}", daemon=True)
            t.start()
            self._claimers.append(t)

    def _shutdown(self) -> None:
        deadline = time.monotonic() + self.shutdown_grace
        with self._slots:
            # A claim under way may still hand out tasks: they run like the others.
            while (self._running or any(t.is_alive() for t in self._claimers)) and not self._grace_cut.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._slots.wait(min(left, 0.1))
            leftover = list(self._running)
        for att in leftover:
            att.abandoned = True
            att.settled.set()  # stops its heartbeats: the lease expires, the reaper retries it
            att.ctx._cancel("shutdown")
            self._count("abandoned")
            self.log.warning("task %s (%s) still running after the shutdown grace; leaving it to the lease reaper",
                             att.task.id, att.task.kind)
        self.log.info("worker %s stopped", self.worker_id)

    # --- claiming ----------------------------------------------------------------------

    def _reserve(self, most: int) -> int:
        """Takes up to ``most`` free slots, waiting for one; 0 once the worker stops."""
        with self._slots:
            while self._free == 0 and not self._stop.is_set():
                self._slots.wait()
            if self._stop.is_set():
                return 0
            n = min(self._free, most)
            self._free -= n
            return n

    def _release(self, n: int) -> None:
        if n:
            with self._slots:
                self._free += n
                self._slots.notify_all()

    def _claim_loop(self, queue: str, per_claim: int) -> None:
        backoff = 0.0
        while not self._stop.is_set():
            n = self._reserve(per_claim)
            if n == 0:
                return
            try:
                tasks = self.client.claim(queue, self.worker_id, limit=n, lease_seconds=self.lease_seconds,
                                          wait_seconds=self.wait_seconds)
            except Exception as err:  # noqa: BLE001 - the claim loop must outlive any error
                self._release(n)
                backoff = min(5.0, max(0.2, backoff * 2))
                retry_after = err.retry_after if isinstance(err, RotaError) else None
                pause = retry_after if retry_after is not None else backoff
                self.log.warning("claim from queue %s failed: %s; retrying in %.1fs", queue, err, pause)
                self._stop.wait(pause)
                continue
            backoff = 0.0
            self._release(n - len(tasks))
            for task in tasks:
                self._count("claimed")
                self._launch(task)

    # --- one attempt -------------------------------------------------------------------

    def _launch(self, task: ClaimedTask) -> None:
        ctx = TaskContext(task, self.worker_id, self.log)
        att = _Attempt(task, ctx)
        with self._slots:
            self._running.add(att)
        threading.Thread(target=self._heartbeat_loop, args=(att,), name=f"rota-hb-{task.id}", daemon=True).start()
        threading.Thread(target=self._execute, args=(att,), name=f"rota-task-{task.id}", daemon=True).start()

    def _execute(self, att: _Attempt) -> None:
        task, ctx = att.task, att.ctx
        timer = None
        if task.timeout_seconds > 0:
            timer = threading.Timer(task.timeout_seconds, ctx._cancel, args=("timeout",))
            timer.daemon = True
            timer.start()
        try:
            output, err = self._call(att)
            if timer:
                timer.cancel()
            if not att.abandoned:
                self._report(att, err, output)
        finally:
            att.settled.set()
            with self._slots:
                self._running.discard(att)
                self._free += 1
                self._slots.notify_all()

    def _call(self, att: _Attempt) -> tuple[Any, BaseException | None]:
        """Runs the handler: the task's output (what it gave ``ctx.set_output``, else its
        return value) or its exception."""
        handler = self._handlers.get(att.task.kind)
        if handler is None:
            return None, LookupError(f"no handler registered for kind {att.task.kind!r} on worker {self.worker_id}")
        try:
            output = handler(att.ctx)
        except Exception as err:  # noqa: BLE001 - any exception is a (retryable) failure
            return None, err
        if att.ctx._output_set:
            output = att.ctx.output
        if output is not None:
            try:
                check_output(output)
            except ValueError as err:
                # Checked here, not left to the server's 413: a success whose result cannot
                # be kept fails for good, with the reason, instead of silently losing it.
                return None, PermanentError(f"invalid output: {err}")
        return output, None

    def _report(self, att: _Attempt, err: BaseException | None, output: Any = None) -> None:
        task, ctx = att.task, att.ctx
        if ctx.lease_lost:
            self._count("lease_lost")
            self.log.warning("task %s: lease lost; handler finished, outcome not reported (%s)",
                             task.id, "ok" if err is None else _describe(err))
            return
        if err is None:
            self._send(att, "complete", lambda: self.client.complete(task.id, task.lease_token, output=output,
                                                                      traceparent=task.traceparent or None))
            return
        retryable, after = True, None
        message = _describe(err)
        if ctx.cancel_requested:
            pass  # the server records CANCELED for a fail of a task whose cancel was requested
        elif isinstance(err, PermanentError):
            retryable = False
        elif isinstance(err, Retry):
            after = err.after
        elif ctx.timed_out:
            message = f"attempt timed out after {task.timeout_seconds}s: {message}"
        self._send(att, "fail", lambda: self.client.fail(task.id, task.lease_token, message,
                                                          retryable=retryable, retry_after_seconds=after,
                                                          traceparent=task.traceparent or None))

    def _send(self, att: _Attempt, verb: str, call: Callable[[], Any]) -> None:
        """Reports the outcome, retrying transient errors a few times while the lease lasts."""
        task = att.task
        for pause in (0.5, 1.0, 2.0, None):
            try:
                result = call()
            except Exception as exc:  # noqa: BLE001 - an unexpected error must not kill the thread
                err = exc if isinstance(exc, RotaError) else RotaError("client_error", repr(exc))
                if err.status == 409 or err.status == 404:
                    self._count("lease_lost")
                    self.log.warning("task %s: %s refused (%s); the lease was lost, another worker owns the task",
                                     task.id, verb, err.code)
                    return
                if pause is None or 400 <= err.status < 500:
                    self.log.error("task %s: %s failed: %s; the lease reaper will retry the task", task.id, verb, err)
                    return
                self.log.warning("task %s: %s failed: %s; retrying", task.id, verb, err)
                time.sleep(pause)
                continue
            self._count("succeeded" if verb == "complete" else "failed")
            self.log.info("task %s (%s) attempt %d: %s -> %s", task.id, task.kind, task.attempt_count, verb,
                          getattr(result, "status", "?"))
            return

    def _heartbeat_loop(self, att: _Attempt) -> None:
        task, ctx = att.task, att.ctx
        while not att.settled.wait(self.heartbeat_interval):
            try:
                answer = self.client.heartbeat(task.id, task.lease_token, lease_seconds=self.lease_seconds,
                                               traceparent=task.traceparent or None)
            except Exception as exc:  # noqa: BLE001 - keep heartbeating through transient errors
                err = exc if isinstance(exc, RotaError) else RotaError("client_error", repr(exc))
                if att.settled.is_set():
                    return
                if err.status in (404, 409):
                    ctx._cancel("lease_lost")
                    self.log.warning("task %s: lease lost (%s); stopping the handler", task.id, err.code)
                    return
                self.log.warning("task %s: heartbeat failed: %s", task.id, err)
                continue
            if answer.cancel_requested_at and not ctx.cancel_requested:
                self.log.info("task %s: cancel requested; stopping the handler", task.id)
                ctx._cancel("cancel_requested")

    def _count(self, name: str) -> None:
        with self._stats_lock:
            setattr(self.stats, name, getattr(self.stats, name) + 1)


def _describe(err: BaseException) -> str:
    text = str(err)
    return f"{type(err).__name__}: {text}" if text else type(err).__name__
