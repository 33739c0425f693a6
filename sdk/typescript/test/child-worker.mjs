// A worker process for the crash, lease-loss and shutdown tests. It serves CHILD_QUEUE
// with lease CHILD_LEASE_SECONDS and prints each worker event as one JSON line.
// Handlers (kinds):
//   block        waits for its signal to abort (a task that runs "forever")
//   spin         a synchronous wait, blocking the event loop (and so the heartbeats),
//                until the file named in the payload exists: a handler that outlives its lease
//   sleep        resolves after payload.ms
import { existsSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";

import { Worker } from "@rotaqueue/sdk";

const print = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");

const worker = new Worker({
  queue: process.env.CHILD_QUEUE,
  workerId: process.env.CHILD_WORKER_ID,
  leaseSeconds: Number(process.env.CHILD_LEASE_SECONDS || 2),
  heartbeatIntervalMs: Number(process.env.CHILD_HEARTBEAT_MS || 500),
  waitSeconds: 1,
  // One slot: while a handler runs, no claim is in flight that could take the task back
  // after the reaper freed it (the tests want it to run elsewhere).
  concurrency: 1,
  shutdownGraceMs: Number(process.env.CHILD_GRACE_MS || 5000),
  onEvent: (e) => {
    const out = { type: e.type };
    if (e.task) out.task = e.task.id;
    if (e.task && e.type !== "claimed") out.status = e.task.status;
    if (e.type === "lease_lost") out.when = e.when;
    if (e.type === "error") out.error = String(e.error?.message ?? e.error);
    if (e.type === "stopping") out.signal = e.signal;
    print(out);
  },
});

worker.handle("block", async (task, { signal }) => {
  print({ type: "started", task: task.id });
  await new Promise((resolve, reject) => {
    signal.addEventListener("abort", () => {
      print({ type: "aborted", task: task.id, reason: signal.reason?.name });
      reject(signal.reason);
    });
  });
});

// Atomics.wait blocks the thread (timers and heartbeats included) without burning a CPU.
const blockThread = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

worker.handle("spin", (task) => {
  print({ type: "started", task: task.id });
  while (!existsSync(task.payload.file)) blockThread(20);
});

worker.handle("sleep", async (task) => {
  print({ type: "started", task: task.id });
  await sleep(task.payload.ms);
});

await worker.run();
print({ type: "exited" });
