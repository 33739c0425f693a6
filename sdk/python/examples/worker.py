"""Runs Python handlers for the tasks of examples/enqueue.py until Ctrl-C or SIGTERM."""

import logging

from rota import Retry, TaskContext, Worker

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")

worker = Worker(queues=["python"], concurrency=4)


@worker.handler("greet")
def greet(ctx: TaskContext) -> None:
    print(f"hello, {ctx.payload['name']}!", flush=True)


@worker.handler("flaky")
def flaky(ctx: TaskContext) -> None:
    if ctx.attempt <= ctx.payload["fail_times"]:
        raise Retry(f"attempt {ctx.attempt} fails on purpose", after=1)
    print(f"flaky task {ctx.id} succeeded on attempt {ctx.attempt}", flush=True)


worker.run()
