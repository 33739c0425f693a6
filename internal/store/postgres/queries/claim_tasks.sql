-- ClaimTasks: moves up to $2 due tasks of queue $1 to PROCESSING, in one statement. $3
-- worker id, $4 lease duration; $5, $6, $7 the caller's hint (store.ClaimParams.After):
-- the priority level ($5, NULL = no hint), scheduled_for and id of the last task it
-- claimed, past which the walk of that level starts. The attempt this starts lives on the task row until it
-- ends; its rota.task_attempts row is written then (record_outcomes.sql, migration 0007).
--
-- {{status}} is replaced by the literal 'PENDING' or 'ENQUEUED' when the package loads:
-- a literal (not a parameter) is what lets the planner walk the partial index
-- tasks_claim_pending / tasks_claim_enqueued in claim order.
--
-- Due tasks are found one priority level at a time: levels walks the distinct priorities
-- of the queue's claimable tasks, highest first, one index probe each (a loose index
-- scan; the probe is ORDER BY ... LIMIT 1, not max(), which costs a second planning; the
-- walk starts above every priority, a smallint, so the first probe is planned once
-- with the others), and for each level an index range scan (queue, priority,
-- scheduled_for <= now()) returns the due tasks oldest first and stops at the first one
-- not yet due. Scanned with only queue fixed, the index would be walked through every
-- task not yet due (delayed tasks, retries in backoff) on every claim, and with
-- statistics saying few are due the planner even preferred a sequential scan of the
-- whole table. Levels are produced lazily, so a claim filled by the top level never
-- looks at the others.
--
-- The update finds the locked rows by ctid, which stays valid while the lock is held, as
-- one array: a TID scan whatever the planner thinks of the table's size or of how many
-- rows $2 lets through (joined to the CTE instead, a generic plan, which guesses a tenth
-- of the table, hash-joins against a full scan of it).
--
-- Flow control (migration 0022): a queue with settings that hold claims back (pause,
-- limits) or with grouped tasks (fair claiming) is not claimed here. The walk does not
-- start (two index probes: the queue's settings row, and one entry of tasks_fair_*), the
-- statement returns nothing, and ClaimTasks calls rota.claim_limited instead.
WITH RECURSIVE levels(priority) AS (
    SELECT 32767::smallint -- above every priority (a smallint): where the walk starts
    WHERE NOT EXISTS (SELECT FROM rota.queues q
                      WHERE q.name = $1
                        AND (q.paused OR q.concurrency IS NOT NULL OR q.rate_limit IS NOT NULL
                             OR q.group_concurrency IS NOT NULL OR q.group_rate_limit IS NOT NULL))
      AND (SELECT true FROM rota.tasks g
           WHERE g.status = {{status}} AND g.queue = $1 AND g.group_key IS NOT NULL
           -- tasks_fair_*'s order: one probe of it, never a scan of the table (NOT
           -- EXISTS would drop the ORDER BY, and the planner likes a scan when
           -- statistics say many tasks are grouped)
           ORDER BY g.priority DESC, g.group_key LIMIT 1) IS NULL
  UNION ALL
    -- With a hint, the levels above the hint's are probed down to it, not past it, and
    -- the hint's level follows them unprobed: a probe into it would step over the
    -- entries the hint is there to skip. Below it, levels are probed as without a hint
    -- (-32768, below every priority a task may have, stands for no lower bound).
    SELECT coalesce(
             (SELECT t.priority FROM rota.tasks t
              WHERE t.status = {{status}} AND t.queue = $1 AND t.priority < levels.priority
                AND t.priority > CASE WHEN levels.priority > $5::smallint THEN $5::smallint ELSE -32768 END
              ORDER BY t.priority DESC LIMIT 1),
             CASE WHEN levels.priority > $5::smallint THEN $5::smallint END)
    FROM levels
    WHERE levels.priority IS NOT NULL
), due AS (
    SELECT level.row
    FROM levels
    CROSS JOIN LATERAL (
        SELECT ctid AS row
        FROM rota.tasks
        WHERE status = {{status}}
          AND queue = $1
          AND priority = levels.priority
          AND scheduled_for <= now()
          AND attempt_count < max_attempts
          -- The hint's level starts just past the hint, other levels at their start: a
          -- bound the index scan starts from, over the entries of tasks claimed since
          -- the last vacuum, which a long drain would otherwise step over every claim.
          AND (scheduled_for, id) > (
                CASE WHEN levels.priority = $5::smallint THEN $6::timestamptz ELSE '-infinity' END,
                CASE WHEN levels.priority = $5::smallint THEN $7::uuid ELSE '00000000-0000-0000-0000-000000000000' END)
        ORDER BY scheduled_for, id
        LIMIT $2
        FOR UPDATE SKIP LOCKED
    ) level
    LIMIT $2
), claimed AS (
    UPDATE rota.tasks t
    SET status = 'PROCESSING',
        worker_id = $3,
        lease_token = gen_random_uuid(),
        lease_expires_at = now() + $4::interval,
        attempt_count = t.attempt_count + 1,
        processing_started_at = now(),
        -- A task claimed from ENQUEUED is an SQS-mode task even when its retry was not
        -- sent yet (the HTTP worker protocol of a server in SQS mode claims so): its dead
        -- letter must reach the DLQ (migration 0008), as claim_tasks_by_id.sql does.
        enqueued_at = CASE WHEN {{status}} = 'ENQUEUED' THEN coalesce(t.enqueued_at, now()) ELSE t.enqueued_at END,
        updated_at = now()
    WHERE t.ctid = ANY (ARRAY(SELECT row FROM due))
    RETURNING t.id, t.queue, t.kind, t.payload, t.status, t.priority, t.scheduled_for,
              t.attempt_count, t.max_attempts, t.idempotency_key, t.timeout_seconds,
              t.worker_id, t.lease_token, t.lease_expires_at, t.cancel_requested_at,
              t.enqueued_at, t.processing_started_at, t.completed_at, t.last_error,
              t.created_at, t.updated_at, t.output, t.group_key, t.trace_context,
              -- flowScan: the flow step the task runs (migration 0019); its inputs below
              t.flow_id, t.flow_step, t.flow_index, t.flow_item
)
SELECT c.id, c.queue, c.kind, c.payload, c.status, c.priority, c.scheduled_for,
       c.attempt_count, c.max_attempts, c.idempotency_key, c.timeout_seconds,
       c.worker_id, c.lease_token, c.lease_expires_at, c.cancel_requested_at,
       c.enqueued_at, c.processing_started_at, c.completed_at, c.last_error,
       c.created_at, c.updated_at, c.output, c.group_key, c.trace_context,
       c.flow_id, c.flow_step, c.flow_index, c.flow_item,
       -- A step task's inputs are its step's, kept once on the step's row and read through
       -- its primary key; in the answer only on the claim's first task of each step (the
       -- store gives the others the same inputs: collectClaimedTasks), so a claim of 100
       -- elements of a fan-out carries the array it fans out over once, not 100 times. A
       -- plain task (flow_id NULL) reads nothing.
       CASE WHEN c.flow_id IS NOT NULL
                 AND NOT EXISTS (SELECT 1 FROM claimed o
                                 WHERE o.flow_id = c.flow_id AND o.flow_step = c.flow_step AND o.id < c.id)
            THEN (SELECT s.inputs FROM rota.flow_steps s WHERE s.flow_id = c.flow_id AND s.name = c.flow_step)
       END AS flow_inputs
FROM claimed c
ORDER BY c.priority DESC, c.scheduled_for, c.id
