"""A job worker loop over the HTTP API: claim (long-poll), run the handler,
settle; heartbeat long-running jobs from a background thread."""

import json
import os
import socket
import sys
import threading
import time

from .client import ApiError

__all__ = ["Fail", "Worker", "work"]


class Fail(Exception):
    """Raise from a handler to fail the job for good: it goes to the dead
    letters at once, with this exception's text as the error, no retry."""


class _Held:
    __slots__ = ("job", "next_beat", "lost")

    def __init__(self, job, next_beat):
        self.job, self.next_beat, self.lost = job, next_beat, False


class Worker:
    """Work `queue`: claim up to `batch` jobs at a time, waiting up to
    `wait_ms` for them, and call `handler(job)` on each (a claimed-job dict:
    `id`, `payload`, `attempt`, `max_attempts`, ...), one at a time.

    - it returns: the job is acked, with the returned value saved as the
      job's `result` unless it is None (`client.result(job_id, wait_ms)`
      reads it);
    - it raises `Fail`: the job fails for good (dead letter);
    - it raises anything else: the job is retried with the error's text,
      after the queue's backoff or `retry_delay_ms`.

    While a job is claimed, a background thread heartbeats it before its
    claim expires (every third of the time left, or `heartbeat_every`
    seconds). `run()` returns once `stop()` is called or the `stop` event
    is set (within `wait_ms`), after `max_jobs` jobs, or on Ctrl-C; jobs
    claimed but not run are released back to the queue. A claim that fails
    for a passing reason (the server unreachable, a 5xx) is tried again
    after a second; any other error (a 4xx `ApiError`, a failed ack) ends
    `run()` the same way and is raised."""

    def __init__(self, client, queue, handler, *, name=None, batch=1, wait_ms=5000,
                 retry_delay_ms=None, heartbeat_every=None, stop=None):
        self.client = client
        self.queue = queue
        self.handler = handler
        self.name = name or f"py-{socket.gethostname()}-{os.getpid()}-{id(self):x}"
        self.batch = batch
        self.wait_ms = wait_ms
        self.retry_delay_ms = retry_delay_ms
        self.heartbeat_every = heartbeat_every
        self.stop_event = stop or threading.Event()
        self.counts = {"acked": 0, "retried": 0, "failed": 0, "lost": 0}
        self._held = {}
        self._lock = threading.Lock()

    def stop(self):
        self.stop_event.set()

    def run(self, max_jobs=None):
        """Work until stopped; returns the counts: acked, retried, failed, and
        lost (settled after the claim had lapsed: another worker may run it)."""
        quit_beats = threading.Event()
        beats = threading.Thread(target=self._heartbeats, args=(quit_beats,), daemon=True,
                                 name=f"alkstore-heartbeat-{self.name}")
        beats.start()
        pending = []
        done = 0
        try:
            while not self.stop_event.is_set() and (max_jobs is None or done < max_jobs):
                limit = self.batch if max_jobs is None else min(self.batch, max_jobs - done)
                try:
                    pending = self.client.claim(self.queue, worker=self.name, limit=limit,
                                                wait_ms=self.wait_ms)["jobs"]
                except Exception as e:
                    if not transient(e):
                        raise
                    print(f"alkstore worker {self.name}: claim failed ({e}); again in 1 s", file=sys.stderr)
                    self.stop_event.wait(1.0)
                    continue
                with self._lock:
                    for job in pending:
                        self._held[job["id"]] = _Held(job, self._next_beat(job["claim_expires_at"]))
                while pending and not self.stop_event.is_set():
                    self._run_one(pending[0])
                    pending.pop(0)
                    done += 1
        except KeyboardInterrupt:
            pass
        finally:
            quit_beats.set()
            for job in pending:  # claimed, not settled: back to the queue now
                try:
                    self.client.release_job(job["id"], worker=self.name, token=job["token"])
                except Exception:
                    pass
            with self._lock:
                self._held.clear()
            beats.join()
        return dict(self.counts)

    def _run_one(self, job):
        ref = {"worker": self.name, "token": job["token"]}
        try:
            value = self.handler(job)
            if value is not None:
                json.dumps(value)  # a result must be JSON: else the job is retried, saying why
        except Fail as e:
            self._forget(job)
            answer = self.client.fail(job["id"], error=str(e) or "Fail", **ref)
            kind = "failed"
        except Exception as e:  # the job's failure, not the worker's
            self._forget(job)
            answer = self.client.retry(job["id"], error=f"{type(e).__name__}: {e}",
                                       delay_ms=self.retry_delay_ms, **ref)
            kind = "retried"
        else:
            self._forget(job)
            answer = self.client.ack(job["id"], result=value, **ref)
            kind = "acked"
        held = answer.get("done", answer.get("outcome") != "not_held")
        self.counts[kind if held else "lost"] += 1

    def _forget(self, job):
        with self._lock:
            self._held.pop(job["id"], None)

    def _next_beat(self, claim_expires_at):
        if self.heartbeat_every is not None:
            return time.monotonic() + self.heartbeat_every
        return time.monotonic() + max(0.5, (claim_expires_at - time.time()) / 3)

    def _heartbeats(self, quit_beats):
        tick = min(0.5, self.heartbeat_every or 0.5)
        while not quit_beats.wait(tick):
            now = time.monotonic()
            with self._lock:
                due = [h for h in self._held.values() if h.next_beat <= now]
            for h in due:
                job = h.job
                try:
                    answer = self.client.heartbeat(job["id"], worker=self.name, token=job["token"])
                except (ApiError, OSError):
                    h.next_beat = time.monotonic() + tick  # try again soon
                    continue
                if answer.get("held"):
                    h.next_beat = self._next_beat(answer["claim_expires_at"])
                else:
                    h.lost = True
                    self._forget(job)


def transient(error):
    """An error worth trying again after a while: the network, or the server
    answering 5xx (busy, unavailable, its database out of reach)."""
    if isinstance(error, ApiError):
        return error.status >= 500
    return isinstance(error, OSError)  # URLError, refused, reset, timeout


def work(client, queue, handler, **options):
    """`Worker(client, queue, handler, **options).run()`: work the queue until
    Ctrl-C (or `stop=` event); returns the counts."""
    max_jobs = options.pop("max_jobs", None)
    return Worker(client, queue, handler, **options).run(max_jobs=max_jobs)
