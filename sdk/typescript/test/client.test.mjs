// Client round trips against a real server: enqueue, get, list, cancel, replay, errors.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Client, MAX_OUTPUT_BYTES, RotaError, checkOutput } from "@rotaqueue/sdk";

import { client, uniqueQueue } from "./helpers.mjs";

test("enqueue sends every option and get returns the task", async () => {
  const queue = uniqueQueue("enqueue");
  const task = await client.enqueue({
    kind: "email",
    queue,
    payload: { to: "a@example.com", n: 1 },
    delay_seconds: 3600,
    max_attempts: 7,
    priority: 5,
    idempotency_key: `key-${queue}`,
    timeout_seconds: 42,
    group_key: "tenant-1",
  });
  assert.equal(task.status, "PENDING");
  assert.equal(task.queue, queue);
  assert.equal(task.kind, "email");
  assert.deepEqual(task.payload, { to: "a@example.com", n: 1 });
  assert.equal(task.max_attempts, 7);
  assert.equal(task.priority, 5);
  assert.equal(task.idempotency_key, `key-${queue}`);
  assert.equal(task.timeout_seconds, 42);
  assert.equal(task.group_key, "tenant-1");
  // delay_seconds counts from the database's clock: scheduled about an hour after creation.
  const delayMs = Date.parse(task.scheduled_for) - Date.parse(task.created_at);
  assert.ok(delayMs > 3590_000 && delayMs < 3610_000, `scheduled ${delayMs} ms after creation`);

  // No worker serves the queue: the task is created, with a warning that says so.
  const { warnings, ...created } = task;
  assert.ok(warnings?.some((w) => w.includes(queue)), `warnings ${JSON.stringify(warnings)}`);
  const got = await client.get(task.id);
  assert.deepEqual(got, created);

  // The same idempotency key returns the first task.
  const again = await client.enqueue({ kind: "email", queue, idempotency_key: `key-${queue}` });
  assert.equal(again.id, task.id);
});

test("group_key is null when none, and checked by the server", async () => {
  const queue = uniqueQueue("group");
  const [grouped, plain] = await client.enqueueBatch([{ kind: "a", queue, group_key: "g" }, { kind: "a", queue }]);
  assert.equal(grouped.group_key, "g");
  assert.equal(plain.group_key, null);
  await assert.rejects(client.enqueue({ kind: "a", queue, group_key: "k".repeat(129) }), (err) => {
    assert.ok(err instanceof RotaError);
    assert.equal(err.status, 400);
    assert.match(err.message, /group_key/);
    return true;
  });
});

test("scheduled_for accepts a Date", async () => {
  const when = new Date("2031-02-03T04:05:06Z");
  const task = await client.enqueue({ kind: "later", queue: uniqueQueue("at"), scheduled_for: when });
  assert.equal(Date.parse(task.scheduled_for), when.getTime());
});

test("batch enqueue, list with filters and cursor paging", async () => {
  const queue = uniqueQueue("list");
  const tasks = await client.enqueueBatch(
    Array.from({ length: 5 }, (_, i) => ({ kind: i < 3 ? "a" : "b", queue, payload: { i }, delay_seconds: 600 })),
  );
  assert.equal(tasks.length, 5);
  assert.deepEqual(tasks.map((t) => t.payload.i), [0, 1, 2, 3, 4]);

  const kindA = await client.list({ queue, kind: "a" });
  assert.equal(kindA.tasks.length, 3);
  assert.equal(kindA.next_cursor, "");

  // Pages of 2: 2 + 2 + 1, every task once.
  const seen = [];
  let cursor = "";
  let pages = 0;
  do {
    const page = await client.list({ queue, limit: 2, cursor });
    seen.push(...page.tasks.map((t) => t.id));
    cursor = page.next_cursor;
    pages++;
  } while (cursor !== "");
  assert.ok(pages >= 3, `${pages} pages`);
  assert.deepEqual([...seen].sort(), tasks.map((t) => t.id).sort());

  const all = [];
  for await (const t of client.listAll({ queue, limit: 2 })) all.push(t.id);
  assert.deepEqual(all.sort(), tasks.map((t) => t.id).sort());

  // Status filters, one or several.
  await client.cancel(tasks[0].id);
  const canceled = await client.list({ queue, status: "CANCELED" });
  assert.deepEqual(canceled.tasks.map((t) => t.id), [tasks[0].id]);
  const both = await client.list({ queue, status: ["CANCELED", "PENDING"] });
  assert.equal(both.tasks.length, 5);
});

test("cancel a waiting task, then replay it", async () => {
  const task = await client.enqueue({ kind: "x", queue: uniqueQueue("cancel"), delay_seconds: 600 });
  const canceled = await client.cancel(task.id);
  assert.equal(canceled.status, "CANCELED");
  const replayed = await client.replay(task.id);
  assert.equal(replayed.status, "PENDING");
  assert.equal((await client.get(task.id)).status, "PENDING");
});

