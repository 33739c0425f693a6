package postgres

import (
	"embed"
	"strings"

	"github.com/jackc/pgx/v5"
)

//go:embed queries/*.sql
var queryFiles embed.FS

// The SQL of every statement, one file per query in queries/. Each runs as a prepared
// statement from pgx's per-connection cache unless noted at the call site.
var (
	sqlCreateTasks           = query("create_tasks.sql")
	sqlCreateTasksKeyless    = without(sqlCreateTasks, createOnConflict)
	sqlCreateTask            = query("create_task.sql") + from(sqlCreateTasks, createOnConflict)
	sqlCreateTaskKeyless     = without(sqlCreateTask, createOnConflict)
	sqlCreateTasksClock      = query("create_tasks_clock.sql")
	sqlGetTask               = query("get_task.sql")
	sqlListTasks             = query("list_tasks.sql")
	sqlListTasksFiltered     = query("list_tasks_filtered.sql")
	sqlListPairsAny          = strings.TrimSpace(query("list_tasks_pairs_any.sql"))
	sqlListPairsBoth         = strings.TrimSpace(query("list_tasks_pairs_both.sql"))
	sqlListPairsKinds        = strings.TrimSpace(query("list_tasks_pairs_kinds.sql"))
	sqlListPairsQueues       = strings.TrimSpace(query("list_tasks_pairs_queues.sql"))
	sqlClaimPending          = strings.ReplaceAll(query("claim_tasks.sql"), "{{name}}", "pending")
	sqlClaimEnqueued         = strings.ReplaceAll(query("claim_tasks.sql"), "{{name}}", "enqueued")
	sqlClaimTasksByID        = query("claim_tasks_by_id.sql")
	sqlClaimTasksByIDs       = query("claim_tasks_by_ids.sql")
	sqlHeartbeat             = query("heartbeat.sql")
	sqlHeartbeatMany         = query("heartbeat_many.sql")
	sqlNotifyTasks           = query("notify_tasks.sql")
	sqlRecordOutcomes        = query("record_outcomes.sql")
	sqlCancelTask            = query("cancel_task.sql")
	sqlReplayTask            = query("replay_task.sql")
	sqlReapExpiredLeases     = query("reap_expired_leases.sql")
	sqlNextDue               = query("next_due.sql")
	sqlListAttempts          = query("list_attempts.sql")
	sqlListDeadLetters       = query("list_dead_letters.sql")
	sqlListDeadLettersAll    = query("list_dead_letters_all.sql")
	sqlDeadLetterPairsBoth   = strings.TrimSpace(query("dead_letters_pairs_both.sql"))
	sqlDeadLetterPairsKinds  = strings.TrimSpace(query("dead_letters_pairs_kinds.sql"))
	sqlDeadLetterPairsQueues = strings.TrimSpace(query("dead_letters_pairs_queues.sql"))
	sqlStats                 = query("stats.sql")
	sqlServeQueues           = query("serve_queues.sql")
	sqlRequeueUnserved       = query("requeue_unserved.sql")
)

// createOnConflict is create_tasks.sql's (and create_task.sql's) idempotency clause,
// which only a batch with a key needs (see the file).
const createOnConflict = `ON CONFLICT (idempotency_key)
    WHERE idempotency_key IS NOT NULL AND status NOT IN ('DEAD', 'FAILED', 'CANCELED')
    DO UPDATE SET idempotency_key = excluded.idempotency_key
`

// planPerCall runs a statement planned for its actual parameters on every call (pgx
// still caches its description, so it is one round trip). The hot statements (claim,
// heartbeat, outcomes, reap) use it: with the default, PostgreSQL caches a generic plan
// after five calls, and a generic plan chosen while rota.tasks looked empty (retention
// emptied it, autovacuum analyzed it) is a sequential scan that stays even as the table
// fills: measured, outcome writes went from 1 ms to 300-600 ms. Planning costs a fraction
// of a millisecond per batch. TestHotPathNeverScansTasks guards it.
const planPerCall = pgx.QueryExecModeCacheDescribe

func query(name string) string {
	b, err := queryFiles.ReadFile("queries/" + name)
	if err != nil {
		panic("postgres: missing embedded query " + name)
	}
	return string(b)
}

// from is sql from part (which must be in it) to its end.
func from(sql, part string) string {
	i := strings.Index(sql, part)
	if i < 0 {
		panic("postgres: a query does not contain " + part)
	}
	return sql[i:]
}

// without is sql with part removed; part must be in sql.
func without(sql, part string) string {
	if !strings.Contains(sql, part) {
		panic("postgres: a query does not contain " + part)
	}
	return strings.Replace(sql, part, "", 1)
}
