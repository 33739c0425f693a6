/**
 * Worker: claims tasks of one queue over the HTTP worker protocol and runs the handler
 * registered for each task's kind, with heartbeats, cancellation and graceful shutdown.
 *
 * The life of one claimed task:
 *   claim (long poll, never more tasks than free slots)
 *   -> handler(task, { signal }) runs, heartbeats extend the lease every heartbeatIntervalMs
 *   -> the outcome is reported with the claim's lease token:
 *        returned            complete, with the returned value as the task's output, or
 *                            the value given to ctx.setOutput if the handler called it
 *                            (a value that cannot be one: fail, not retryable)
 *        threw RetryError    fail, retryable, retry_after_seconds = afterSeconds
 *        threw PermanentError fail, not retryable (FAILED)
 *        threw anything else fail, retryable (the server's backoff)
 *        cancel requested    fail (the server makes it CANCELED)
 *        lease lost          nothing: the task belongs to someone else now
 *
 * The signal given to the handler aborts, with one of the reasons below, when a
 * heartbeat finds the lease lost (409) or a cancel requested, when the task's timeout
 * passes, or when a shutdown's grace period ends.
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";

import { Client, checkOutput } from "./client.js";
import { PermanentError, RetryError, isLeaseLost, RotaError } from "./errors.js";
import type { ClaimedTask, FailRequest, Task } from "./types.js";

/** What a handler gets besides the task. */
export interface HandlerContext {
  /** Aborts when the handler should stop; its reason says why (see the *Error classes). */
  signal: AbortSignal;
  /** The id this worker claims with. */
  workerId: string;
  /**
   * Sets the task's result, sent with complete once the handler returns, in place of its
   * return value (a flow step's output reaches the steps that depend on it as their
   * task's `inputs`). Any JSON value of at most 1 MiB (undefined or null: none); throws
   * at once (checkOutput) for one that cannot be sent. A later call replaces an earlier
   * one. A flow step's task also carries `flow_id`, `step`, `inputs` and, for a
   * for_each step, `item` and `index`.
   */
  setOutput(value: unknown): void;
}

/**
 * Runs one attempt. What it returns (or resolves to) is the task's output: any JSON value
 * of at most 1 MiB; undefined or null is none. Once the handler has called
 * ctx.setOutput, the value it set is the output instead and the return value is ignored.
 */
export type Handler<P = unknown> = (task: ClaimedTask<P>, ctx: HandlerContext) => unknown | Promise<unknown>;

export interface WorkerOptions {
  /** Default: new Client() (ROTA_SERVER, ROTA_API_TOKEN). */
  client?: Client;
  /** The queue to claim from. Default "default". */
  queue?: string;
  /** Handlers running at once; a claim never asks for more tasks than free slots. Default 10. */
  concurrency?: number;
  /** Default `<hostname>-<pid>-<random>`. */
  workerId?: string;
  /** The lease a claim takes and each heartbeat renews, 1-3600. Default 30. */
  leaseSeconds?: number;
  /** How often a running task's lease is renewed. Default a third of the lease. */
  heartbeatIntervalMs?: number;
  /** Long poll: how long the server holds a claim open for a task to come due, 0-20. Default 20. */
  waitSeconds?: number;
  /** Handler timeout for tasks whose timeout_seconds is 0; 0 = none. Default 0. */
  defaultTimeoutSeconds?: number;
  /** On shutdown, how long running handlers may go on before their signal aborts. Default 30000. */
  shutdownGraceMs?: number;
  /** After that abort, how long run() waits for the handlers to settle and report. Default 5000. */
  abortGraceMs?: number;
  /** run() stops the worker on SIGTERM and SIGINT (a second one skips the grace period). Default true. */
  handleSignals?: boolean;
  /** Called for each event of the worker. Default: errors are written to stderr. */
  onEvent?: (event: WorkerEvent) => void;
}

export type WorkerEvent =
  | { type: "claimed"; task: ClaimedTask }
  | { type: "completed"; task: Task }
  | { type: "failed"; task: Task; error: string; retryable: boolean }
  | { type: "canceled"; task: Task }
  /** The lease is someone else's now: found by a heartbeat, or the outcome was refused (409). */
  | { type: "lease_lost"; task: ClaimedTask; when: "heartbeat" | "outcome" }
  | { type: "stopping"; signal?: string }
  | { type: "error"; error: unknown; task?: ClaimedTask };

