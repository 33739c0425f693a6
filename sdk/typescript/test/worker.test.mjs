// Worker against a real server, in this process: running, retrying, failing, canceling,
// concurrency and graceful stop.
import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";

import { Client, PermanentError, RetryError, TaskCanceledError, Worker, WorkerShutdownError } from "@rotaqueue/sdk";

import { client, uniqueQueue, waitFor, waitForStatus } from "./helpers.mjs";

// newWorker starts a worker with short timings; the test stops it at the end.
function newWorker(t, options) {
  const events = [];
  const worker = new Worker({
    leaseSeconds: 5,
    heartbeatIntervalMs: 200,
    waitSeconds: 1,
    handleSignals: false,
    ...options,
    onEvent: (e) => events.push(e),
  });
  worker.events = events;
  t.after(() => worker.stop());
  return worker;
}

const outcomes = async (id) => (await client.attempts(id)).map((a) => a.outcome);

test("a worker runs each task once, never claiming more tasks than it has free slots", async (t) => {
  const queue = uniqueQueue("run");
  const concurrency = 3;
  const claims = [];
  // Each claim's limit next to the tasks the worker held when it sent it (claimed, not
  // yet reported: its events tell).
  const held = () => worker.events.filter((e) => e.type === "claimed").length -
    worker.events.filter((e) => e.type === "completed").length;
  const spyFetch = async (url, init) => {
    if (String(url).endsWith("/claim")) claims.push({ limit: JSON.parse(init.body).limit, held: held() });
    return fetch(url, init);
  };
  const worker = newWorker(t, { queue, concurrency, client: new Client({ fetch: spyFetch }) });
  // Handlers wait at a gate the test opens one at a time.
  const gates = [];
  const runs = new Map();
  worker.handle("add", async (task) => {
    runs.set(task.id, (runs.get(task.id) ?? 0) + 1);
    await new Promise((resolve) => gates.push(resolve));
  });
  const tasks = await client.enqueueBatch(Array.from({ length: 10 }, (_, i) => ({ kind: "add", queue, payload: { i } })));
  void worker.run();
  for (let released = 0; released < tasks.length; released++) {
    await waitFor("a handler at its gate", () => gates.length > 0);
    const { tasks: running } = await client.list({ queue, status: "PROCESSING" });
    assert.ok(running.length <= concurrency, `${running.length} tasks PROCESSING`);
    gates.shift()();
  }
  for (const task of tasks) await waitForStatus(task.id, "SUCCEEDED");
  assert.deepEqual([...runs.values()], tasks.map(() => 1));
  assert.ok(claims.length > 1);
  for (const { limit, held } of claims) {
    assert.ok(limit >= 1 && limit <= concurrency - held, `claimed ${limit} while holding ${held} of ${concurrency}`);
  }
  // The server may show SUCCEEDED before the worker has read the answer to its complete.
  await waitFor("10 completed events", () => worker.events.filter((e) => e.type === "completed").length === 10);
});

test("heartbeats keep the lease of a handler that runs longer than one lease", async (t) => {
  const queue = uniqueQueue("heartbeat");
  // Without heartbeats the lease ends after 2 s and the server reaps it within 250 ms.
  const worker = newWorker(t, { queue, leaseSeconds: 2, heartbeatIntervalMs: 200 });
  worker.handle("slow", async () => {
    await sleep(4000);
  });
  const task = await client.enqueue({ kind: "slow", queue, max_attempts: 3 });
  void worker.run();
  await waitForStatus(task.id, "SUCCEEDED");
  assert.deepEqual(await outcomes(task.id), ["SUCCEEDED"]);
  assert.ok(!worker.events.some((e) => e.type === "lease_lost"));
});

