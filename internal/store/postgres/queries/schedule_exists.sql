-- Whether a schedule exists (ListScheduleRuns tells "no runs" from "no schedule").
SELECT EXISTS (SELECT 1 FROM rota.schedules WHERE name = $1)