test("API errors throw RotaError with code, message and status", async () => {
  await assert.rejects(client.get("0190c8a5-0000-7000-8000-000000000000"), (err) => {
    assert.ok(err instanceof RotaError);
    assert.equal(err.status, 404);
    assert.equal(err.code, "not_found");
    assert.ok(err.message.length > 0);
    return true;
  });
  await assert.rejects(client.enqueue({ kind: "not a valid kind!" }), (err) => {
    assert.ok(err instanceof RotaError);
    assert.equal(err.status, 400);
    assert.equal(err.code, "invalid_request");
    return true;
  });
  // A task that is still waiting cannot be replayed.
  const task = await client.enqueue({ kind: "x", queue: uniqueQueue("replay"), delay_seconds: 600 });
  await assert.rejects(client.replay(task.id), (err) => err instanceof RotaError && err.status === 409);
});

test("the bearer token is sent, and a wrong one is refused", { skip: !process.env.ROTA_API_TOKEN && "the server has no token" }, async () => {
  // One wrong try only: ten from one address lock it out for a while.
  const wrong = new Client({ token: "not-the-token" });
  await assert.rejects(wrong.get("0190c8a5-0000-7000-8000-000000000000"), (err) => {
    assert.ok(err instanceof RotaError);
    assert.equal(err.status, 401);
    assert.equal(err.code, "unauthorized");
    return true;
  });
});

test("a server that is not there is a network_error", async () => {
  const nowhere = new Client({ baseUrl: "http://127.0.0.1:1", token: "" });
  await assert.rejects(nowhere.get("x"), (err) => err instanceof RotaError && err.code === "network_error" && err.status === 0);
});

test("a traceparent given to enqueue reaches the worker's claim", async () => {
  const queue = uniqueQueue("traced");
  const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  const one = await client.enqueue({ kind: "x", queue }, { traceparent, tracestate: "rojo=1" });
  const [many] = await client.enqueueBatch([{ kind: "x", queue }], { traceparent });
  const plain = await client.enqueue({ kind: "x", queue });
  const claimed = new Map((await client.claim(queue, { worker_id: "ts-traced", limit: 10 })).map((t) => [t.id, t]));
  assert.equal(claimed.size, 3);
  // The server stores its request span's context (same trace) or, untraced, the header.
  for (const t of [one, many]) assert.equal(claimed.get(t.id).traceparent.split("-")[1], "4bf92f3577b34da6a3ce929d0e0e4736");
  assert.equal(claimed.get(one.id).tracestate, "rojo=1");
  assert.equal(claimed.get(plain.id).traceparent, undefined);
  const c = claimed.get(one.id);
  assert.equal((await client.complete(c.id, c.lease_token, { traceparent: c.traceparent })).status, "SUCCEEDED");
});

test("complete takes an output, which the task then shows", async () => {
  const queue = uniqueQueue("output");
  const task = await client.enqueue({ kind: "x", queue });
  assert.equal(task.output, null);
  const [c] = await client.claim(queue, { worker_id: "ts-output" });
  const done = await client.complete(c.id, c.lease_token, { output: { rows: [1, 2], name: "é" } });
  assert.equal(done.status, "SUCCEEDED");
  assert.deepEqual(done.output, { rows: [1, 2], name: "é" });
  assert.deepEqual((await client.get(task.id)).output, { rows: [1, 2], name: "é" });
  assert.deepEqual((await client.list({ queue })).tasks.map((t) => t.output), [{ rows: [1, 2], name: "é" }]);
});

test("an output over 1 MiB is 413 payload_too_large and changes nothing", async () => {
  const queue = uniqueQueue("big_output");
  const task = await client.enqueue({ kind: "x", queue });
  const [c] = await client.claim(queue, { worker_id: "ts-output" });
  await assert.rejects(
    client.complete(c.id, c.lease_token, { output: "x".repeat(MAX_OUTPUT_BYTES) }), // + 2 quotes
    (err) => err instanceof RotaError && err.status === 413 && err.code === "payload_too_large",
  );
  const still = await client.get(task.id);
  assert.equal(still.status, "PROCESSING");
  assert.equal(still.output, null);
  // The lease still holds: an output of exactly the limit completes the task.
  const done = await client.complete(c.id, c.lease_token, { output: "x".repeat(MAX_OUTPUT_BYTES - 2) });
  assert.equal(done.status, "SUCCEEDED");
  assert.equal(done.output.length, MAX_OUTPUT_BYTES - 2);
});

test("checkOutput measures JSON as the server does", () => {
  checkOutput({ a: [1, 2] });
  checkOutput("x".repeat(MAX_OUTPUT_BYTES - 2));
  checkOutput(undefined);
  assert.throws(() => checkOutput("x".repeat(MAX_OUTPUT_BYTES - 1)), RangeError);
  assert.throws(() => checkOutput(10n), TypeError);
  assert.throws(() => checkOutput(() => 1), TypeError);
});