/** The abort reason when the task's lease was lost: do not finish the work. */
export class LeaseLostError extends Error {
  override name = "LeaseLostError";
}
/** The abort reason when a cancel of the task was requested. */
export class TaskCanceledError extends Error {
  override name = "TaskCanceledError";
}
/** The abort reason when the task's timeout passed. */
export class TaskTimeoutError extends Error {
  override name = "TaskTimeoutError";
}
/** The abort reason when the worker shuts down and the grace period is over. */
export class WorkerShutdownError extends Error {
  override name = "WorkerShutdownError";
}

/** One claimed task while this worker holds it. */
interface Job {
  task: ClaimedTask;
  ctl: AbortController;
  heartbeat?: NodeJS.Timeout;
  timeout?: NodeJS.Timeout;
  heartbeatInFlight: boolean;
  done?: Promise<void>;
  /** What the handler set with setOutput, once outputSet: the output in place of its return value. */
  output?: unknown;
  outputSet?: boolean;
}

export class Worker {
  readonly workerId: string;
  readonly client: Client;
  readonly queue: string;
  readonly #concurrency: number;
  readonly #leaseSeconds: number;
  readonly #heartbeatMs: number;
  readonly #waitSeconds: number;
  readonly #defaultTimeoutSeconds: number;
  readonly #graceMs: number;
  readonly #abortGraceMs: number;
  readonly #handleSignals: boolean;
  readonly #onEvent: (event: WorkerEvent) => void;
  readonly #handlers = new Map<string, Handler<any>>();
  readonly #active = new Set<Job>();

  #running?: Promise<void>;
  #stopping = false;
  #claimAbort = new AbortController();
  #wake?: () => void; // resolves the wait for a free slot (or for stop)
  #abortNow?: () => void; // skips the rest of the grace period
  #abortRequested = false; // a second signal arrived

