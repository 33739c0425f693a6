"""Shared test helpers: import path, the server under test, polling, worker processes.

The integration tests run against the server named by ROTA_SERVER (e2e/sdk_python_test.go
starts a real `rota serve` on PostgreSQL with a short --reap-interval and sets it). Without
ROTA_SERVER they skip, unless CI or ROTA_REQUIRE_INTEGRATION is set: then they fail.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import unittest
import uuid
from pathlib import Path
from typing import Callable, TypeVar

SRC = Path(__file__).resolve().parents[1] / "src"
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))

from rota import Client  # noqa: E402

T = TypeVar("T")
HERE = Path(__file__).resolve().parent


def server_url() -> str:
    return os.environ.get("ROTA_SERVER", "")


class IntegrationTest(unittest.TestCase):
    """A test against the real server of ROTA_SERVER; each test gets its own queue."""

    def setUp(self) -> None:
        if not server_url():
            if os.environ.get("CI") or os.environ.get("ROTA_REQUIRE_INTEGRATION"):
                self.fail("ROTA_SERVER is not set (CI / ROTA_REQUIRE_INTEGRATION: integration tests must not skip)")
            self.skipTest("ROTA_SERVER is not set: start `rota serve --reap-interval 200ms` and export ROTA_SERVER")
        self.client = Client(server_url(), timeout=30)
        self.queue = "py_" + uuid.uuid4().hex[:12]


def wait_until(what: str, cond: Callable[[], T | None], timeout: float = 20.0, every: float = 0.05) -> T:
    """Polls cond until it returns something truthy, or fails after timeout seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = cond()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(every)


def wait_status(client: Client, task_id: str, *statuses: str, timeout: float = 20.0):
    def check():
        t = client.get(task_id)
        return t if t.status in statuses else None
    return wait_until(f"task {task_id} to reach {statuses}", check, timeout)


class WorkerProcess:
    """tests/worker_proc.py in a subprocess; stdout and stderr are collected by threads."""

    def __init__(self, queue: str, worker_id: str, *args: str) -> None:
        env = dict(os.environ, PYTHONPATH=str(SRC), PYTHONUNBUFFERED="1")
        self.worker_id = worker_id
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "worker_proc.py"), "--queue", queue, "--worker-id", worker_id, *args],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        self._out: list[str] = []
        self._err: list[str] = []
        self._lock = threading.Lock()
        self._pumps = [threading.Thread(target=self._pump, args=(stream, sink), daemon=True)
                       for stream, sink in ((self.proc.stdout, self._out), (self.proc.stderr, self._err))]
        for t in self._pumps:
            t.start()

    def _pump(self, stream, sink: list[str]) -> None:
        for line in stream:
            with self._lock:
                sink.append(line.rstrip("\n"))

    def stdout(self) -> list[str]:
        with self._lock:
            return list(self._out)

    def stderr(self) -> str:
        with self._lock:
            return "\n".join(self._err)

    def wait_line(self, prefix: str, timeout: float = 20.0) -> str:
        def find():
            for line in self.stdout():
                if line.startswith(prefix):
                    return line
            if self.proc.poll() is not None:
                raise AssertionError(f"worker {self.worker_id} exited ({self.proc.returncode}):\n{self.stderr()}")
            return None
        return wait_until(f"worker {self.worker_id} to print {prefix!r}", find, timeout)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        for t in self._pumps:
            t.join(5)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream:
                stream.close()
