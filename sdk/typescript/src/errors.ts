/**
 * Errors of the SDK: {@link RotaError} for answers of the API, and the two errors a
 * handler throws to choose how its failure is reported ({@link RetryError},
 * {@link PermanentError}).
 */

/**
 * An error answer of the Rota API (`{"error": {"code", "message"}}`), or a transport
 * failure (status 0, code `network_error`).
 */
export class RotaError extends Error {
  /** The API's snake_case code, e.g. `not_found`, `lease_lost`, `invalid_request`. */
  readonly code: string;
  /** The HTTP status; 0 when no answer arrived. */
  readonly status: number;

  constructor(code: string, message: string, status: number, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "RotaError";
    this.code = code;
    this.status = status;
  }
}

/** True when err is the 409 `lease_lost` answer: the lease token is no longer current. */
export function isLeaseLost(err: unknown): boolean {
  return err instanceof RotaError && err.status === 409 && err.code === "lease_lost";
}

/**
 * Thrown by a handler to fail the attempt as retryable, optionally naming the delay
 * before the next attempt (otherwise the server's backoff applies).
 */
export class RetryError extends Error {
  /** Seconds until the task is due again, counted from the database's clock. */
  readonly afterSeconds: number | undefined;

  constructor(message: string, options?: { afterSeconds?: number; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "RetryError";
    this.afterSeconds = options?.afterSeconds;
  }
}

/** Thrown by a handler to fail the task for good: no more attempts (status FAILED). */
export class PermanentError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "PermanentError";
  }
}
