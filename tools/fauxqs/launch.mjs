// Starts fauxqs, an in-memory SQS emulator, on 127.0.0.1 for Rota's tests.
//
//   node launch.mjs [PORT]        # or FAUXQS_PORT=PORT; 0 (the default) picks a free port
//
// Once listening it prints exactly one line to stdout, {"endpoint":"http://127.0.0.1:PORT"},
// and nothing else; errors go to stderr with a non-zero exit. It stops on SIGTERM or SIGINT,
// and, when stdin is a pipe, when that pipe closes: a parent that dies (a killed `go test`)
// closes its end, so the server never outlives it.
//
// Why not the fauxqs CLI: it always binds 0.0.0.0 and logs every request regardless of
// FAUXQS_LOGGER. buildApp gives the same server (a fastify app) with logging off.
import { fstatSync } from "node:fs";

// fauxqs 1.9.2 requires Node 20 (Debian bookworm's nodejs is 18): say so plainly rather
// than fail somewhere inside fastify.
const nodeMajor = Number(process.versions.node.split(".")[0]);
if (nodeMajor < 20) {
  process.stderr.write(`launch.mjs: fauxqs needs Node.js >= 20, this is ${process.version}\n`);
  process.exit(1);
}
const { buildApp } = await import("fauxqs");

const HOST = "127.0.0.1";

function parsePort(raw) {
  if (!/^\d+$/.test(raw)) return undefined;
  const port = Number(raw);
  return port <= 65535 ? port : undefined;
}

const rawPort = process.argv[2] ?? process.env.FAUXQS_PORT ?? "0";
const port = parsePort(rawPort);
if (port === undefined) {
  process.stderr.write(`launch.mjs: invalid port ${JSON.stringify(rawPort)} (want 0-65535)\n`);
  process.exit(2);
}

const app = buildApp({ logger: false });

let stopping = false;
async function stop(reason) {
  if (stopping) return;
  stopping = true;
  try {
    // Closes open connections too (fauxqs sets forceCloseConnections) and ends pending
    // long polls, so this does not wait up to 20 s for a ReceiveMessage.
    await app.close();
    process.exit(0);
  } catch (err) {
    process.stderr.write(`launch.mjs: stop after ${reason}: ${err?.stack ?? err}\n`);
    process.exit(1);
  }
}

process.on("SIGTERM", () => stop("SIGTERM"));
process.on("SIGINT", () => stop("SIGINT"));

// Only a pipe means "a parent is watching": /dev/null or a terminal on stdin must not stop
// a server started by hand.
if (fstatSync(0).isFIFO()) {
  process.stdin.on("end", () => stop("stdin closed"));
  process.stdin.on("error", () => stop("stdin error"));
  process.stdin.resume();
}

try {
  await app.listen({ host: HOST, port });
} catch (err) {
  // The code (EADDRINUSE, ...) first: the Go harness looks for it to decide on a retry.
  process.stderr.write(`launch.mjs: listen on ${HOST}:${port}: ${err?.code ?? ""} ${err?.message ?? err}\n`);
  process.exit(1);
}
const { port: boundPort } = app.server.address();
process.stdout.write(JSON.stringify({ endpoint: `http://${HOST}:${boundPort}` }) + "\n");
