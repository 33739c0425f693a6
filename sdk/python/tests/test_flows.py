"""Flows from Python against a real `rota serve`: start and get a flow; a Worker's
handlers see flow_id, step, inputs, item and index, and set outputs that fan in."""

from __future__ import annotations

from _support import IntegrationTest, wait_until

from rota import FAILED, RUNNING, SUCCEEDED, WAITING, Client, RotaError, TaskContext, Worker


class FlowTest(IntegrationTest):
    def etl_steps(self) -> list[dict]:
        return [
            {"name": "extract", "kind": "extract", "payload": {"source": "s3://in"}},
            {"name": "transform", "kind": "transform", "depends_on": ["extract"], "for_each": "extract"},
            {"name": "load", "kind": "load", "depends_on": ["transform"]},
        ]

    def test_etl_flow_with_fan_out(self) -> None:
        flow, created = self.client.start_flow_status(self.etl_steps(), name="etl", queue=self.queue,
                                                      idempotency_key="etl-" + self.queue)
        self.assertTrue(created)
        self.assertEqual(flow.status, RUNNING)
        self.assertEqual([s.name for s in flow.steps], ["extract", "transform", "load"])
        self.assertEqual(flow.step("transform").status, WAITING)
        self.assertEqual(flow.step("transform").for_each, "extract")
        again, created = self.client.start_flow_status(self.etl_steps(), name="etl", queue=self.queue,
                                                       idempotency_key="etl-" + self.queue)
        self.assertFalse(created)
        self.assertEqual(again.id, flow.id)

        w = Worker(Client(self.client.base_url), queues=[self.queue], concurrency=4, wait_seconds=0.5)
        self.addCleanup(lambda: (w.stop(), w.join(15)))
        seen: dict[str, list] = {"transform": []}

        @w.handler("extract")
        def extract(ctx: TaskContext) -> None:
            assert ctx.flow_id == flow.id and ctx.step == "extract" and ctx.inputs == {}, ctx.task
            assert ctx.index is None
            ctx.set_output(["a", "b", None])

        @w.handler("transform")
        def transform(ctx: TaskContext) -> None:
            assert ctx.input("extract") == ["a", "b", None], ctx.inputs
            seen["transform"].append((ctx.index, ctx.item))
            ctx.set_output({"i": ctx.index, "item": ctx.item})

        @w.handler("load")
        def load(ctx: TaskContext) -> None:
            ctx.set_output(len(ctx.inputs["transform"]))

        w.start()

        def ended():
            f = self.client.get_flow(flow.id)
            return f if f.ended else None
        done = wait_until(f"flow {flow.id} to end", ended)
        self.assertEqual(done.status, SUCCEEDED, done)
        self.assertEqual(sorted(seen["transform"], key=lambda x: x[0]), [(0, "a"), (1, "b"), (2, None)])
        self.assertEqual(done.step("transform").output,
                         [{"i": 0, "item": "a"}, {"i": 1, "item": "b"}, {"i": 2, "item": None}])
        self.assertEqual(done.step("load").output, 3)
        self.assertEqual(len(done.step("transform").task_ids), 3)
        task = self.client.get(done.step("transform").task_ids[2])
        self.assertEqual((task.flow_id, task.step, task.index, task.item), (flow.id, "transform", 2, None))
        self.assertEqual(task.output, {"i": 2, "item": None})

        flows, cursor = self.client.list_flows(name="etl", status=[SUCCEEDED])
        self.assertIn(flow.id, [f.id for f in flows])

    def test_invalid_flow_names_the_step(self) -> None:
        with self.assertRaises(RotaError) as caught:
            self.client.start_flow([{"name": "a", "kind": "noop", "depends_on": ["ghost"]}], queue=self.queue)
        self.assertEqual((caught.exception.status, caught.exception.code), (400, "invalid_request"))
        self.assertIn('"a"', caught.exception.message)

    def test_failed_flow_cancel_and_replay(self) -> None:
        flow = self.client.start_flow([{"name": "a", "kind": "boom", "max_attempts": 1},
                                       {"name": "b", "kind": "boom", "depends_on": ["a"]}], queue=self.queue)
        [claimed] = self.client.claim(self.queue, "py-flow", limit=1)
        self.assertEqual((claimed.flow_id, claimed.step, claimed.inputs), (flow.id, "a", {}))
        self.client.fail(claimed.id, claimed.lease_token, "boom", retryable=False)
        failed = self.client.get_flow(flow.id)
        self.assertEqual(failed.status, FAILED)
        with self.assertRaises(RotaError) as caught:
            self.client.cancel_flow(flow.id)
        self.assertEqual(caught.exception.status, 409)
        self.assertEqual(self.client.replay_flow(flow.id).status, RUNNING)
        [again] = self.client.claim(self.queue, "py-flow", limit=1)
        self.client.complete(again.id, again.lease_token, output={"ok": True})
        [b] = self.client.claim(self.queue, "py-flow", limit=1)
        self.assertEqual(b.inputs, {"a": {"ok": True}})
        self.assertEqual(self.client.cancel_flow(flow.id).status, "CANCELED")
