-- DeleteSchedule. Its runs stay (they are tasks).
DELETE FROM rota.schedules WHERE name = $1
