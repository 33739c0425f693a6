-- The W3C trace context of the call that created a task (issue 15, OpenTelemetry): a
-- small jsonb carrier, {"traceparent": "00-...", "tracestate": "..."}, NULL when the
-- creating call was not traced. The claim returns it, so the attempt's span continues
-- the enqueuer's trace in any worker (the Go runtime, the HTTP worker protocol).
--
-- A nullable column without a default is a catalog change only: no table rewrite, no
-- scan, and the ACCESS EXCLUSIVE lock is held for milliseconds (lock_timeout bounds its
-- wait behind a long reader: docs/architecture.md, "Online migrations").
ALTER TABLE rota.tasks ADD COLUMN IF NOT EXISTS trace_context jsonb;
