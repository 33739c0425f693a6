/**
 * Client: the task routes of the Rota HTTP API, and the worker protocol routes the
 * {@link Worker} uses (claim, heartbeat, complete, fail).
 */
import { RotaError } from "./errors.js";
import type {
  Attempt,
  ClaimRequest,
  ClaimedTask,
  CreatedTask,
  EnqueueRequest,
  FailRequest,
  Flow,
  FlowPage,
  ListFlowsOptions,
  ListTasksOptions,
  StartFlowRequest,
  Task,
  TaskPage,
} from "./types.js";

export interface ClientOptions {
  /** The server, e.g. "http://127.0.0.1:8080". Default: $ROTA_SERVER, else that address. */
  baseUrl?: string;
  /** Sent as `Authorization: Bearer <token>`. Default: $ROTA_API_TOKEN, else none. */
  token?: string;
  /** Per-request time limit in ms, on top of a claim's wait_seconds. Default 30000. */
  timeoutMs?: number;
  /** A fetch to use instead of the global one (tests, proxies). */
  fetch?: typeof fetch;
}

/** Options every call accepts. */
export interface CallOptions {
  /** Aborts the request; the call then rejects with the signal's reason. */
  signal?: AbortSignal;
  /**
   * A W3C trace context, sent as the `traceparent` header: tasks created by the call
   * store it and their attempt continues the trace; the worker sends a claimed task's
   * back with heartbeat, complete and fail.
   */
  traceparent?: string;
  /** Sent as the `tracestate` header along with traceparent. */
  tracestate?: string;
}

/** Options of {@link Client.complete}. */
export interface CompleteOptions extends CallOptions {
  /**
   * The task's result: any JSON value, at most {@link MAX_OUTPUT_BYTES} of JSON text
   * (larger: RotaError payload_too_large, 413, and the task stays PROCESSING under its
   * lease). undefined or null: none.
   */
  output?: unknown;
}

export const DEFAULT_SERVER = "http://127.0.0.1:8080";

/** A task's output at most: 1 MiB of compact JSON text (the server answers 413 past it). */
export const MAX_OUTPUT_BYTES = 1 << 20;

/**
 * Throws (a TypeError or RangeError saying why) when value cannot be a task's output:
 * JSON.stringify cannot encode it (a BigInt, a cycle) or its JSON is larger than
 * {@link MAX_OUTPUT_BYTES}, measured as the server measures it. undefined is no output.
 */
