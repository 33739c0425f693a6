-- Retention clean-up finds finished tasks by completion time without scanning live ones.
CREATE INDEX tasks_finished ON rota.tasks (completed_at)
    WHERE status IN ('SUCCEEDED', 'CANCELED', 'DEAD', 'FAILED');
