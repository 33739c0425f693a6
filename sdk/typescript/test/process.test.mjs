// Worker processes that die, freeze or are told to stop: the task still runs to success
// exactly once, and a worker whose lease is gone never reports an outcome that counts.
// Leases are 2 s here; the server must reap expired leases often (rota serve
// --reap-interval 250ms in e2e/sdk_typescript_test.go).
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { Worker } from "@rotaqueue/sdk";

import { client, startChild, uniqueQueue, waitForStatus } from "./helpers.mjs";

const LEASE_SECONDS = "2";

// finishElsewhere starts an in-process worker that completes tasks of kind at once.
function finishElsewhere(t, queue, kind) {
  const worker = new Worker({ queue, workerId: `rescuer-${queue}`, leaseSeconds: 5, waitSeconds: 1, handleSignals: false });
  worker.handle(kind, async () => {});
  void worker.run();
  t.after(() => worker.stop());
  return worker;
}

// assertOneSuccess checks the attempts: the first worker's ended LEASE_EXPIRED, and
// exactly one, the rescuer's, SUCCEEDED.
async function assertOneSuccess(id, lostWorker, rescuer) {
  const attempts = await client.attempts(id);
  const summary = attempts.map((a) => `${a.worker_id}:${a.outcome}`);
  assert.deepEqual(summary, [`${lostWorker}:LEASE_EXPIRED`, `${rescuer}:SUCCEEDED`]);
}

test("a worker killed mid-task: another worker finishes the task exactly once", async (t) => {
  const queue = uniqueQueue("crash");
  const child = startChild({ CHILD_QUEUE: queue, CHILD_WORKER_ID: `victim-${queue}`, CHILD_LEASE_SECONDS: LEASE_SECONDS });
  t.after(child.kill);
  const task = await client.enqueue({ kind: "block", queue, max_attempts: 3 });
  await child.waitEvent("the task to start", (e) => e.type === "started" && e.task === task.id);

  child.proc.kill("SIGKILL");
  assert.deepEqual(await child.exited, { code: null, signal: "SIGKILL" });
  const rescuer = finishElsewhere(t, queue, "block");

  await waitForStatus(task.id, "SUCCEEDED");
  await assertOneSuccess(task.id, `victim-${queue}`, rescuer.workerId);
});

test("a handler that outlives its lease: its late outcome is refused, the task succeeds once elsewhere", async (t) => {
  const queue = uniqueQueue("late");
  const child = startChild({ CHILD_QUEUE: queue, CHILD_WORKER_ID: `slowpoke-${queue}`, CHILD_LEASE_SECONDS: LEASE_SECONDS });
  t.after(child.kill);
  // spin blocks the child's event loop (no heartbeats) until this file exists.
  const file = join(mkdtempSync(join(tmpdir(), "rota-sdk-")), "release");
  const task = await client.enqueue({ kind: "spin", queue, payload: { file }, max_attempts: 3 });
  await child.waitEvent("the task to start", (e) => e.type === "started" && e.task === task.id);

  // The lease expires, the server reaps it, another worker runs the task.
  const rescuer = finishElsewhere(t, queue, "spin");
  await waitForStatus(task.id, "SUCCEEDED");

  // Now the first handler returns: its complete is refused (409), reported as a lost lease.
  writeFileSync(file, "");
  const lost = await child.waitEvent("the late outcome to be refused", (e) => e.type === "lease_lost");
  assert.deepEqual(lost, { type: "lease_lost", task: task.id, status: "PROCESSING", when: "outcome" });
  assert.ok(!child.events.some((e) => e.type === "completed" || e.type === "failed"), JSON.stringify(child.events));
  assert.equal((await client.get(task.id)).status, "SUCCEEDED");
  await assertOneSuccess(task.id, `slowpoke-${queue}`, rescuer.workerId);
});

test("a worker frozen past its lease: its heartbeat finds the lease lost and aborts the handler", async (t) => {
  const queue = uniqueQueue("frozen");
  const child = startChild({ CHILD_QUEUE: queue, CHILD_WORKER_ID: `frozen-${queue}`, CHILD_LEASE_SECONDS: LEASE_SECONDS });
  t.after(child.kill);
  const task = await client.enqueue({ kind: "block", queue, max_attempts: 3 });
  await child.waitEvent("the task to start", (e) => e.type === "started" && e.task === task.id);

  child.proc.kill("SIGSTOP");
  const rescuer = finishElsewhere(t, queue, "block");
  await waitForStatus(task.id, "SUCCEEDED");
  child.proc.kill("SIGCONT");

  const aborted = await child.waitEvent("the handler to be aborted", (e) => e.type === "aborted");
  assert.equal(aborted.reason, "LeaseLostError");
  // when "heartbeat": the worker saw the loss and sent no outcome at all.
  const lost = await child.waitEvent("the lost lease to be reported", (e) => e.type === "lease_lost");
  assert.equal(lost.when, "heartbeat");
  assert.ok(!child.events.some((e) => e.type === "completed" || e.type === "failed"), JSON.stringify(child.events));
  await assertOneSuccess(task.id, `frozen-${queue}`, rescuer.workerId);
});

test("SIGTERM: the worker stops claiming, finishes its running task and exits", async (t) => {
  const queue = uniqueQueue("sigterm");
  const child = startChild({ CHILD_QUEUE: queue, CHILD_WORKER_ID: `term-${queue}` });
  t.after(child.kill);
  const task = await client.enqueue({ kind: "sleep", queue, payload: { ms: 500 } });
  await child.waitEvent("the task to start", (e) => e.type === "started" && e.task === task.id);

  child.proc.kill("SIGTERM");
  assert.deepEqual(await child.exited, { code: 0, signal: null });
  assert.deepEqual(
    child.events.filter((e) => e.type !== "claimed" && e.type !== "started").map((e) => e.type),
    ["stopping", "completed", "exited"],
  );
  assert.equal((await client.get(task.id)).status, "SUCCEEDED");
  // Tasks enqueued now are not claimed by the stopped worker.
  const later = await client.enqueue({ kind: "sleep", queue, payload: { ms: 1 } });
  assert.equal((await client.get(later.id)).status, "PENDING");
});
