DROP TABLE IF EXISTS rota.workers;