  constructor(options: WorkerOptions = {}) {
    this.client = options.client ?? new Client();
    this.queue = options.queue ?? "default";
    this.#concurrency = options.concurrency ?? 10;
    this.#leaseSeconds = options.leaseSeconds ?? 30;
    this.#heartbeatMs = options.heartbeatIntervalMs ?? (this.#leaseSeconds * 1000) / 3;
    this.#waitSeconds = options.waitSeconds ?? 20;
    this.#defaultTimeoutSeconds = options.defaultTimeoutSeconds ?? 0;
    this.#graceMs = options.shutdownGraceMs ?? 30_000;
    this.#abortGraceMs = options.abortGraceMs ?? 5_000;
    this.#handleSignals = options.handleSignals ?? true;
    this.#onEvent = options.onEvent ?? defaultOnEvent;
    this.workerId = options.workerId ?? `${hostname()}-${process.pid}-${randomBytes(4).toString("hex")}`;
    check(Number.isInteger(this.#concurrency) && this.#concurrency >= 1, "concurrency must be an integer >= 1");
    check(Number.isInteger(this.#leaseSeconds) && this.#leaseSeconds >= 1 && this.#leaseSeconds <= 3600, "leaseSeconds must be an integer in 1-3600");
    check(this.#heartbeatMs > 0 && this.#heartbeatMs < this.#leaseSeconds * 1000, "heartbeatIntervalMs must be positive and shorter than the lease");
    check(Number.isInteger(this.#waitSeconds) && this.#waitSeconds >= 0 && this.#waitSeconds <= 20, "waitSeconds must be an integer in 0-20");
  }

  /** Registers the handler of a kind (one per kind; a second call replaces it). */
  handle<P = unknown>(kind: string, handler: Handler<P>): this {
    this.#handlers.set(kind, handler);
    return this;
  }

  /** Claims and runs tasks until stop() or a signal; resolves once shut down. */
  run(): Promise<void> {
    if (this.#running) throw new Error("rota Worker: run() was already called (a Worker runs once)");
    this.#running = this.#run();
    return this.#running;
  }

  /**
   * Stops claiming, lets running handlers finish within the grace period, aborts the
   * rest and resolves when run() has returned.
   */
  async stop(): Promise<void> {
    this.#stopping = true;
    this.#claimAbort.abort(new WorkerShutdownError("worker stopping"));
    this.#wake?.();
    await this.#running;
  }

  async #run(): Promise<void> {
    const onSignal = (signal: NodeJS.Signals) => {
      if (this.#stopping) {
        this.#abortRequested = true; // a second signal: no more grace
        this.#abortNow?.();
        return;
      }
      this.#emit({ type: "stopping", signal });
      void this.stop();
    };
    if (this.#handleSignals) {
      process.on("SIGTERM", onSignal);
      process.on("SIGINT", onSignal);
    }
    try {
      await this.#claimLoop();
      await this.#drain();
    } finally {
      if (this.#handleSignals) {
        process.off("SIGTERM", onSignal);
        process.off("SIGINT", onSignal);
      }
    }
  }

  async #claimLoop(): Promise<void> {
    let failures = 0;
    while (!this.#stopping) {
      const free = this.#concurrency - this.#active.size;
      if (free <= 0) {
        await new Promise<void>((resolve) => (this.#wake = resolve));
        continue;
      }
      let tasks: ClaimedTask[];
      try {
        tasks = await this.client.claim(
          this.queue,
          {
            worker_id: this.workerId,
            limit: Math.min(free, 100),
            lease_seconds: this.#leaseSeconds,
            wait_seconds: this.#waitSeconds,
          },
          { signal: this.#claimAbort.signal },
        );
        failures = 0;
      } catch (err) {
        // An aborted long poll may have claimed tasks whose answer never arrived: they
        // come back when their lease expires, as from a crashed worker.
        if (this.#stopping) break;
        this.#emit({ type: "error", error: err });
        failures++;
        await this.#pause(Math.min(5_000, 100 * 2 ** failures));
        continue;
      }
      for (const task of tasks) this.#start(task);
      if (tasks.length === 0 && this.#waitSeconds === 0) await this.#pause(1_000);
    }
  }

  // pause sleeps ms, or less if the worker stops meanwhile.
  async #pause(ms: number): Promise<void> {
    await sleep(ms, undefined, { signal: this.#claimAbort.signal }).catch(() => {});
  }

  #start(task: ClaimedTask): void {
    const job: Job = { task, ctl: new AbortController(), heartbeatInFlight: false };
    this.#active.add(job);
    this.#emit({ type: "claimed", task });
    job.heartbeat = setInterval(() => void this.#heartbeat(job), this.#heartbeatMs);
    const timeoutSeconds = task.timeout_seconds || this.#defaultTimeoutSeconds;
    if (timeoutSeconds > 0) {
      job.timeout = setTimeout(
        () => job.ctl.abort(new TaskTimeoutError(`timed out after ${timeoutSeconds}s`)),
        timeoutSeconds * 1000,
      );
    }
    job.done = this.#execute(job).finally(() => {
      clearInterval(job.heartbeat);
      clearTimeout(job.timeout);
      this.#active.delete(job);
      this.#wake?.();
    });
  }

  async #heartbeat(job: Job): Promise<void> {
    // An aborted handler (cancel, timeout, shutdown) keeps its lease while it winds down
    // and reports; only a lost lease ends the heartbeats.
    if (job.heartbeatInFlight || job.ctl.signal.reason instanceof LeaseLostError) return;
    job.heartbeatInFlight = true;
    try {
      // Bounded by the lease: a heartbeat that hangs longer is of no use, and the next
      // one waits for it.
      const task = await this.client.heartbeat(job.task.id, job.task.lease_token, this.#leaseSeconds, {
        signal: AbortSignal.timeout(this.#leaseSeconds * 1000),
        traceparent: job.task.traceparent,
      });
      if (task.cancel_requested_at !== null) {
        job.ctl.abort(new TaskCanceledError("cancel requested"));
      }
    } catch (err) {
      if (isLeaseLost(err) || (err instanceof RotaError && err.status === 404)) {
        clearInterval(job.heartbeat);
        job.ctl.abort(new LeaseLostError("lease lost"));
      } else {
        // A transient failure: the lease lasts a few more intervals, try again then.
        this.#emit({ type: "error", error: err, task: job.task });
      }
    } finally {
      job.heartbeatInFlight = false;
    }
  }

  async #execute(job: Job): Promise<void> {
    const { task, ctl } = job;
    let failure: unknown;
    let ok = false;
    let output: unknown;
    try {
      const handler = this.#handlers.get(task.kind);
      if (!handler) throw new Error(`no handler registered for kind "${task.kind}"`);
      const returned = await handler(task, {
        signal: ctl.signal,
        workerId: this.workerId,
        setOutput: (value) => {
          if (value !== null) checkOutput(value); // throws at once, while the handler can still act
          job.output = value === null ? undefined : value;
          job.outputSet = true;
        },
      });
      output = job.outputSet ? job.output : returned;
      ok = true;
    } catch (err) {
      failure = err;
    }
    if (ok) {
      try {
        checkOutput(output);
      } catch (err) {
        // Checked here, not left to the server's 413: a success whose result cannot be
        // kept fails for good, with the reason, instead of silently losing it.
        ok = false;
        failure = new PermanentError(`invalid output: ${(err as Error).message}`);
      }
    }
    clearInterval(job.heartbeat);
    clearTimeout(job.timeout);

    const reason: unknown = ctl.signal.aborted ? ctl.signal.reason : undefined;
    if (reason instanceof LeaseLostError) {
      this.#emit({ type: "lease_lost", task, when: "heartbeat" });
      return;
    }
    if (reason instanceof TaskCanceledError) {
      await this.#report(job, "canceled", { error: "canceled: cancel requested", retryable: false });
      return;
    }
    if (ok) {
      await this.#report(job, "completed", undefined, output);
      return;
    }
    await this.#report(job, "failed", failRequest(failure, reason));
  }

  // report sends the outcome, retrying transient failures while the lease may still
  // hold; a 409 means the lease is gone and nothing was written.
  async #report(job: Job, kind: "completed" | "canceled" | "failed", fail?: FailRequest, output?: unknown): Promise<void> {
    const { task } = job;
    const deadline = Date.now() + this.#leaseSeconds * 1000;
    for (let attempt = 1; ; attempt++) {
      try {
        const result = fail
          ? await this.client.fail(task.id, task.lease_token, fail, { traceparent: task.traceparent })
          : await this.client.complete(task.id, task.lease_token, { output, traceparent: task.traceparent });
        if (kind === "failed" && fail) {
          this.#emit({ type: "failed", task: result, error: fail.error, retryable: fail.retryable !== false });
        } else {
          this.#emit({ type: kind as "completed" | "canceled", task: result });
        }
        return;
      } catch (err) {
        if (isLeaseLost(err) || (err instanceof RotaError && err.status === 404)) {
          this.#emit({ type: "lease_lost", task, when: "outcome" });
          return;
        }
        const transient = err instanceof RotaError && (err.status === 0 || err.status >= 500 || err.status === 429);
        this.#emit({ type: "error", error: err, task });
        if (!transient || Date.now() > deadline) return;
        await sleep(Math.min(2_000, 100 * 2 ** attempt));
      }
    }
  }

  // drain waits for running handlers: the grace period, then their signals abort and
  // they get abortGraceMs more to settle. Heartbeats stop with each handler.
  async #drain(): Promise<void> {
    const settled = () => Promise.allSettled([...this.#active].map((j) => j.done));
    const abortNow = new Promise<void>((resolve) => (this.#abortNow = resolve));
    if (this.#active.size > 0 && !this.#abortRequested) {
      await raceTimeout(this.#graceMs, settled(), abortNow);
    }
    if (this.#active.size > 0) {
      for (const job of this.#active) job.ctl.abort(new WorkerShutdownError("worker shutting down"));
      await raceTimeout(this.#abortGraceMs, settled());
    }
    for (const job of this.#active) {
      // Still running after all: stop renewing its lease so another worker gets it.
      clearInterval(job.heartbeat);
      clearTimeout(job.timeout);
    }
  }

  #emit(event: WorkerEvent): void {
    try {
      this.#onEvent(event);
    } catch {
      // A faulty listener must not break the worker.
    }
  }
}

// failRequest turns what a handler threw into the fail body.
function failRequest(err: unknown, abortReason: unknown): FailRequest {
  if (abortReason instanceof TaskTimeoutError || abortReason instanceof WorkerShutdownError) {
    return { error: `${abortReason.message}: ${errorText(err)}`, retryable: true };
  }
  if (err instanceof PermanentError) return { error: errorText(err), retryable: false };
  if (err instanceof RetryError && err.afterSeconds !== undefined) {
    return { error: errorText(err), retryable: true, retry_after_seconds: err.afterSeconds };
  }
  return { error: errorText(err), retryable: true };
}

// raceTimeout waits for the first of the promises or ms, and clears its timer either way
// (a pending timer would keep the process alive after run() returned).
async function raceTimeout(ms: number, ...promises: Promise<unknown>[]): Promise<void> {
  const ctl = new AbortController();
  try {
    await Promise.race([...promises, sleep(ms, undefined, { signal: ctl.signal })]);
  } finally {
    ctl.abort();
  }
}

function errorText(err: unknown): string {
  const text = err instanceof Error ? err.message || err.name : String(err);
  return text || "handler failed";
}

function check(ok: boolean, message: string): void {
  if (!ok) throw new RangeError(`rota Worker: ${message}`);
}

function defaultOnEvent(event: WorkerEvent): void {
  if (event.type === "error") {
    const id = event.task ? ` (task ${event.task.id})` : "";
    console.error(`rota worker${id}:`, event.error instanceof Error ? event.error.message : event.error);
  }
}
