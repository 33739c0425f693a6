// Package workers reads and feeds the workers registry (store.WorkerRegistry, DESIGN.md
// section 12) for the processes that serve the API: a short-lived cache of the live
// workers (Cache) that the create warnings, the dashboard and the rota_workers gauges
// share, the warnings a create answer carries (Cache.Warnings), and the registration of
// HTTP-protocol workers by their claims, at most once per interval per worker id
// (HTTPPresence).
//
// Go workers register themselves (internal/runtime, presence.go).
package workers