export function checkOutput(value: unknown): void {
  if (value === undefined) return;
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (err) {
    throw new TypeError(`the output does not encode as JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (text === undefined) throw new TypeError(`the output does not encode as JSON: ${typeof value}`);
  const size = Buffer.byteLength(text, "utf8");
  if (size > MAX_OUTPUT_BYTES) {
    throw new RangeError(`the output is ${size} bytes of JSON, more than the ${MAX_OUTPUT_BYTES} allowed`);
  }
}

export class Client {
  readonly baseUrl: string;
  readonly #token: string | undefined;
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;

  constructor(options: ClientOptions = {}) {
    const base = options.baseUrl ?? (process.env.ROTA_SERVER || DEFAULT_SERVER);
    this.baseUrl = base.replace(/\/+$/, "");
    this.#token = options.token ?? (process.env.ROTA_API_TOKEN || undefined);
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#fetch = options.fetch ?? globalThis.fetch;
  }

  /** Creates a task: `POST /api/tasks`. An idempotency hit returns the existing task. */
  async enqueue<P = unknown>(task: EnqueueRequest, opts?: CallOptions): Promise<CreatedTask<P>> {
    return this.#call("POST", "/api/tasks", { body: createBody(task), ...opts });
  }

  /**
   * Creates 1 to 1,000 tasks, all or nothing: `POST /api/tasks/batch`. The batch's
   * warnings (see CreatedTask) are on every task returned.
   */
  async enqueueBatch(tasks: EnqueueRequest[], opts?: CallOptions): Promise<CreatedTask[]> {
    const res = await this.#call<{ tasks: Task[]; warnings?: string[] }>("POST", "/api/tasks/batch", {
      body: { tasks: tasks.map(createBody) },
      ...opts,
    });
    return res.warnings?.length ? res.tasks.map((t) => ({ ...t, warnings: res.warnings })) : res.tasks;
  }

  /** `GET /api/tasks/{id}`; a RotaError with status 404 when there is no such task. */
  async get<P = unknown>(id: string, opts?: CallOptions): Promise<Task<P>> {
    return this.#call("GET", `/api/tasks/${encodeURIComponent(id)}`, opts);
  }

  /** The attempts of a task, oldest first: `GET /api/tasks/{id}/attempts`. */
  async attempts(id: string, opts?: CallOptions): Promise<Attempt[]> {
    const res = await this.#call<{ attempts: Attempt[] }>(
      "GET",
      `/api/tasks/${encodeURIComponent(id)}/attempts`,
      opts,
    );
    return res.attempts;
  }

  /** One page of tasks: `GET /api/tasks`. Page on with `cursor: page.next_cursor`. */
  async list(filters: ListTasksOptions = {}, opts?: CallOptions): Promise<TaskPage> {
    const q = new URLSearchParams();
    const statuses = filters.status === undefined ? [] : [filters.status].flat();
    for (const s of statuses) q.append("status", s);
    if (filters.queue !== undefined) q.set("queue", filters.queue);
    if (filters.kind !== undefined) q.set("kind", filters.kind);
    if (filters.limit !== undefined) q.set("limit", String(filters.limit));
    if (filters.cursor) q.set("cursor", filters.cursor);
    const qs = q.toString();
    return this.#call("GET", `/api/tasks${qs ? `?${qs}` : ""}`, opts);
  }

  /**
   * Every task matching the filters, page after page. A page may hold fewer than limit
   * tasks with more to follow (the server caps a page's payload bytes), so only an
   * empty next_cursor ends the walk.
   */
  async *listAll(filters: Omit<ListTasksOptions, "cursor"> = {}, opts?: CallOptions): AsyncGenerator<Task> {
    let cursor = "";
    do {
      const page = await this.list({ ...filters, cursor }, opts);
      yield* page.tasks;
      cursor = page.next_cursor;
    } while (cursor !== "");
  }

  /**
   * Cancels a task: `POST /api/tasks/{id}/cancel`. A waiting task becomes CANCELED; a
   * running one stays PROCESSING with cancel_requested_at set until its worker stops.
   */
  async cancel(id: string, opts?: CallOptions): Promise<Task> {
    return this.#call("POST", `/api/tasks/${encodeURIComponent(id)}/cancel`, opts);
  }

  /** Runs a finished task again (back to PENDING): `POST /api/tasks/{id}/replay`. */
  async replay(id: string, opts?: CallOptions): Promise<Task> {
    return this.#call("POST", `/api/tasks/${encodeURIComponent(id)}/replay`, opts);
  }

  // Flows (DESIGN.md section 10).

  /**
   * Starts a flow: `POST /api/flows`. An invalid graph is a RotaError 400 naming the
   * step, and nothing is written; an idempotency hit returns the existing flow.
   */
  async startFlow(req: StartFlowRequest, opts?: CallOptions): Promise<Flow> {
    return this.#call("POST", "/api/flows", { body: req, ...opts });
  }

  /** A flow with its steps: `GET /api/flows/{id}`. */
  async getFlow(id: string, opts?: CallOptions): Promise<Flow> {
    return this.#call("GET", `/api/flows/${encodeURIComponent(id)}`, opts);
  }

  /** One page of flows, newest first, without steps: `GET /api/flows`. */
  async listFlows(filters: ListFlowsOptions = {}, opts?: CallOptions): Promise<FlowPage> {
    const q = new URLSearchParams();
    const statuses = filters.status === undefined ? [] : [filters.status].flat();
    for (const s of statuses) q.append("status", s);
    if (filters.name !== undefined) q.set("name", filters.name);
    if (filters.limit !== undefined) q.set("limit", String(filters.limit));
    if (filters.cursor) q.set("cursor", filters.cursor);
    const qs = q.toString();
    return this.#call("GET", `/api/flows${qs ? `?${qs}` : ""}`, opts);
  }

  /** Cancels a RUNNING flow: `POST /api/flows/{id}/cancel` (409 once it ended otherwise). */
  async cancelFlow(id: string, opts?: CallOptions): Promise<Flow> {
    return this.#call("POST", `/api/flows/${encodeURIComponent(id)}/cancel`, opts);
  }

  /** Runs a FAILED or CANCELED flow's failed and canceled steps again: `POST /api/flows/{id}/replay`. */
  async replayFlow(id: string, opts?: CallOptions): Promise<Flow> {
    return this.#call("POST", `/api/flows/${encodeURIComponent(id)}/replay`, opts);
  }

  // Worker protocol. Each outcome carries the lease token of the claim; a token that is
  // no longer current is refused with 409 lease_lost (see isLeaseLost).

  /** Claims due tasks of a queue, waiting up to wait_seconds for one (long poll). */
  async claim<P = unknown>(queue: string, req: ClaimRequest, opts?: CallOptions): Promise<ClaimedTask<P>[]> {
    const res = await this.#call<{ tasks: ClaimedTask<P>[] }>(
      "POST",
      `/api/queues/${encodeURIComponent(queue)}/claim`,
      { body: req, extraTimeoutMs: (req.wait_seconds ?? 0) * 1000, ...opts },
    );
    return res.tasks;
  }

  /** Extends the lease. A set cancel_requested_at in the answer asks the worker to stop. */
  async heartbeat(id: string, leaseToken: string, leaseSeconds?: number, opts?: CallOptions): Promise<Task> {
    const body: Record<string, unknown> = { lease_token: leaseToken };
    if (leaseSeconds !== undefined) body.lease_seconds = leaseSeconds;
    return this.#call("POST", `/api/tasks/${encodeURIComponent(id)}/heartbeat`, { body, ...opts });
  }

  /** Reports success; the task becomes SUCCEEDED, with opts.output as its output. */
  async complete(id: string, leaseToken: string, opts: CompleteOptions = {}): Promise<Task> {
    const { output, ...call } = opts;
    const body: Record<string, unknown> = { lease_token: leaseToken };
    if (output !== undefined && output !== null) body.output = output;
    return this.#call("POST", `/api/tasks/${encodeURIComponent(id)}/complete`, { body, ...call });
  }

  /** Reports a failure: PENDING again (retryable, attempts left), DEAD, FAILED or CANCELED. */
  async fail(id: string, leaseToken: string, req: FailRequest, opts?: CallOptions): Promise<Task> {
    return this.#call("POST", `/api/tasks/${encodeURIComponent(id)}/fail`, {
      body: { lease_token: leaseToken, ...req },
      ...opts,
    });
  }

  async #call<T>(
    method: string,
    path: string,
    opts: { body?: unknown; extraTimeoutMs?: number } & CallOptions = {},
  ): Promise<T> {
    const headers: Record<string, string> = { Accept: "application/json" };
    if (opts.body !== undefined) headers["Content-Type"] = "application/json";
    if (this.#token) headers.Authorization = `Bearer ${this.#token}`;
    if (opts.traceparent) {
      headers.traceparent = opts.traceparent; // W3C Trace Context, passed through as is
      if (opts.tracestate) headers.tracestate = opts.tracestate;
    }

    // One controller for both the caller's signal and the time limit (AbortSignal.any
    // needs Node 20.3).
    const ctl = new AbortController();
    const limitMs = this.#timeoutMs + (opts.extraTimeoutMs ?? 0);
    const timer = setTimeout(
      () => ctl.abort(new RotaError("timeout", `${method} ${path}: no answer within ${limitMs} ms`, 0)),
      limitMs,
    );
    const onAbort = () => ctl.abort(opts.signal?.reason);
    if (opts.signal?.aborted) onAbort();
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      let res: Response;
      let text: string;
      try {
        res = await this.#fetch(this.baseUrl + path, {
          method,
          headers,
          body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
          signal: ctl.signal,
        });
        text = await res.text();
      } catch (err) {
        if (ctl.signal.aborted) throw ctl.signal.reason;
        // fetch says only "fetch failed"; the reason (ECONNREFUSED, ...) is its cause.
        const cause = (err as Error).cause as Error | undefined;
        const why = cause?.message ? `${(err as Error).message}: ${cause.message}` : (err as Error).message;
        throw new RotaError("network_error", `${method} ${path}: ${why}`, 0, { cause: err });
      }
      const data = parseJSON(text);
      if (!res.ok) throw apiError(res.status, data, text);
      return data as T;
    } finally {
      clearTimeout(timer);
      opts.signal?.removeEventListener("abort", onAbort);
    }
  }
}

// createBody sends a Date as its RFC 3339 string and leaves out absent fields: the
// server rejects unknown fields but accepts every documented one.
function createBody(t: EnqueueRequest): Record<string, unknown> {
  const body: Record<string, unknown> = { ...t };
  if (t.scheduled_for instanceof Date) body.scheduled_for = t.scheduled_for.toISOString();
  for (const k of Object.keys(body)) if (body[k] === undefined) delete body[k];
  return body;
}

function parseJSON(text: string): unknown {
  if (text === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function apiError(status: number, data: unknown, text: string): RotaError {
  const e = (data as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
  if (e && typeof e.code === "string") {
    return new RotaError(e.code, typeof e.message === "string" ? e.message : e.code, status);
  }
  return new RotaError("unexpected_response", `HTTP ${status}: ${text.slice(0, 200)}`, status);
}
