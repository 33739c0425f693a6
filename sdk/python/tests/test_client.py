"""Client round trips against a real `rota serve` (see _support)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

from _support import IntegrationTest, wait_status

from rota import CANCELED, MAX_OUTPUT_BYTES, PENDING, PROCESSING, SUCCEEDED, Client, NewTask, RotaError, parse_time


class ClientTest(IntegrationTest):
    def test_enqueue_get_and_idempotency(self) -> None:
        key = "k-" + uuid.uuid4().hex
        t = self.client.enqueue("report.build", {"n": 1}, queue=self.queue, priority=5, max_attempts=3,
                                timeout_seconds=9, idempotency_key=key)
        self.assertEqual((t.kind, t.queue, t.status, t.priority, t.max_attempts, t.timeout_seconds),
                         ("report.build", self.queue, PENDING, 5, 3, 9))
        self.assertEqual(t.payload, {"n": 1})
        # No worker serves the queue: created all the same, with a warning that says so.
        self.assertTrue(any(self.queue in w for w in t.warnings), t.warnings)
        got = self.client.get(t.id)
        self.assertEqual(got, t)
        self.assertEqual(got.warnings, [])

        again, created = self.client.enqueue_status(NewTask("report.build", {"n": 2}, queue=self.queue,
                                                            idempotency_key=key))
        self.assertFalse(created)
        self.assertEqual(again.id, t.id)
        _, created = self.client.enqueue_status(NewTask("report.build", queue=self.queue))
        self.assertTrue(created)

    def test_group_key(self) -> None:
        t = self.client.enqueue("x", queue=self.queue, group_key="tenant-1")
        self.assertEqual(t.group_key, "tenant-1")
        self.assertEqual(self.client.get(t.id).group_key, "tenant-1")
        self.assertIsNone(self.client.enqueue("x", queue=self.queue).group_key)
        made = self.client.enqueue_many([NewTask("x", queue=self.queue, group_key="g"), NewTask("x", queue=self.queue)])
        self.assertEqual([m.group_key for m in made], ["g", None])
        with self.assertRaises(RotaError) as cm:
            self.client.enqueue("x", queue=self.queue, group_key="k" * 129)
        self.assertEqual((cm.exception.status, cm.exception.code), (400, "invalid_request"))
        self.assertIn("group_key", cm.exception.message)

    def test_delay_and_scheduled_for(self) -> None:
        delayed = self.client.enqueue("x", queue=self.queue, delay_seconds=3600)
        due = parse_time(delayed.scheduled_for)
        self.assertGreater(due, datetime.now(timezone.utc) + timedelta(minutes=50))
        at = datetime(2030, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
        scheduled = self.client.enqueue("x", queue=self.queue, scheduled_for=at)
        self.assertEqual(parse_time(scheduled.scheduled_for), at)
        with self.assertRaises(ValueError):
            self.client.enqueue("x", queue=self.queue, delay_seconds=1, scheduled_for=at)

    def test_batch_list_and_paging(self) -> None:
        made = self.client.enqueue_many([NewTask("a", {"i": i}, queue=self.queue) for i in range(4)]
                                        + [{"kind": "b", "queue": self.queue}])
        self.assertEqual(len(made), 5)
        page = self.client.list(queue=self.queue, limit=2)
        self.assertEqual(len(page.tasks), 2)
        self.assertNotEqual(page.next_cursor, "")
        seen = [t.id for t in self.client.iter_tasks(queue=self.queue, page_size=2)]
        self.assertEqual(sorted(seen), sorted(t.id for t in made))
        only_b = self.client.list(queue=self.queue, kind="b")
        self.assertEqual([t.kind for t in only_b.tasks], ["b"])
        self.assertEqual(only_b.next_cursor, "")
        self.assertEqual(len(self.client.list(queue=self.queue, status=[PENDING, CANCELED]).tasks), 5)
        self.assertEqual(self.client.list(queue=self.queue, status="SUCCEEDED").tasks, [])

    def test_batch_is_all_or_nothing(self) -> None:
        with self.assertRaises(RotaError) as cm:
            self.client.enqueue_many([NewTask("ok", queue=self.queue), NewTask("bad kind!", queue=self.queue)])
        self.assertEqual((cm.exception.status, cm.exception.code), (400, "invalid_request"))
        self.assertEqual(self.client.list(queue=self.queue).tasks, [])

    def test_cancel_and_replay(self) -> None:
        t = self.client.enqueue("x", queue=self.queue)
        self.assertEqual(self.client.cancel(t.id).status, CANCELED)
        self.assertEqual(self.client.replay(t.id).status, PENDING)
        self.assertEqual([a.outcome for a in self.client.attempts(t.id)], ["REPLAYED"])
        with self.assertRaises(RotaError) as cm:
            self.client.replay(t.id)
        self.assertEqual((cm.exception.status, cm.exception.code), (409, "illegal_transition"))

    def test_errors_carry_code_message_status(self) -> None:
        with self.assertRaises(RotaError) as cm:
            self.client.get(str(uuid.uuid4()))
        e = cm.exception
        self.assertEqual((e.status, e.code), (404, "not_found"))
        self.assertTrue(e.message)
        with self.assertRaises(RotaError) as cm:
            Client("http://127.0.0.1:9", timeout=2).get(str(uuid.uuid4()))
        self.assertEqual((cm.exception.code, cm.exception.status), ("connection_error", 0))

    def test_worker_protocol_by_hand(self) -> None:
        t = self.client.enqueue("x", queue=self.queue)
        claimed = self.client.claim(self.queue, "py-by-hand", limit=5, lease_seconds=30)
        self.assertEqual([c.id for c in claimed], [t.id])
        c = claimed[0]
        self.assertEqual((c.status, c.worker_id, c.attempt_count), (PROCESSING, "py-by-hand", 1))
        self.assertTrue(c.lease_token)
        self.assertIsNone(self.client.heartbeat(c.id, c.lease_token, lease_seconds=60).cancel_requested_at)
        with self.assertRaises(RotaError) as cm:
            self.client.complete(c.id, str(uuid.uuid4()))
        self.assertEqual((cm.exception.status, cm.exception.code), (409, "lease_lost"))
        self.assertTrue(cm.exception.lease_lost)
        self.assertEqual(self.client.complete(c.id, c.lease_token).status, "SUCCEEDED")
        self.assertEqual(self.client.claim(self.queue, "py-by-hand", wait_seconds=0.2), [])
        wait_status(self.client, t.id, "SUCCEEDED")

    def test_complete_with_output(self) -> None:
        t = self.client.enqueue("x", queue=self.queue)
        self.assertIsNone(t.output)
        c = self.client.claim(self.queue, "py-output")[0]
        done = self.client.complete(c.id, c.lease_token, output={"rows": [1, 2], "name": "é"})
        self.assertEqual((done.status, done.output), (SUCCEEDED, {"rows": [1, 2], "name": "é"}))
        self.assertEqual(self.client.get(t.id).output, {"rows": [1, 2], "name": "é"})
        listed = self.client.list(queue=self.queue).tasks
        self.assertEqual([x.output for x in listed], [{"rows": [1, 2], "name": "é"}])

    def test_output_over_1_mib_is_413_and_changes_nothing(self) -> None:
        t = self.client.enqueue("x", queue=self.queue)
        c = self.client.claim(self.queue, "py-output")[0]
        with self.assertRaises(RotaError) as cm:
            self.client.complete(c.id, c.lease_token, output="x" * MAX_OUTPUT_BYTES)  # + 2 quotes
        self.assertEqual((cm.exception.status, cm.exception.code), (413, "payload_too_large"))
        still = self.client.get(t.id)
        self.assertEqual((still.status, still.output), (PROCESSING, None))
        # The lease still holds: an output of exactly the limit completes it.
        done = self.client.complete(c.id, c.lease_token, output="x" * (MAX_OUTPUT_BYTES - 2))
        self.assertEqual((done.status, len(done.output)), (SUCCEEDED, MAX_OUTPUT_BYTES - 2))

    def test_traceparent_reaches_the_claim(self) -> None:
        tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        one = self.client.enqueue("x", queue=self.queue, traceparent=tp, tracestate="rojo=1")
        many = self.client.enqueue_many([{"kind": "x", "queue": self.queue}], traceparent=tp)
        plain = self.client.enqueue("x", queue=self.queue)
        claimed = {c.id: c for c in self.client.claim(self.queue, "py-traced", limit=10)}
        self.assertEqual(len(claimed), 3)
        # The server stores its request span's context (same trace) or, untraced, the header.
        for t in (one, many[0]):
            self.assertEqual(claimed[t.id].traceparent.split("-")[1], "4bf92f3577b34da6a3ce929d0e0e4736")
        self.assertEqual(claimed[one.id].tracestate, "rojo=1")
        self.assertEqual(claimed[plain.id].traceparent, "")
        c = claimed[one.id]
        self.assertEqual(self.client.complete(c.id, c.lease_token, traceparent=c.traceparent).status, "SUCCEEDED")

    def test_token_is_sent(self) -> None:
        if not self.client.token:
            self.skipTest("the server under test runs without a token")
        with self.assertRaises(RotaError) as cm:
            Client(self.client.base_url, token="wrong-" + uuid.uuid4().hex).get(str(uuid.uuid4()))
        self.assertEqual((cm.exception.status, cm.exception.code), (401, "unauthorized"))
