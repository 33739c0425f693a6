/**
 * Rota's TypeScript SDK: a {@link Client} for the task routes of the HTTP API and a
 * {@link Worker} that runs handlers over the worker protocol. Node 20+, no dependencies.
 */
export { Client, DEFAULT_SERVER, MAX_OUTPUT_BYTES, checkOutput } from "./client.js";
export type { ClientOptions, CallOptions, CompleteOptions } from "./client.js";
export { RotaError, RetryError, PermanentError, isLeaseLost } from "./errors.js";
export {
  Worker,
  LeaseLostError,
  TaskCanceledError,
  TaskTimeoutError,
  WorkerShutdownError,
} from "./worker.js";
export type { Handler, HandlerContext, WorkerEvent, WorkerOptions } from "./worker.js";
export type * from "./types.js";
