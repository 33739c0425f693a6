package postgres

import (
	"embed"
	"strings"
)

//go:embed queries/*.sql
var queryFiles embed.FS

// The SQL of every statement, one file per query in queries/. Each runs as a prepared
// statement from pgx's per-connection cache unless noted at the call site.
var (
	sqlCreateTasks       = query("create_tasks.sql")
	sqlGetTask           = query("get_task.sql")
	sqlListTasks         = query("list_tasks.sql")
	sqlClaimPending      = strings.ReplaceAll(query("claim_tasks.sql"), "{{status}}", "'PENDING'")
	sqlClaimEnqueued     = strings.ReplaceAll(query("claim_tasks.sql"), "{{status}}", "'ENQUEUED'")
	sqlClaimTasksByID    = query("claim_tasks_by_id.sql")
	sqlHeartbeat         = query("heartbeat.sql")
	sqlRecordOutcomes    = query("record_outcomes.sql")
	sqlCancelTask        = query("cancel_task.sql")
	sqlReplayTask        = query("replay_task.sql")
	sqlReapExpiredLeases = query("reap_expired_leases.sql")
	sqlListAttempts      = query("list_attempts.sql")
	sqlListDeadLetters   = query("list_dead_letters.sql")
	sqlStats             = query("stats.sql")
)

func query(name string) string {
	b, err := queryFiles.ReadFile("queries/" + name)
	if err != nil {
		panic("postgres: missing embedded query " + name)
	}
	return string(b)
}
