"""Worker processes that die or freeze mid-task, against a real `rota serve` (see _support).

The server must run with a short --reap-interval (e2e/sdk_python_test.go uses 200ms) so
expired leases come back within the test's deadlines.
"""

from __future__ import annotations

import signal

from _support import IntegrationTest, WorkerProcess, wait_status, wait_until

from rota import SUCCEEDED


class CrashTest(IntegrationTest):
    def spawn(self, name: str, *args: str) -> WorkerProcess:
        p = WorkerProcess(self.queue, f"{name}-{self.queue}", *args)
        self.addCleanup(p.close)
        self.addCleanup(lambda: p.proc.send_signal(signal.SIGCONT) if p.proc.poll() is None else None)
        return p

    def test_sigkill_mid_task_then_another_worker_finishes_it_once(self) -> None:
        t = self.client.enqueue("slow", queue=self.queue, max_attempts=3)
        first = self.spawn("py-killed", "--lease", "2")
        first.wait_line(f"started {t.id} 1")
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait(10)

        second = self.spawn("py-survivor", "--lease", "2")
        done = wait_status(self.client, t.id, SUCCEEDED, timeout=30)
        self.assertEqual(done.attempt_count, 2)
        attempts = self.client.attempts(t.id)
        self.assertEqual([(a.attempt, a.worker_id, a.outcome) for a in attempts],
                         [(1, first.worker_id, "LEASE_EXPIRED"), (2, second.worker_id, SUCCEEDED)])
        self.assertEqual([line for line in second.stdout() if line.startswith("done")], [f"done {t.id} 2"])

        second.proc.send_signal(signal.SIGTERM)  # graceful: nothing running, exits at once
        self.assertEqual(second.proc.wait(20), 0, second.stderr())

    def test_frozen_worker_loses_its_lease_and_its_late_outcome_is_dropped(self) -> None:
        # The first worker is SIGSTOPped mid-task: no heartbeats, the lease expires, the
        # reaper takes the task back and a second worker finishes it. Resumed, the first
        # worker learns the lease is gone (heartbeat 409 or a refused complete) and reports
        # nothing: its handler's success must not count.
        t = self.client.enqueue("slow", queue=self.queue, max_attempts=3)
        frozen = self.spawn("py-frozen", "--lease", "1", "--sleep", "3")
        frozen.wait_line(f"started {t.id} 1")
        frozen.proc.send_signal(signal.SIGSTOP)

        other = self.spawn("py-other", "--lease", "2")
        wait_status(self.client, t.id, SUCCEEDED, timeout=30)
        frozen.proc.send_signal(signal.SIGCONT)
        frozen.wait_line(f"done {t.id} 1")
        wait_until("the frozen worker to drop its late outcome",
                   lambda: "outcome not reported" in frozen.stderr() or "complete refused" in frozen.stderr())
        self.assertNotIn("-> complete", frozen.stderr())

        attempts = self.client.attempts(t.id)
        self.assertEqual([(a.attempt, a.worker_id, a.outcome) for a in attempts],
                         [(1, frozen.worker_id, "LEASE_EXPIRED"), (2, other.worker_id, SUCCEEDED)])
        task = self.client.get(t.id)
        self.assertEqual((task.status, task.worker_id), (SUCCEEDED, other.worker_id))

    def test_sigterm_lets_the_running_task_finish(self) -> None:
        t = self.client.enqueue("slow", queue=self.queue)
        w = self.spawn("py-term", "--lease", "2", "--sleep", "1", "--grace", "20")
        w.wait_line(f"started {t.id} 1")
        w.proc.send_signal(signal.SIGTERM)
        self.assertEqual(w.proc.wait(30), 0, w.stderr())
        task = self.client.get(t.id)
        self.assertEqual((task.status, task.attempt_count, task.worker_id), (SUCCEEDED, 1, w.worker_id))
        self.assertIn("SIGTERM: stopping", w.stderr())

    def test_second_signal_ends_the_grace_and_leaves_the_task_to_the_reaper(self) -> None:
        t = self.client.enqueue("slow", queue=self.queue, max_attempts=3)
        w = self.spawn("py-impatient", "--lease", "1", "--sleep", "120", "--grace", "120")
        w.wait_line(f"started {t.id} 1")
        w.proc.send_signal(signal.SIGTERM)
        wait_until("the first SIGTERM to be handled", lambda: "SIGTERM: stopping" in w.stderr())
        w.proc.send_signal(signal.SIGTERM)
        self.assertEqual(w.proc.wait(30), 0, w.stderr())  # long before the 120s grace
        self.assertIn("leaving it to the lease reaper", w.stderr())
        # Nothing was reported for the abandoned attempt: its lease expires and the reaper
        # takes the task back.
        wait_until("the reaper to take the task back",
                   lambda: [a.outcome for a in self.client.attempts(t.id)] == ["LEASE_EXPIRED"])
