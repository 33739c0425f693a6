// Shared helpers of the SDK tests. They need a running Rota server: ROTA_SERVER (and
// ROTA_API_TOKEN when it has one); e2e/sdk_typescript_test.go starts one.
import { randomBytes } from "node:crypto";
import { spawn } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";

import { Client } from "@rotaqueue/sdk";

if (!process.env.ROTA_SERVER) {
  throw new Error("set ROTA_SERVER to a running Rota server (e.g. http://127.0.0.1:8080)");
}

export const client = new Client();

/** A queue name no other test uses. */
export function uniqueQueue(name) {
  return `ts_${name}_${randomBytes(4).toString("hex")}`;
}

/** Polls cond until it returns a truthy value, or fails after timeoutMs. */
export async function waitFor(what, cond, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    last = await cond();
    if (last) return last;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(25);
  }
}

/** Waits until the task reaches status and returns it. */
export function waitForStatus(id, status, timeoutMs) {
  let seen;
  return waitFor(
    `task ${id} to reach ${status}`,
    async () => {
      const t = await client.get(id);
      seen = t.status;
      return t.status === status ? t : undefined;
    },
    timeoutMs,
  ).catch((err) => {
    throw new Error(`${err.message} (last status ${seen})`);
  });
}

const childScript = fileURLToPath(new URL("./child-worker.mjs", import.meta.url));

/**
 * Starts test/child-worker.mjs as its own process. It prints one JSON line per worker
 * event; events collects them and waitEvent waits for one.
 */
export function startChild(env) {
  const proc = spawn(process.execPath, [childScript], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const events = [];
  let stderr = "";
  let buf = "";
  proc.stdout.setEncoding("utf8");
  proc.stdout.on("data", (chunk) => {
    buf += chunk;
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.trim()) events.push(JSON.parse(line));
    }
  });
  proc.stderr.setEncoding("utf8");
  proc.stderr.on("data", (chunk) => (stderr += chunk));
  const exited = new Promise((resolve) => proc.on("exit", (code, signal) => resolve({ code, signal })));
  return {
    proc,
    events,
    exited,
    stderr: () => stderr,
    waitEvent: (what, match, timeoutMs) =>
      waitFor(`child worker: ${what} (events so far: ${JSON.stringify(events)}; stderr: ${stderr})`, () =>
        events.find(match), timeoutMs),
    kill: () => {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill("SIGCONT");
        proc.kill("SIGKILL");
      }
    },
  };
}
