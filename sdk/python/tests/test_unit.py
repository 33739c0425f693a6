"""Pure logic against a tiny stdlib fake of the API: no Rota server needed."""

from __future__ import annotations

import json
import threading
import unittest
import unittest.mock
import uuid
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import _support  # puts src/ on sys.path

from rota import (
    MAX_OUTPUT_BYTES, Client, NewTask, PermanentError, Retry, RotaError, Task, TaskContext, Worker, check_output,
)


class FakeAPI:
    """Serves claims of `total` tasks of kind "block" and records what workers send."""

    def __init__(self, total: int = 0) -> None:
        self.lock = threading.Lock()
        self.left = total
        self.outstanding = 0  # claimed, no outcome yet
        self.peak = 0
        self.claim_limits: list[int] = []
        self.heartbeats = 0
        self.lose_leases = False  # heartbeats answer 409 lease_lost
        self.outcomes: list[tuple[str, dict[str, Any]]] = []
        self.headers: list[dict[str, str]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                fake.headers.append(dict(self.headers))
                if self.path.startswith("/api/busy"):
                    self.send(503, b"try later", {"Retry-After": "2"})
                else:
                    self.send_json(404, {"error": {"code": "not_found", "message": "task not found"}})

            def do_POST(self) -> None:
                fake.headers.append(dict(self.headers))
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n)) if n else {}
                parts = self.path.strip("/").split("/")
                if parts[1] == "queues":
                    self.send_json(200, {"tasks": fake.claim(body["limit"])})
                elif parts[-1] == "heartbeat":
                    with fake.lock:
                        fake.heartbeats += 1
                    if fake.lose_leases:
                        self.send_json(409, {"error": {"code": "lease_lost", "message": "lease token is not current"}})
                    else:
                        self.send_json(200, task(parts[2]))
                else:
                    with fake.lock:
                        fake.outstanding -= 1
                        fake.outcomes.append((parts[-1], body))
                    self.send_json(200, task(parts[2]))

            def send_json(self, status: int, obj: Any) -> None:
                self.send(status, json.dumps(obj).encode(), {"Content-Type": "application/json"})

            def send(self, status: int, raw: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def claim(self, limit: int) -> list[dict[str, Any]]:
        with self.lock:
            self.claim_limits.append(limit)
            n = min(limit, self.left)
            self.left -= n
            self.outstanding += n
            self.peak = max(self.peak, self.outstanding)
        return [dict(task(str(uuid.uuid4())), lease_token=str(uuid.uuid4()), attempt_count=1) for _ in range(n)]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def task(task_id: str) -> dict[str, Any]:
    return {"id": task_id, "queue": "q", "kind": "block", "payload": {}, "status": "PROCESSING",
            "cancel_requested_at": None}


class ClientUnitTest(unittest.TestCase):
    def setUp(self) -> None:
        self.fake = FakeAPI()
        self.addCleanup(self.fake.close)

    def test_error_answer_becomes_rota_error(self) -> None:
        with self.assertRaises(RotaError) as cm:
            Client(self.fake.url).get("nope")
        e = cm.exception
        self.assertEqual((e.code, e.message, e.status), ("not_found", "task not found", 404))
        self.assertFalse(e.lease_lost)

    def test_non_json_error_keeps_status_and_retry_after(self) -> None:
        with self.assertRaises(RotaError) as cm:
            Client(self.fake.url)._call("GET", "/api/busy")
        self.assertEqual((cm.exception.status, cm.exception.retry_after, cm.exception.message), (503, 2.0, "try later"))

    def test_token_and_server_from_environment(self) -> None:
        with unittest.mock.patch.dict("os.environ", {"ROTA_SERVER": self.fake.url, "ROTA_API_TOKEN": "s3cret"}):
            c = Client()
        self.assertEqual(c.base_url, self.fake.url)
        with self.assertRaises(RotaError):
            c.get("x")
        self.assertEqual(self.fake.headers[-1].get("Authorization"), "Bearer s3cret")
        with unittest.mock.patch.dict("os.environ", {}, clear=True):
            self.assertEqual((Client().base_url, Client().token), ("http://127.0.0.1:8080", None))
        with unittest.mock.patch.dict("os.environ", {"ROTA_ADDR": "127.0.0.1:9999"}, clear=True):
            self.assertEqual(Client().base_url, "http://127.0.0.1:9999")

    def test_new_task_json(self) -> None:
        self.assertEqual(NewTask("k").to_json(), {"kind": "k"})
        self.assertEqual(NewTask("k", {"a": 1}, queue="q", delay_seconds=1.5, priority=0).to_json(),
                         {"kind": "k", "payload": {"a": 1}, "queue": "q", "delay_seconds": 1.5, "priority": 0})
        with self.assertRaises(ValueError):
            NewTask("k", scheduled_for=datetime(2030, 1, 1)).to_json()  # naive: the zone would be a guess


class OutputUnitTest(unittest.TestCase):
    def test_check_output_measures_compact_json(self) -> None:
        check_output({"a": [1, 2]})
        check_output("x" * (MAX_OUTPUT_BYTES - 2))  # exactly the limit with its quotes
        check_output(None)
        for bad, why in (("x" * (MAX_OUTPUT_BYTES - 1), "more than"), (float("nan"), "JSON"), ({1, 2}, "JSON")):
            with self.assertRaises(ValueError) as cm:
                check_output(bad)
            self.assertIn(why, str(cm.exception))

    def test_task_json_output(self) -> None:
        self.assertEqual(Task.from_json({"id": "i", "queue": "q", "kind": "k", "output": {"n": 1}}).output, {"n": 1})
        self.assertIsNone(Task.from_json({"id": "i", "queue": "q", "kind": "k", "output": None}).output)


class WorkerUnitTest(unittest.TestCase):
    def test_never_claims_more_than_free_slots(self) -> None:
        fake = FakeAPI(total=10)
        self.addCleanup(fake.close)
        release = threading.Event()
        self.addCleanup(release.set)
        w = Worker(Client(fake.url), queues=["q"], concurrency=3, wait_seconds=0, heartbeat_interval=0.05)
        w.register("block", lambda ctx: release.wait(10))
        w.start()
        self.addCleanup(lambda: (w.stop(), w.join(10)))
        _support.wait_until("three claimed tasks", lambda: fake.outstanding == 3)
        release.set()
        _support.wait_until("all ten done", lambda: len(fake.outcomes) == 10)
        w.stop()
        self.assertTrue(w.join(10))
        self.assertEqual(fake.peak, 3)
        self.assertTrue(all(1 <= n <= 3 for n in fake.claim_limits), fake.claim_limits)
        self.assertEqual({verb for verb, _ in fake.outcomes}, {"complete"})

    def test_lost_lease_stops_the_handler_and_reports_nothing(self) -> None:
        fake = FakeAPI(total=1)
        fake.lose_leases = True
        self.addCleanup(fake.close)
        w = Worker(Client(fake.url), queues=["q"], concurrency=1, wait_seconds=0, heartbeat_interval=0.05)
        reasons: list[str | None] = []

        def handler(ctx: TaskContext) -> None:
            self.assertTrue(ctx.wait(10), "the lost lease never cancelled the context")
            reasons.append(ctx.cancel_reason)  # then returns normally: success must not be reported

        w.register("block", handler)
        w.start()
        self.addCleanup(lambda: (w.stop(), w.join(10)))
        _support.wait_until("the outcome to be dropped", lambda: w.stats.lease_lost == 1)
        self.assertEqual(reasons, ["lease_lost"])
        self.assertEqual(fake.heartbeats, 1)  # no heartbeat after the 409
        self.assertEqual((fake.outcomes, w.stats.succeeded), ([], 0))

    def test_outcome_mapping(self) -> None:
        fake = FakeAPI(total=4)
        self.addCleanup(fake.close)
        w = Worker(Client(fake.url), queues=["q"], concurrency=4, wait_seconds=0)
        errors = iter([Retry("later", after=7), PermanentError("bad"), KeyError("k"), None])
        lock = threading.Lock()

        def handler(ctx: TaskContext) -> None:
            with lock:
                err = next(errors)
            if err:
                raise err

        w.register("block", handler)
        w.start()
        self.addCleanup(lambda: (w.stop(), w.join(10)))
        _support.wait_until("four outcomes", lambda: len(fake.outcomes) == 4)
        bodies = sorted((verb, b.get("error"), b.get("retryable"), b.get("retry_after_seconds"))
                        for verb, b in fake.outcomes)
        self.assertEqual(bodies, [("complete", None, None, None),
                                  ("fail", "KeyError: 'k'", True, None),
                                  ("fail", "PermanentError: bad", False, None),
                                  ("fail", "Retry: later", True, 7)])

    def test_set_output_takes_the_place_of_the_return_value(self) -> None:
        fake = FakeAPI(total=4)
        self.addCleanup(fake.close)
        w = Worker(Client(fake.url), queues=["q"], concurrency=1, wait_seconds=0)
        calls = iter(range(4))

        def handler(ctx: TaskContext) -> Any:
            n = next(calls)
            if n == 1:
                ctx.set_output({"set": 1})
            elif n == 2:
                ctx.set_output({"set": 2})
                ctx.set_output(None)  # set to none: the return value still does not count
            elif n == 3:
                ctx.set_output({"set": 3})
                return None
            return {"returned": n}

        w.register("block", handler)
        w.start()
        self.addCleanup(lambda: (w.stop(), w.join(10)))
        _support.wait_until("four outcomes", lambda: len(fake.outcomes) == 4)
        self.assertEqual([(verb, b.get("output", "absent")) for verb, b in fake.outcomes],
                         [("complete", {"returned": 0}), ("complete", {"set": 1}), ("complete", "absent"),
                          ("complete", {"set": 3})])


class FlowUnitTest(unittest.TestCase):
    def test_task_context_of_a_step(self) -> None:
        import logging

        from rota import ClaimedTask, Flow
        task = ClaimedTask.from_json({"id": "t", "queue": "q", "kind": "k", "flow_id": "f", "step": "transform",
                                      "inputs": {"extract": [1, 2]}, "item": 2, "index": 1, "lease_token": "x"})
        ctx = TaskContext(task, "w", logging.getLogger("test"))
        self.assertEqual((ctx.flow_id, ctx.step, ctx.input("extract"), ctx.item, ctx.index),
                         ("f", "transform", [1, 2], 2, 1))
        plain = TaskContext(ClaimedTask.from_json({"id": "t", "queue": "q", "kind": "k"}), "w", logging.getLogger("test"))
        self.assertEqual((plain.flow_id, plain.step, plain.inputs, plain.index), (None, None, {}, None))
        with self.assertRaises(ValueError):
            ctx.set_output("x" * (1 << 20))
        with self.assertRaises(ValueError):  # check_output's error, as for a return value
            ctx.set_output(object())
        ctx.set_output({"ok": True})
        self.assertEqual(ctx.output, {"ok": True})

        flow = Flow.from_json({"id": "f", "status": "RUNNING", "queue": "q", "future_field": 1,
                               "steps": [{"name": "a", "kind": "k", "status": "WAITING", "depends_on": [],
                                          "for_each": None, "task_ids": [], "output": None, "error": None}]})
        self.assertEqual((flow.step("a").status, flow.extra, flow.ended), ("WAITING", {"future_field": 1}, False))


if __name__ == "__main__":
    unittest.main()
