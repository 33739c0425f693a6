"""Rota for Python: a client and a worker for Rota's HTTP API, standard library only.

    from rota import Client, Worker

    Client().enqueue("email.send", {"to": "a@example.com"})

    worker = Worker(queues=["default"], concurrency=8)

    @worker.handler("email.send")
    def send(ctx):
        ...  # ctx.payload; check ctx.cancelled in long loops

    worker.run()  # until SIGTERM/SIGINT
"""

import logging

from .client import DEFAULT_SERVER, MAX_OUTPUT_BYTES, Client, check_output
from .errors import Cancelled, PermanentError, Retry, RotaError
from .models import (
    CANCELED,
    DEAD,
    ENQUEUED,
    FAILED,
    PENDING,
    PROCESSING,
    SUCCEEDED,
    RUNNING,
    WAITING,
    Attempt,
    ClaimedTask,
    Flow,
    FlowStep,
    NewTask,
    Task,
    TaskPage,
    parse_time,
)
from .worker import Handler, TaskContext, Worker, WorkerStats

__all__ = [
    "Attempt", "CANCELED", "Cancelled", "ClaimedTask", "Client", "DEAD", "DEFAULT_SERVER", "ENQUEUED",
    "FAILED", "Flow", "FlowStep", "Handler", "MAX_OUTPUT_BYTES", "NewTask", "PENDING", "PROCESSING", "PermanentError",
    "Retry", "RotaError", "RUNNING", "SUCCEEDED", "Task", "TaskContext", "TaskPage", "WAITING", "Worker", "WorkerStats",
    "check_output", "parse_time",
]
__version__ = "0.1.0"

# A library logs but leaves the output to the application (logging.basicConfig & co.).
logging.getLogger("rota").addHandler(logging.NullHandler())
