#!/usr/bin/env python3
"""A job producer and worker in Python over alkstore's HTTP API (`alk serve`),
standard library only.

    alk serve &                                   # http://127.0.0.1:7878
    python3 examples/http_worker.py enqueue emails '{"to": "a@example.com"}'
    python3 examples/http_worker.py work emails   # runs until Ctrl-C
    python3 examples/http_worker.py demo          # enqueue 50, work them all, check;
                                                  # then ack + enqueue + publish atomically

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
    """A 4xx/5xx answer: {"error": {"code", "field", "message"}}; for an
    atomic request also `op_index` and `op`, the op that failed."""

    def __init__(self, status, body):
        err = body.get("error", {}) if isinstance(body, dict) else {}
        super().__init__(f"{status} {err.get('code')} ({err.get('field')}): {err.get('message')}")
        self.status = status
        self.code = err.get("code")
        self.field = err.get("field")
        self.op_index = err.get("op_index")
        self.op = err.get("op")


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


def atomic(ops):
    """Run writes all or none in one transaction (POST /api/v1/atomic).

    Each op is the body of the single call it stands for, with that call's
    path values as fields and an "op" tag (the `*_op` helpers below build
    the common ones). Returns one result per op, in order. On failure
    nothing was written and ApiError names the op (`op_index`, `op`,
    `field` as "ops[i].field"): 409 `not_held` for a claim, lease epoch or
    lock token no longer held, 400 for bad input. At most 100 ops."""
    return call("POST", "/api/v1/atomic", {"ops": ops})["results"]


def enqueue_op(queue, payload, **opts):
    return {"op": "enqueue", "queue": queue, "payload": payload, **opts}


def publish_op(stream, events):
    """`events`: [{"payload": ..., "key": ...}, ...]"""
    return {"op": "publish", "stream": stream, "events": events}


def ack_op(job, worker):
    return {"op": "ack", "id": job["id"], "worker": worker, "token": job["token"]}


def notify_op(channel, payload=""):
    return {"op": "notify", "channel": channel, "payload": payload}


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
    atomic_demo(queue)


def atomic_demo(queue):
    """A handler's effects and its ack in one transaction: a follow-up job
    and an event commit with the ack, or none of them does."""
    followups, stream = queue + " follow-ups", queue + " events"
    enqueue(queue, {"order": 7})
    [job] = claim(queue, "py-atomic", limit=1, wait_ms=5000)
    effects = [
        enqueue_op(followups, {"email_for": 7}),
        publish_op(stream, [{"key": "order-7", "payload": {"placed": 7}}]),
        notify_op("py-orders", "7"),
    ]
    # A claim no longer held (here: a stale token) refuses the whole
    # request, naming the op; the follow-up and the event are not written.
    stale = dict(ack_op(job, "py-atomic"), token=job["token"] + 1)
    try:
        atomic(effects + [stale])
        raise SystemExit("a stale claim token was accepted")
    except ApiError as e:
        assert (e.status, e.code, e.op_index, e.op, e.field) == (409, "not_held", 3, "ack", "ops[3].token"), e
    # Bad input in one op: 400 naming it, nothing written either.
    try:
        atomic(effects + [enqueue_op(followups, 1, priority="high")])
        raise SystemExit("a bad priority was accepted")
    except ApiError as e:
        assert (e.status, e.op_index, e.field) == (400, 3, "ops[3].priority"), e
    for gone in (f"/api/v1/queues/{path_part(followups)}", f"/api/v1/streams/{path_part(stream)}"):
        try:
            call("GET", gone)
            raise SystemExit(f"{gone} was written by a refused request")
        except ApiError as e:
            assert e.status == 404, e
    # With the claim held, all of it commits together.
    results = atomic(effects + [ack_op(job, "py-atomic")])
    assert [r["op"] for r in results] == ["enqueue", "publish", "notify", "ack"], results
    assert results[3]["done"] is True, results
    assert stats(followups)["ready"] == 1
    events = call("GET", f"/api/v1/streams/{path_part(stream)}/events?after=0&wait_ms=5000")["events"]
    assert [e["payload"] for e in events] == [{"placed": 7}], events
    try:
        call("GET", f"/api/v1/jobs/{job['id']}")
        raise SystemExit("the acked job is still there")
    except ApiError as e:
        assert e.status == 404, e
    print(f"python atomic: ack + enqueue + publish + notify in one transaction; refused whole on a stale token")


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
