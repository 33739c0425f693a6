"""A Rota worker process for the crash and lease-loss tests (run by _support.WorkerProcess).

Kind "slow": on the attempts listed by --slow-attempts it sleeps --sleep seconds without
looking at its context (like a handler stuck in a library call); on others it succeeds at
once. It prints "started <id> <attempt>" and "done <id> <attempt>" on stdout.
"""

from __future__ import annotations

import argparse
import logging
import time

from rota import Client, TaskContext, Worker


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queue", required=True)
    ap.add_argument("--worker-id", required=True)
    ap.add_argument("--lease", type=int, default=2)
    ap.add_argument("--sleep", type=float, default=30)
    ap.add_argument("--slow-attempts", default="1")
    ap.add_argument("--grace", type=float, default=5)
    args = ap.parse_args()
    slow = {int(a) for a in args.slow_attempts.split(",") if a}
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    worker = Worker(Client(), queues=[args.queue], concurrency=2, lease_seconds=args.lease,
                    wait_seconds=1, shutdown_grace=args.grace, worker_id=args.worker_id)

    @worker.handler("slow")
    def slow_handler(ctx: TaskContext) -> None:
        print(f"started {ctx.id} {ctx.attempt}", flush=True)
        if ctx.attempt in slow:
            time.sleep(args.sleep)
        print(f"done {ctx.id} {ctx.attempt}", flush=True)

    worker.run()


if __name__ == "__main__":
    main()
