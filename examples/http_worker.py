#!/usr/bin/env python3
"""A job producer and worker in Python over alkstore's HTTP API (`alk serve`),
standard library only.

    alk serve &                                   # http://127.0.0.1:7878
    python3 examples/http_worker.py enqueue emails '{"to": "a@example.com"}'
    python3 examples/http_worker.py work emails   # runs until Ctrl-C
    python3 examples/http_worker.py demo          # enqueue 50, work them all, check

Set ALK_URL (default http://127.0.0.1:7878) and, for a server started with
--token, ALK_TOKEN.

Queue names are taken as they are (any text up to 200 bytes), so every name
goes into a URL path percent-encoded (`path_part`): a name with a space, a
slash or a `?` would otherwise reach another route, or none.
"""

import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

URL = os.environ.get("ALK_URL", "http://127.0.0.1:7878").rstrip("/")
TOKEN = os.environ.get("ALK_TOKEN")


class ApiError(Exception):
    """A 4xx/5xx answer: {"error": {"code", "field", "message"}}."""

    def __init__(self, status, body):
        err = body.get("error", {}) if isinstance(body, dict) else {}
        super().__init__(f"{status} {err.get('code')} ({err.get('field')}): {err.get('message')}")
        self.status = status
        self.code = err.get("code")
        self.field = err.get("field")


def path_part(name):
    """A name as one URL path segment: every reserved character encoded."""
    return urllib.parse.quote(name, safe="")


def call(method, path, body=None, timeout=60):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(URL + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if TOKEN:
        req.add_header("Authorization", f"Bearer {TOKEN}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as res:
            return json.load(res)
    except urllib.error.HTTPError as e:
        raise ApiError(e.code, json.load(e)) from None


def enqueue(queue, payload, **opts):
    return call("POST", f"/api/v1/queues/{path_part(queue)}/jobs", {"payload": payload, **opts})


def enqueue_batch(queue, payloads):
    jobs = [{"payload": p} for p in payloads]
    return call("POST", f"/api/v1/queues/{path_part(queue)}/jobs/batch", {"jobs": jobs})["jobs"]


def claim(queue, worker, limit=10, wait_ms=5000):
    body = {"worker": worker, "limit": limit, "wait_ms": wait_ms}
    return call("POST", f"/api/v1/queues/{path_part(queue)}/claim", body)["jobs"]


def ack(job, worker):
    return call("POST", f"/api/v1/jobs/{job['id']}/ack", {"worker": worker, "token": job["token"]})


def retry(job, worker, error, delay_ms=None):
    body = {"worker": worker, "token": job["token"], "error": error}
    if delay_ms is not None:
        body["delay_ms"] = delay_ms
    return call("POST", f"/api/v1/jobs/{job['id']}/retry", body)


def work(queue, handler, worker=None, stop=lambda: False):
    """Claim jobs (long-poll), run `handler(payload)`, ack; an exception
    retries the job with its message as the error."""
    worker = worker or f"py-{os.getpid()}"
    done = 0
    while not stop():
        for job in claim(queue, worker, limit=10, wait_ms=2000):
            try:
                handler(job["payload"], job)
            except Exception as e:  # the job's failure, not the worker's
                retry(job, worker, f"{type(e).__name__}: {e}", delay_ms=0)
            else:
                if ack(job, worker)["done"]:
                    done += 1
    return done


def stats(queue):
    return call("GET", f"/api/v1/queues/{path_part(queue)}")


def demo():
    # A name with a space, a slash, `?`, `#` and `%`: it works only encoded.
    queue = "py demo: bad queue name!/?#%"
    ids = [j["id"] for j in enqueue_batch(queue, [{"n": i, "flaky": i % 5 == 0} for i in range(50)])]
    assert len(ids) == 50, ids
    # A bad request says which field is wrong.
    try:
        call("POST", f"/api/v1/queues/{path_part(queue)}/claim", {"worker": "py", "limit": 0})
        raise SystemExit("limit 0 was accepted")
    except ApiError as e:
        assert e.status == 400 and e.field == "limit", e
    seen = set()

    def handler(payload, job):
        if payload["flaky"] and job["attempt"] == 1:
            raise RuntimeError("first attempt fails")
        seen.add(payload["n"])

    def stop():
        s = stats(queue)
        return len(seen) == 50 and s["ready"] + s["scheduled"] + s["processing"] == 0

    work(queue, handler, stop=stop)
    s = stats(queue)
    assert s["dead"] == 0 and s["queue"] == queue, s
    # A queue nothing was enqueued on is 404 (not zeros).
    try:
        stats(queue + " (never used)")
        raise SystemExit("an unused queue read as existing")
    except ApiError as e:
        assert e.status == 404 and e.code == "not_found", e
    print(f"python worker: 50 jobs done over HTTP, 10 of them after one retry; queue {s}")


def main(argv):
    if len(argv) >= 2 and argv[1] == "demo":
        demo()
    elif len(argv) == 4 and argv[1] == "enqueue":
        print(json.dumps(enqueue(argv[2], json.loads(argv[3]))))
    elif len(argv) == 3 and argv[1] == "work":
        try:
            work(argv[2], lambda payload, job: print(json.dumps({"id": job["id"], "payload": payload})))
        except KeyboardInterrupt:
            pass
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