test("RetryError retries after its delay, then the task succeeds", async (t) => {
  const queue = uniqueQueue("retry");
  const worker = newWorker(t, { queue });
  worker.handle("flaky", async (task) => {
    if (task.attempt_count === 1) throw new RetryError("try later", { afterSeconds: 1 });
  });
  const task = await client.enqueue({ kind: "flaky", queue, max_attempts: 3 });
  void worker.run();
  await waitForStatus(task.id, "SUCCEEDED");
  assert.deepEqual(await outcomes(task.id), ["RETRIED", "SUCCEEDED"]);
  // The failed attempt made the task due retry_after_seconds after the database's now().
  const failed = worker.events.find((e) => e.type === "failed");
  assert.equal(failed.retryable, true);
  assert.equal(failed.task.status, "PENDING");
  const delayMs = Date.parse(failed.task.scheduled_for) - Date.parse(failed.task.updated_at);
  assert.ok(delayMs >= 990 && delayMs <= 1010, `due ${delayMs} ms after the failure`);
});

test("a handler's return value is the task's output", async (t) => {
  const queue = uniqueQueue("output");
  const worker = newWorker(t, { queue });
  worker.handle("sum", async (task) => ({ total: task.payload.nums.reduce((a, b) => a + b, 0) }));
  worker.handle("nothing", async () => {});
  worker.handle("sync", (task) => [task.attempt_count, "done"]);
  const summed = await client.enqueue({ kind: "sum", queue, payload: { nums: [1, 2, 3] } });
  const nothing = await client.enqueue({ kind: "nothing", queue });
  const sync = await client.enqueue({ kind: "sync", queue });
  void worker.run();
  assert.deepEqual((await waitForStatus(summed.id, "SUCCEEDED")).output, { total: 6 });
  assert.equal((await waitForStatus(nothing.id, "SUCCEEDED")).output, null);
  assert.deepEqual((await waitForStatus(sync.id, "SUCCEEDED")).output, [1, "done"]);
});

test("a returned value that cannot be an output fails the task for good", async (t) => {
  const queue = uniqueQueue("bad_output");
  const worker = newWorker(t, { queue });
  worker.handle("huge", async () => "x".repeat(1 << 20)); // 2 bytes over with its quotes
  worker.handle("bigint", async () => ({ n: 1n }));
  const huge = await client.enqueue({ kind: "huge", queue, max_attempts: 5 });
  const bigint = await client.enqueue({ kind: "bigint", queue, max_attempts: 5 });
  void worker.run();
  for (const [task, why] of [[huge, /more than the 1048576 allowed/], [bigint, /does not encode as JSON/]]) {
    const done = await waitForStatus(task.id, "FAILED");
    assert.equal(done.attempt_count, 1);
    assert.equal(done.output, null);
    assert.match(done.last_error, /invalid output/);
    assert.match(done.last_error, why);
  }
});

test("PermanentError fails the task for good", async (t) => {
  const queue = uniqueQueue("perm");
  const worker = newWorker(t, { queue });
  worker.handle("bad", async () => {
    throw new PermanentError("bad input");
  });
  const task = await client.enqueue({ kind: "bad", queue, max_attempts: 5 });
  void worker.run();
  const done = await waitForStatus(task.id, "FAILED");
  assert.equal(done.attempt_count, 1);
  assert.match(done.last_error, /bad input/);
  assert.deepEqual(await outcomes(task.id), ["FAILED"]);
});

test("any other error is retryable; unknown kinds fail retryable", async (t) => {
  const queue = uniqueQueue("other");
  const worker = newWorker(t, { queue });
  worker.handle("boom", async () => {
    throw new TypeError("oops");
  });
  const boom = await client.enqueue({ kind: "boom", queue, max_attempts: 2 });
  const unknown = await client.enqueue({ kind: "nobody_handles_this", queue, max_attempts: 1 });
  void worker.run();
  const dead = await waitForStatus(boom.id, "DEAD");
  assert.match(dead.last_error, /oops/);
  assert.deepEqual(await outcomes(boom.id), ["RETRIED", "DEAD"]);
  const deadUnknown = await waitForStatus(unknown.id, "DEAD");
  assert.match(deadUnknown.last_error, /no handler registered for kind "nobody_handles_this"/);
});

