// Package sqstest runs a real SQS-compatible server for tests: fauxqs, an in-memory
// emulator from npm (pinned at 1.9.2 in tools/fauxqs; 2.x needs Node 22), started on
// 127.0.0.1 on a free port by tools/fauxqs/launch.mjs.
//
//	srv := sqstest.Start(t)              // stopped when t ends
//	url := srv.CreateQueue(t, "tasks")   // address queues by this URL
//	client := srv.Client(t)              // or ROTA_SQS_ENDPOINT=srv.Endpoint()
//	srv.Kill(); srv.Restart()            // an outage: same endpoint, no queues, no messages
//	srv.CountMessages(t, url).Total()    // visible + in flight + delayed
//
// Each Start is its own server, so tests may run in parallel. Start takes testing.TB, so
// benchmarks use it too; MeasureCeiling and QueueCounts take a plain client and context.
//
// # Setup
//
// scripts/test.sh provisions everything (Node.js when missing, `npm ci` in tools/fauxqs).
// Without node on PATH or without tools/fauxqs/node_modules a test is skipped on a
// developer's machine but fails when CI=true or ROTA_REQUIRE_INTEGRATION=1: CI must never
// pass by skipping the SQS suites. The launcher is found by walking up from the test's
// working directory to the directory holding tools/fauxqs, or at $ROTA_FAUXQS_DIR. It
// exits when its stdin closes, so a test killed with SIGKILL leaves no server behind.
//
// # fauxqs as it behaves (1.9.2; each confirmed by this package's tests unless noted)
//
//   - Queue URLs look like http://sqs.us-east-1.localhost:PORT/000000000000/NAME: the host
//     is not the endpoint, so clients send every request to the endpoint (BaseEndpoint,
//     as NewClient does) and pass the URL as a parameter. Queues are looked up by that
//     exact URL, and kept per region, taken from the request's signature (not tested).
//   - A delete with a stale receipt handle (from an earlier receive of a message since
//     received again) succeeds silently and deletes nothing, for DeleteMessage and
//     DeleteMessageBatch alike. A lost lease can never be detected from a delete.
//   - A visibility change with a stale handle, unlike a delete, fails:
//     ChangeMessageVisibility with *types.MessageNotInflight, a ChangeMessageVisibilityBatch
//     entry with code ReceiptHandleIsInvalid. A handle also goes stale once its visibility
//     timeout has passed and fauxqs has noticed (see the timers below).
//   - Visibility timeouts go up to 43200 s (12 h), as in AWS; 43201 fails with
//     InvalidParameterValue. Visibility 0 makes the message receivable at once, with a new
//     receipt handle and ApproximateReceiveCount +1.
//   - A long poll (WaitTimeSeconds > 0) returns as soon as a message arrives, with what is
//     there (one message, even with MaxNumberOfMessages 10); it does not wait to fill the
//     batch.
//   - Kill and Restart lose every queue and message; GetQueueUrl then fails with
//     *types.QueueDoesNotExist, and CreateQueue of the same name gives the same URL.
//   - Errors that SQS does not model as a type carry the query-protocol code in the Go SDK,
//     e.g. AWS.SimpleQueueService.InvalidParameterValue: compare with strings.HasSuffix,
//     or better errors.As with the types package.
//   - Timers are lazy (from its source): an expired visibility timeout or delay takes
//     effect on the next ReceiveMessage, or within 20 ms while a long poll waits on the
//     queue; until then CountMessages still counts the message in flight.
//   - From its source: it never expires messages (MessageRetentionPeriod is accepted and
//     ignored) and never duplicates them by itself; it delivers in send order, except that
//     a message whose visibility timeout ran out goes to the back. Tests that need
//     duplicates or reordering must cause them.
//
// # Throughput
//
// MeasureCeiling is the raw send+receive+delete rate, the ceiling for Rota's SQS mode;
// BenchmarkCeiling reports it:
//
//	go test -run '^$' -bench Ceiling -benchtime 50000x ./internal/testutil/sqstest/
//
// 4 senders and 4 receivers gave about 17,000 msgs/s on the 2-core machine.
package sqstest
