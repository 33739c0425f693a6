"""Enqueues tasks for examples/worker.py on the queue "python"."""

from rota import Client

client = Client()  # ROTA_SERVER (default http://127.0.0.1:8080) and ROTA_API_TOKEN, if set

for name in ["Ada", "Grace", "Linus"]:
    task = client.enqueue("greet", {"name": name}, queue="python")
    print("enqueued", task.id, task.kind, task.status)

# Fails twice, then succeeds: each failure asks for a retry one second later.
task = client.enqueue("flaky", {"fail_times": 2}, queue="python", max_attempts=5)
print("enqueued", task.id, task.kind, task.status)
