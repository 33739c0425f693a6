/**
 * The API's objects, with its own snake_case field names (docs/api.md, openapi.json).
 * The server may add fields; none is renamed.
 */

export type TaskStatus =
  | "PENDING"
  | "ENQUEUED"
  | "PROCESSING"
  | "SUCCEEDED"
  | "FAILED"
  | "DEAD"
  | "CANCELED";

/** A task as the API shows it. Times are RFC 3339 UTC strings; absent ones are null. */
export interface Task<P = unknown> {
  id: string;
  queue: string;
  kind: string;
  payload: P;
  status: TaskStatus;
  priority: number;
  scheduled_for: string;
  attempt_count: number;
  max_attempts: number;
  idempotency_key: string | null;
  /** The task's group within its queue (group limits, fair claiming); null when none. */
  group_key: string | null;
  timeout_seconds: number;
  worker_id: string | null;
  lease_expires_at: string | null;
  cancel_requested_at: string | null;
  enqueued_at: string | null;
  processing_started_at: string | null;
  completed_at: string | null;
  last_error: string | null;
  /** What the attempt that succeeded returned (any JSON value); null when none. */
  output: unknown;
  created_at: string;
  updated_at: string;
  /** A flow step's task: its flow, its step's name, each dependency's output by step name. */
  flow_id?: string;
  step?: string;
  inputs?: Record<string, unknown>;
  /** A for_each step's task: the element it runs for (may be null) and its 0-based index. */
  item?: unknown;
  index?: number;
}

/**
 * A task as a create returns it. `warnings` is there when the task was created but no
 * live worker may run it yet (its queue has none, or none handles its kind).
 */
export interface CreatedTask<P = unknown> extends Task<P> {
  warnings?: string[];
}

/** A task as a claim returns it: with the lease token every outcome must carry. */
export interface ClaimedTask<P = unknown> extends Task<P> {
  lease_token: string;
  /** The W3C trace context of the call that created the task; absent when untraced. */
  traceparent?: string;
  tracestate?: string;
}

/** One attempt of a task; the running one is last, with id 0 and outcome null. */
export interface Attempt {
  id: number;
  task_id: string;
  attempt: number;
  worker_id: string | null;
  started_at: string;
  finished_at: string | null;
  outcome:
    | "SUCCEEDED"
    | "RETRIED"
    | "DEAD"
    | "FAILED"
    | "CANCELED"
    | "LEASE_EXPIRED"
    | "REPLAYED"
    | null;
  error: string | null;
}

/** The body of `POST /api/tasks`. Give at most one of scheduled_for and delay_seconds. */
export interface EnqueueRequest {
  kind: string;
  /** Default "default". */
  queue?: string;
  /** Any JSON value; {} when absent. */
  payload?: unknown;
  /** RFC 3339 time, or a Date (sent as its ISO string). */
  scheduled_for?: string | Date;
  /** Seconds from the database's now(). */
  delay_seconds?: number;
  max_attempts?: number;
  priority?: number;
  /** A second create with the same key returns the first task (200, not 201). */
  idempotency_key?: string;
  /** Per-attempt handler timeout; 0 = the worker's default. */
  timeout_seconds?: number;
  /**
   * Puts the task in a group of its queue (at most 128 characters): the queue's group
   * limits count per key, and claims take the groups in turn.
   */
  group_key?: string;
}

/** Filters of `GET /api/tasks`. */
export interface ListTasksOptions {
  status?: TaskStatus | TaskStatus[];
  queue?: string;
  kind?: string;
  /** 1-1000, default 50. */
  limit?: number;
  /** The next_cursor of the previous page. */
  cursor?: string;
}

export interface TaskPage {
  tasks: Task[];
  /** "" on the last page. */
  next_cursor: string;
}

export interface ClaimRequest {
  worker_id: string;
  /** 1-100, default 1. */
  limit?: number;
  /** 1-3600, default 30. */
  lease_seconds?: number;
  /** 0-20: how long the server waits for a due task (long poll). */
  wait_seconds?: number;
}

export interface FailRequest {
  error: string;
  /** Default true. */
  retryable?: boolean;
  retry_after_seconds?: number;
}

export type FlowStatus = "RUNNING" | "SUCCEEDED" | "FAILED" | "CANCELED";

/** WAITING until the step's tasks exist, then a task status (a for_each step's sums up its tasks'). */
export type StepStatus = "WAITING" | TaskStatus;

/** One step of a flow. */
export interface FlowStep {
  name: string;
  kind: string;
  queue: string;
  status: StepStatus;
  depends_on: string[];
  for_each: string | null;
  /** The group key every task of the step carries; null when none. */
  group_key: string | null;
  /** In element order; empty while WAITING. */
  task_ids: string[];
  /** Its task's output, or a for_each step's array of its tasks' outputs in element order. */
  output: unknown;
  error: string | null;
}

/** A flow as the API shows it; list answers have no steps. */
export interface Flow {
  id: string;
  name: string | null;
  queue: string;
  status: FlowStatus;
  idempotency_key: string | null;
  created_at: string;
  updated_at: string;
  completed_at: string | null;
  steps?: FlowStep[];
}

/** One step of `POST /api/flows`. */
export interface StepRequest {
  name: string;
  kind: string;
  payload?: unknown;
  /** Other steps of the flow, in any order. */
  depends_on?: string[];
  /** One of depends_on: one task per element of that step's output array. */
  for_each?: string;
  queue?: string;
  max_attempts?: number;
  priority?: number;
  timeout_seconds?: number;
  /** Every task of the step (each for_each element's too) gets it, as a task's group_key. */
  group_key?: string;
}

/** The body of `POST /api/flows`. */
export interface StartFlowRequest {
  name?: string;
  /** The steps' queue unless a step names its own. Default "default". */
  queue?: string;
  /** A second start with the key of a live or succeeded flow returns that flow. */
  idempotency_key?: string;
  steps: StepRequest[];
}

/** Filters of `GET /api/flows`. */
export interface ListFlowsOptions {
  status?: FlowStatus | FlowStatus[];
  name?: string;
  limit?: number;
  cursor?: string;
}

export interface FlowPage {
  flows: Flow[];
  /** "" on the last page. */
  next_cursor: string;
}
