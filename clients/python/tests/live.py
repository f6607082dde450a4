"""What every test needs: a client of the live server named by ALK_URL
(and ALK_TOKEN), and names no other test (or earlier run) has used."""

import itertools
import os
import threading
import time

from alkstore_client import Client

_count = itertools.count(1)
_run = f"{os.getpid()}-{time.time_ns() % 10**9}"


def client():
    url = os.environ.get("ALK_URL")
    if not url:
        raise RuntimeError("set ALK_URL (and ALK_TOKEN) to a running `alk serve`")
    return Client(url, token=os.environ.get("ALK_TOKEN"))


def name(kind):
    """A fresh name that needs percent-encoding in a path: a space, "/",
    "?", "#", "%" and a non-ASCII letter."""
    return f"py {kind} {_run}-{next(_count)} a/b?c#d%e ü"


def in_thread(fn, *args, **kwargs):
    """Run fn in a daemon thread; returns (thread, box) where box gets
    `value` or `error`."""
    box = {}

    def run():
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as e:  # handed to the test
            box["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, box


def joined(test, thread, box, timeout):
    thread.join(timeout)
    test.assertFalse(thread.is_alive(), f"still running after {timeout} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


def eventually(test, check, timeout=5.0, what="condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            test.fail(f"{what} not reached within {timeout} s (last: {value!r})")
        time.sleep(0.05)
