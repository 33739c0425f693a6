// Enqueues a task on the queue "emails" and runs a worker for it until it is done.
// Run from sdk/typescript after `npm run build`, with `rota dev` listening on
// ROTA_SERVER (default http://127.0.0.1:8080).
import { Client, PermanentError, Worker } from "@rotaqueue/sdk";

const client = new Client();
const task = await client.enqueue({ kind: "send_email", queue: "emails", payload: { to: "ada@example.com" } });
console.log(`enqueued ${task.id} (${task.status})`);

const worker = new Worker({ client, queue: "emails", concurrency: 4 });
worker.handle("send_email", async (task, { signal }) => {
  if (!task.payload.to) throw new PermanentError("no recipient"); // FAILED, no retry
  await new Promise((resolve) => setTimeout(resolve, 200)); // the real work; watch `signal`
  console.log(`sent to ${task.payload.to} (attempt ${task.attempt_count}, aborted: ${signal.aborted})`);
});
worker.run(); // claims until stop() or SIGTERM/SIGINT

// Wait for the task, then stop the worker gracefully.
while ((await client.get(task.id)).status !== "SUCCEEDED") await new Promise((r) => setTimeout(r, 100));
console.log(`task ${task.id} SUCCEEDED`);
await worker.stop();
