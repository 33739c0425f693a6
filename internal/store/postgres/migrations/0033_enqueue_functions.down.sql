-- EnqueueDue goes back to statements planned per call (queries/enqueue_due.sql and
-- queries/enqueue_mark.sql before migration 0033).
DROP FUNCTION rota.enqueue_mark(uuid[]);
DROP FUNCTION rota.enqueue_due(text, integer, interval);