test("a task's timeout_seconds aborts its handler, a retryable failure", async (t) => {
  const queue = uniqueQueue("timeout");
  const worker = newWorker(t, { queue });
  let reason;
  worker.handle("hang", async (_task, { signal }) => {
    await new Promise((_, reject) =>
      signal.addEventListener("abort", () => {
        reason = signal.reason;
        reject(signal.reason);
      }),
    );
  });
  const task = await client.enqueue({ kind: "hang", queue, timeout_seconds: 1, max_attempts: 1 });
  void worker.run();
  const dead = await waitForStatus(task.id, "DEAD");
  assert.equal(reason?.name, "TaskTimeoutError");
  assert.match(dead.last_error, /timed out after 1s/);
});

test("a cancel of a running task aborts its handler, and the task ends CANCELED", async (t) => {
  const queue = uniqueQueue("cancelrun");
  const worker = newWorker(t, { queue });
  let reason;
  let started;
  const running = new Promise((resolve) => (started = resolve));
  worker.handle("long", async (_task, { signal }) => {
    started();
    await new Promise((_, reject) =>
      signal.addEventListener("abort", () => {
        reason = signal.reason;
        reject(signal.reason);
      }),
    );
  });
  const task = await client.enqueue({ kind: "long", queue });
  void worker.run();
  await running;
  const asked = await client.cancel(task.id);
  assert.equal(asked.status, "PROCESSING");
  assert.notEqual(asked.cancel_requested_at, null);
  await waitForStatus(task.id, "CANCELED");
  assert.ok(reason instanceof TaskCanceledError, `aborted with ${reason}`);
  assert.deepEqual(await outcomes(task.id), ["CANCELED"]);
  await waitFor("the canceled event", () => worker.events.some((e) => e.type === "canceled"));
});

test("stop lets running handlers finish within the grace period", async (t) => {
  const queue = uniqueQueue("grace");
  const worker = newWorker(t, { queue, shutdownGraceMs: 10_000 });
  let started;
  const running = new Promise((resolve) => (started = resolve));
  worker.handle("short", async () => {
    started();
    await sleep(300);
  });
  const task = await client.enqueue({ kind: "short", queue });
  const done = worker.run();
  await running;
  await worker.stop();
  await done;
  assert.equal((await client.get(task.id)).status, "SUCCEEDED");
});

test("stop aborts handlers still running after the grace period; they fail retryable", async (t) => {
  const queue = uniqueQueue("abort");
  const worker = newWorker(t, { queue, shutdownGraceMs: 100 });
  let started;
  const running = new Promise((resolve) => (started = resolve));
  let reason;
  worker.handle("stuck", async (_task, { signal }) => {
    started();
    await new Promise((_, reject) =>
      signal.addEventListener("abort", () => {
        reason = signal.reason;
        reject(signal.reason);
      }),
    );
  });
  const task = await client.enqueue({ kind: "stuck", queue, max_attempts: 3 });
  void worker.run();
  await running;
  await worker.stop();
  assert.ok(reason instanceof WorkerShutdownError, `aborted with ${reason}`);
  const after = await client.get(task.id);
  assert.equal(after.status, "PENDING");
  assert.match(after.last_error, /worker shutting down/);
  assert.deepEqual(await outcomes(task.id), ["RETRIED"]);
});

test("an aborted handler keeps its lease while it winds down, and its failure counts", async (t) => {
  const queue = uniqueQueue("winddown");
  // The wind-down (3 s) outlasts the lease (2 s): only heartbeats keep the lease.
  const worker = newWorker(t, { queue, leaseSeconds: 2, heartbeatIntervalMs: 200, shutdownGraceMs: 100 });
  let started;
  const running = new Promise((resolve) => (started = resolve));
  worker.handle("slow_to_stop", async (_task, { signal }) => {
    started();
    await new Promise((resolve) => signal.addEventListener("abort", resolve));
    await sleep(3000);
    throw signal.reason;
  });
  const task = await client.enqueue({ kind: "slow_to_stop", queue, max_attempts: 3 });
  void worker.run();
  await running;
  await worker.stop();
  assert.ok(!worker.events.some((e) => e.type === "lease_lost"), JSON.stringify(worker.events.map((e) => e.type)));
  assert.deepEqual(await outcomes(task.id), ["RETRIED"]);
});
