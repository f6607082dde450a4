"""A consumer-group member over the HTTP API: join, claim events of the
buckets it holds, handle them in order per bucket, checkpoint under the
lease epoch, leave."""

import os
import socket
import sys
import threading
import time

from .client import ApiError
from .worker import transient

__all__ = ["GroupMember"]


class GroupMember:
    """One member of consumer group `group` reading `stream`.

    `run()` joins the group, then loops: claim (which heartbeats the
    membership and waits up to `wait_ms` for events), call `handler(event)`
    on each event (`bucket`, `epoch`, `offset`, `key`, `payload`, ...) in
    offset order within each bucket, and checkpoint each bucket's last
    handled offset under the epoch it was claimed with. Events of one key
    share a bucket, so they are handled in order by one member at a time.

    A checkpoint refused with 409 `not_held` (fenced: the bucket went to
    another member under a newer epoch, which re-reads from the last
    checkpoint) drops the rest of that bucket's events. While handlers run, a background thread
    heartbeats every `ttl_ms / 3`; a bucket the heartbeat no longer lists
    is dropped the same way, and a long batch checkpoints as it goes.

    A handler that raises stops its bucket for this round (what it handled
    before is checkpointed): the event comes again on a later claim, after
    `retry_delay` seconds. `on_error(event, exc)` is told (default: a line
    on stderr). `run()` leaves the group (its buckets go to the others at
    once) when `stop()` is called or the `stop` event is set, or on
    Ctrl-C; it returns how many events were handled. A claim that fails
    for a passing reason (network, 5xx) is tried again after a second."""

    def __init__(self, client, group, stream, handler, *, member=None, buckets=None,
                 ttl_ms=30000, limit=100, wait_ms=5000, retry_delay=1.0, on_error=None,
                 stop=None):
        self.client = client
        self.group = group
        self.stream = stream
        self.handler = handler
        self.member = member or f"py-{socket.gethostname()}-{os.getpid()}-{id(self):x}"
        self.buckets = buckets
        self.ttl_ms = ttl_ms
        self.limit = limit
        self.wait_ms = wait_ms
        self.retry_delay = retry_delay
        self.on_error = on_error or _print_error
        self.stop_event = stop or threading.Event()
        self.membership = None
        self.handled = 0
        self._leases = {}  # bucket -> epoch, as last heard from the server
        self._lock = threading.Lock()
        self._last_contact = 0.0

    def stop(self):
        self.stop_event.set()

    def join(self):
        """Join (also done by `run()`); returns the membership."""
        m = self.client.join_group(self.group, stream=self.stream, member=self.member,
                                   buckets=self.buckets, ttl_ms=self.ttl_ms)
        self._heard(m["leases"])
        self.member = m["member"]
        self.membership = m
        return m

    def leave(self):
        """Leave the group: every lease is released at once."""
        return self.client.leave_group(self.group, self.member)

    def run(self):
        self.join()
        quit_beats = threading.Event()
        beats = threading.Thread(target=self._heartbeats, args=(quit_beats,), daemon=True,
                                 name=f"alkstore-group-heartbeat-{self.member}")
        beats.start()
        try:
            while not self.stop_event.is_set():
                try:
                    got = self.client.member_claim(self.group, self.member, limit=self.limit,
                                                   wait_ms=self.wait_ms, ttl_ms=self.ttl_ms)
                except Exception as e:
                    if not transient(e):
                        raise
                    print(f"alkstore group member {self.member}: claim failed ({e}); again in 1 s",
                          file=sys.stderr)
                    self.stop_event.wait(1.0)
                    continue
                self._heard(got["leases"])
                if self._handle(got["events"]):
                    self.stop_event.wait(self.retry_delay)
        except KeyboardInterrupt:
            pass
        finally:
            quit_beats.set()
            beats.join()
            try:
                self.leave()
            except (ApiError, OSError):
                pass
        return self.handled

    def _handle(self, events):
        """Handle one claim's events; True when a handler failed."""
        by_bucket = {}
        for ev in sorted(events, key=lambda e: e["offset"]):
            by_bucket.setdefault(ev["bucket"], []).append(ev)
        failed = False
        every = self.ttl_ms / 3000
        for bucket, evs in by_bucket.items():
            epoch, last, since = evs[0]["epoch"], None, time.monotonic()
            for ev in evs:
                if self.stop_event.is_set() or not self._holds(bucket, epoch):
                    break
                try:
                    self.handler(ev)
                except Exception as e:
                    self.on_error(ev, e)
                    failed = True
                    break
                last = ev["offset"]
                self.handled += 1
                if time.monotonic() - since >= every:  # a long batch: save progress
                    if not self._checkpoint(bucket, epoch, last):
                        last = None
                        break
                    since = time.monotonic()
            if last is not None:
                self._checkpoint(bucket, epoch, last)
            if self.stop_event.is_set():
                break
        return failed

    def _checkpoint(self, bucket, epoch, offset):
        """Save the bucket's checkpoint; False when fenced (no longer ours)."""
        try:
            self.client.member_checkpoint(self.group, self.member, bucket=bucket, epoch=epoch,
                                         offset=offset)
            return True
        except ApiError as e:
            if e.status == 409 and e.code in ("not_held", "fenced"):
                with self._lock:
                    if self._leases.get(bucket) == epoch:
                        del self._leases[bucket]
                return False
            raise

    def _holds(self, bucket, epoch):
        with self._lock:
            return self._leases.get(bucket) == epoch

    def _heard(self, leases):
        with self._lock:
            self._leases = {lease["bucket"]: lease["epoch"] for lease in leases}
            self._last_contact = time.monotonic()

    def _heartbeats(self, quit_beats):
        every = self.ttl_ms / 3000
        while not quit_beats.wait(min(every, 1.0)):
            if time.monotonic() - self._last_contact < every:
                continue  # a claim just renewed the membership
            try:
                m = self.client.member_heartbeat(self.group, self.member, ttl_ms=self.ttl_ms)
            except (ApiError, OSError):
                continue
            self._heard(m["leases"])
            self.membership = m


def _print_error(event, exc):
    print(f"alkstore group handler failed on offset {event.get('offset')}: "
          f"{type(exc).__name__}: {exc}", file=sys.stderr)
