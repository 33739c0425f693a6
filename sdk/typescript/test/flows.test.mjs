// Flows against a real server: start and get a flow; a Worker's handlers see flow_id,
// step, inputs, item and index, and set outputs that fan in in element order.
import assert from "node:assert/strict";
import { test } from "node:test";

import { RotaError, Worker } from "@rotaqueue/sdk";

import { client, uniqueQueue, waitFor } from "./helpers.mjs";

test("an ETL flow with a fan-out runs through a Worker", async (t) => {
  const queue = uniqueQueue("flow");
  const flow = await client.startFlow({
    name: "etl",
    queue,
    idempotency_key: `etl-${queue}`,
    steps: [
      { name: "extract", kind: "extract" },
      { name: "transform", kind: "transform", depends_on: ["extract"], for_each: "extract" },
      { name: "load", kind: "load", depends_on: ["transform"] },
    ],
  });
  assert.equal(flow.status, "RUNNING");
  assert.deepEqual(flow.steps.map((s) => [s.name, s.status]), [
    ["extract", "PENDING"],
    ["transform", "WAITING"],
    ["load", "WAITING"],
  ]);
  const again = await client.startFlow({ queue, idempotency_key: `etl-${queue}`, steps: [{ name: "x", kind: "x" }] });
  assert.equal(again.id, flow.id);

  const worker = new Worker({ queue, waitSeconds: 1, handleSignals: false, onEvent: () => {} });
  t.after(() => worker.stop());
  const seen = [];
  worker.handle("extract", (task, ctx) => {
    assert.equal(task.flow_id, flow.id);
    assert.equal(task.step, "extract");
    assert.deepEqual(task.inputs, {});
    assert.equal(task.index, undefined);
    ctx.setOutput(["a", "b", null]);
  });
  worker.handle("transform", (task, ctx) => {
    assert.deepEqual(task.inputs, { extract: ["a", "b", null] });
    seen.push([task.index, task.item]);
    ctx.setOutput({ i: task.index, item: task.item });
  });
  worker.handle("load", (task, ctx) => {
    assert.throws(() => ctx.setOutput("x".repeat(1 << 20)), RangeError);
    ctx.setOutput(task.inputs.transform.length);
  });
  void worker.run();

  const done = await waitFor(`flow ${flow.id} to end`, async () => {
    const f = await client.getFlow(flow.id);
    return f.status !== "RUNNING" ? f : undefined;
  });
  assert.equal(done.status, "SUCCEEDED");
  seen.sort((a, b) => a[0] - b[0]);
  assert.deepEqual(seen, [[0, "a"], [1, "b"], [2, null]]);
  const transform = done.steps.find((s) => s.name === "transform");
  assert.deepEqual(transform.output, [{ i: 0, item: "a" }, { i: 1, item: "b" }, { i: 2, item: null }]);
  assert.equal(done.steps.find((s) => s.name === "load").output, 3);
  const third = await client.get(transform.task_ids[2]);
  assert.equal(third.index, 2);
  assert.equal(third.item, null);
  assert.deepEqual(third.output, { i: 2, item: null });

  const page = await client.listFlows({ name: "etl", status: "SUCCEEDED" });
  assert.ok(page.flows.some((f) => f.id === flow.id));
  assert.equal(page.flows[0].steps, undefined);
});

test("an invalid flow is a 400 naming the step; cancel and replay", async () => {
  const queue = uniqueQueue("flowbad");
  await assert.rejects(
    client.startFlow({ queue, steps: [{ name: "a", kind: "k", depends_on: ["ghost"] }] }),
    (err) => err instanceof RotaError && err.status === 400 && err.message.includes('"a"'),
  );
  const flow = await client.startFlow({
    queue,
    steps: [
      { name: "a", kind: "k" },
      { name: "b", kind: "k", depends_on: ["a"] },
    ],
  });
  const canceled = await client.cancelFlow(flow.id);
  assert.equal(canceled.status, "CANCELED");
  const replayed = await client.replayFlow(flow.id);
  assert.equal(replayed.status, "RUNNING");
  const [a] = await client.claim(queue, { worker_id: "ts-flow" });
  assert.equal(a.step, "a");
  await client.complete(a.id, a.lease_token, { output: { rows: 7 } });
  const [b] = await client.claim(queue, { worker_id: "ts-flow" });
  assert.deepEqual(b.inputs, { a: { rows: 7 } });
  await assert.rejects(client.replayFlow(flow.id), (err) => err instanceof RotaError && err.status === 409);
});
