"""The Worker against a real `rota serve`: outcomes, cancel, timeout, concurrency, shutdown,
and a late outcome after a lost lease (see _support)."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta, timezone

from _support import IntegrationTest, wait_status, wait_until

from rota import (
    CANCELED, DEAD, FAILED, PENDING, PROCESSING, SUCCEEDED, Cancelled, Client, PermanentError, Retry,
    TaskContext, Worker, parse_time,
)


class WorkerTest(IntegrationTest):
    def worker(self, **kw) -> Worker:
        kw.setdefault("queues", [self.queue])
        kw.setdefault("wait_seconds", 0.5)
        kw.setdefault("lease_seconds", 5)
        kw.setdefault("shutdown_grace", 5)
        w = Worker(Client(self.client.base_url), **kw)
        self.addCleanup(lambda: (w.stop(), w.join(15)))
        return w

    def test_processes_tasks(self) -> None:
        w = self.worker(concurrency=4)
        seen: list[object] = []

        @w.handler("add")
        def add(ctx: TaskContext) -> None:
            seen.append(ctx.payload["a"] + ctx.payload["b"])

        tasks = self.client.enqueue_many([{"kind": "add", "queue": self.queue, "payload": {"a": i, "b": 1}}
                                          for i in range(10)])
        w.start()
        for t in tasks:
            done = wait_status(self.client, t.id, SUCCEEDED)
            self.assertEqual((done.attempt_count, done.worker_id), (1, w.worker_id))
        self.assertEqual(sorted(seen), list(range(1, 11)))
        self.assertEqual(w.stats.succeeded, 10)

    def test_concurrency_bounds_running_handlers(self) -> None:
        w = self.worker(concurrency=3)
        running, peak, lock = 0, 0, threading.Lock()

        def busy(ctx: TaskContext) -> None:
            nonlocal running, peak
            with lock:
                running += 1
                peak = max(peak, running)
            time.sleep(0.1)
            with lock:
                running -= 1

        w.register("busy", busy)
        tasks = self.client.enqueue_many([{"kind": "busy", "queue": self.queue} for _ in range(12)])
        w.start()
        for t in tasks:
            wait_status(self.client, t.id, SUCCEEDED)
        self.assertLessEqual(peak, 3)
        self.assertGreater(peak, 1)

    def test_retry_after_then_success(self) -> None:
        w = self.worker()

        @w.handler("flaky")
        def flaky(ctx: TaskContext) -> None:
            if ctx.attempt == 1:
                raise Retry("not yet", after=0.2)

        t = self.client.enqueue("flaky", queue=self.queue, max_attempts=3)
        w.start()
        done = wait_status(self.client, t.id, SUCCEEDED)
        self.assertEqual(done.attempt_count, 2)
        self.assertEqual([(a.outcome, a.error) for a in self.client.attempts(t.id)],
                         [("RETRIED", "Retry: not yet"), ("SUCCEEDED", None)])

    def test_retry_after_sets_the_due_time(self) -> None:
        w = self.worker()
        w.register("later", lambda ctx: (_ for _ in ()).throw(Retry(after=3600)))
        t = self.client.enqueue("later", queue=self.queue)
        before = datetime.now(timezone.utc)
        w.start()
        back = wait_until("the retry to be recorded",
                          lambda: (x := self.client.get(t.id)).status == PENDING and x.attempt_count == 1 and x)
        self.assertGreater(parse_time(back.scheduled_for), before + timedelta(minutes=55))

    def test_return_value_is_the_output(self) -> None:
        w = self.worker()
        w.register("sum", lambda ctx: {"total": sum(ctx.payload["nums"])})
        w.register("nothing", lambda ctx: None)
        w.register("scalar", lambda ctx: [ctx.attempt, "done"])
        summed = self.client.enqueue("sum", {"nums": [1, 2, 3]}, queue=self.queue)
        nothing = self.client.enqueue("nothing", queue=self.queue)
        scalar = self.client.enqueue("scalar", queue=self.queue)
        w.start()
        self.assertEqual(wait_status(self.client, summed.id, SUCCEEDED).output, {"total": 6})
        self.assertIsNone(wait_status(self.client, nothing.id, SUCCEEDED).output)
        self.assertEqual(wait_status(self.client, scalar.id, SUCCEEDED).output, [1, "done"])

    def test_output_that_cannot_be_kept_fails_the_task(self) -> None:
        w = self.worker()
        w.register("huge", lambda ctx: "x" * (1 << 20))  # 2 bytes over with its quotes
        w.register("not_json", lambda ctx: {"when": datetime.now(timezone.utc)})
        huge = self.client.enqueue("huge", queue=self.queue, max_attempts=5)
        not_json = self.client.enqueue("not_json", queue=self.queue, max_attempts=5)
        w.start()
        for t, why in ((huge, "more than the 1048576 allowed"), (not_json, "does not encode as JSON")):
            done = wait_status(self.client, t.id, FAILED)
            self.assertEqual((done.attempt_count, done.output), (1, None))
            self.assertIn("invalid output", done.last_error)
            self.assertIn(why, done.last_error)

    def test_permanent_error_fails_at_once(self) -> None:
        w = self.worker()

        @w.handler("bad")
        def bad(ctx: TaskContext) -> None:
            raise PermanentError("malformed input")

        t = self.client.enqueue("bad", queue=self.queue, max_attempts=5)
        w.start()
        done = wait_status(self.client, t.id, FAILED)
        self.assertEqual(done.attempt_count, 1)
        self.assertIn("malformed input", done.last_error)

    def test_any_exception_retries_until_dead(self) -> None:
        w = self.worker()

        @w.handler("boom")
        def boom(ctx: TaskContext) -> None:
            raise ValueError("boom")

        t = self.client.enqueue("boom", queue=self.queue, max_attempts=1)
        w.start()
        done = wait_status(self.client, t.id, DEAD)
        self.assertEqual(done.last_error, "ValueError: boom")

    def test_unknown_kind_fails_retryable(self) -> None:
        w = self.worker()
        t = self.client.enqueue("nobody.handles.this", queue=self.queue, max_attempts=1)
        w.start()
        done = wait_status(self.client, t.id, DEAD)
        self.assertIn("no handler registered for kind 'nobody.handles.this'", done.last_error)

    def test_cancel_stops_a_running_handler(self) -> None:
        w = self.worker(heartbeat_interval=0.2)
        started, reasons = threading.Event(), []

        @w.handler("long")
        def long(ctx: TaskContext) -> None:
            started.set()
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:  # would run for a minute
                try:
                    ctx.raise_if_cancelled()
                except Cancelled as c:
                    reasons.append(c.reason)
                    raise
                time.sleep(0.02)

        t = self.client.enqueue("long", queue=self.queue)
        w.start()
        self.assertTrue(started.wait(20))
        self.assertEqual(self.client.cancel(t.id).status, PROCESSING)
        done = wait_status(self.client, t.id, CANCELED, timeout=10)
        self.assertEqual(reasons, ["cancel_requested"])
        self.assertEqual(done.attempt_count, 1)
        self.assertEqual(self.client.attempts(t.id)[-1].outcome, "CANCELED")

    def test_timeout_seconds_cancels_the_context(self) -> None:
        w = self.worker()

        @w.handler("slow")
        def slow(ctx: TaskContext) -> None:
            if ctx.wait(60):
                ctx.raise_if_cancelled()

        t = self.client.enqueue("slow", queue=self.queue, timeout_seconds=1, max_attempts=1)
        w.start()
        done = wait_status(self.client, t.id, DEAD)
        self.assertIn("timed out after 1s", done.last_error)

    def test_shutdown_lets_running_handlers_finish(self) -> None:
        w = self.worker(shutdown_grace=20)
        started = threading.Event()

        @w.handler("job")
        def job(ctx: TaskContext) -> None:
            started.set()
            time.sleep(0.5)

        t = self.client.enqueue("job", queue=self.queue)
        w.start()
        self.assertTrue(started.wait(20))
        w.stop()
        self.assertTrue(w.join(20))
        self.assertEqual(self.client.get(t.id).status, SUCCEEDED)
        self.assertEqual((w.stats.succeeded, w.stats.abandoned), (1, 0))

    def test_shutdown_grace_leaves_stuck_handlers_to_the_reaper(self) -> None:
        w = self.worker(shutdown_grace=0.3, lease_seconds=1, heartbeat_interval=0.2)
        started, release = threading.Event(), threading.Event()
        self.addCleanup(release.set)

        @w.handler("stuck")
        def stuck(ctx: TaskContext) -> None:
            started.set()
            release.wait(30)

        t = self.client.enqueue("stuck", queue=self.queue)
        w.start()
        self.assertTrue(started.wait(20))
        w.stop()
        self.assertTrue(w.join(20))
        self.assertEqual(w.stats.abandoned, 1)
        release.set()
        # No outcome was reported: heartbeats stopped, the lease expires and the reaper
        # returns the task for another worker.
        wait_until("the reaper to take the task back",
                   lambda: [a.outcome for a in self.client.attempts(t.id)] == ["LEASE_EXPIRED"])
        self.assertEqual(w.stats.succeeded + w.stats.failed, 0)

    def test_late_outcome_after_lease_loss_is_refused(self) -> None:
        # Worker A's heartbeats never come (interval far beyond the lease): its lease
        # expires while the handler still runs, the reaper takes the task back, worker B
        # runs it. A's handler then returns: its complete is refused (409) and not counted.
        a = self.worker(worker_id="py-a-" + self.queue, concurrency=1, lease_seconds=1, heartbeat_interval=3600)
        b = self.worker(worker_id="py-b-" + self.queue)
        started, release, runs = threading.Event(), threading.Event(), []
        self.addCleanup(release.set)

        @a.handler("once")
        def on_a(ctx: TaskContext) -> None:
            started.set()
            release.wait(30)  # ignores its context, like a handler stuck in a library call
            runs.append("a")

        @b.handler("once")
        def on_b(ctx: TaskContext) -> None:
            runs.append("b")

        t = self.client.enqueue("once", queue=self.queue, max_attempts=3)
        a.start()
        self.assertTrue(started.wait(20))
        b.start()
        wait_status(self.client, t.id, SUCCEEDED)
        release.set()
        wait_until("A's late outcome to be refused", lambda: a.stats.lease_lost == 1)
        self.assertEqual((a.stats.succeeded, a.stats.failed, b.stats.succeeded), (0, 0, 1))
        self.assertEqual(sorted(runs), ["a", "b"])
        attempts = self.client.attempts(t.id)
        self.assertEqual([(x.worker_id, x.outcome) for x in attempts],
                         [(a.worker_id, "LEASE_EXPIRED"), (b.worker_id, "SUCCEEDED")])
        self.assertEqual(self.client.get(t.id).status, SUCCEEDED)
