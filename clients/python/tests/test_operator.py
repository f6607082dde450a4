"""The operator endpoints over the live server: the store, the registered
processes (a real `alk worker`, quieted and stopped), jobs by state with
bulk actions, schedule fires, group handoffs, throughput and depth.

The process and depth tests run the `alk` binary named by ALK_BIN against
ALK_DB, the store URL the server serves (scripts/client-checks sets both);
without them those tests are skipped."""

import os
import random
import subprocess
import tempfile
import time
import unittest
from urllib.parse import parse_qs, urlsplit

from alkstore_client import ApiError

from live import client, eventually, name

ALK_BIN = os.environ.get("ALK_BIN")
ALK_DB = os.environ.get("ALK_DB")
NEEDS_ALK = "set ALK_BIN (the alk binary) and ALK_DB (the store URL the server serves) to run it"

WEEK_S = 604800


def alk(*args, timeout=60):
    """Run `$ALK_BIN --db $ALK_DB ARGS...`; its stdout."""
    done = subprocess.run([ALK_BIN, "--db", ALK_DB, *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise AssertionError(f"alk {' '.join(args)} exited {done.returncode}: {done.stderr}")
    return done.stdout


def api_error(test, fn, *args, **kwargs):
    with test.assertRaises(ApiError) as cm:
        fn(*args, **kwargs)
    return cm.exception


class Store(unittest.TestCase):
    def setUp(self):
        self.c = client()

    def test_store_info_names_the_engine_and_version(self):
        info = self.c.store_info()
        self.assertIn(info["engine"], ("sqlite", "postgres"), info)
        self.assertIsInstance(info["version"], str)
        self.assertRegex(info["version"], r"^\d+\.\d+\.\d+", info)
        self.assertTrue(info["location"], info)
        if info["engine"] == "sqlite":
            self.assertIsNone(info.get("schema"), info)
        else:
            self.assertTrue(info["schema"], info)
        if ALK_DB:  # the store the server was started on
            url = urlsplit(ALK_DB)
            engine = "sqlite" if url.scheme == "sqlite" else "postgres"
            self.assertEqual(info["engine"], engine, (info, ALK_DB))
            if engine == "sqlite":
                self.assertTrue(info["location"].endswith(url.path), (info, ALK_DB))
            else:
                self.assertEqual(info["schema"], parse_qs(url.query)["schema"][0], (info, ALK_DB))
        if ALK_BIN:
            out = subprocess.run([ALK_BIN, "--version"], capture_output=True, text=True, timeout=30).stdout
            self.assertEqual(out.split(), ["alk", info["version"]], out)


class Processes(unittest.TestCase):
    def setUp(self):
        self.c = client()

    def test_unknown_process_is_404(self):
        for call in (self.c.quiet_process, self.c.stop_process):
            e = api_error(self, call, name("no such process"))
            self.assertEqual((e.status, e.code, e.field), (404, "not_found", "id"))
        listed = self.c.list_processes()["processes"]
        self.assertIsInstance(listed, list)

    @unittest.skipUnless(ALK_BIN and ALK_DB, NEEDS_ALK)
    def test_a_real_worker_is_listed_quieted_and_stopped(self):
        q = name("process")
        log = tempfile.TemporaryFile()
        self.addCleanup(log.close)
        proc = subprocess.Popen(
            [ALK_BIN, "--db", ALK_DB, "worker", "--queue", q, "--exec", "true", "--concurrency", "2"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)

        def kill():
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        self.addCleanup(kill)

        def output():
            log.seek(0)
            return log.read().decode("utf-8", "replace")

        def mine():
            """This worker's row (None when not listed)."""
            rows = [p for p in self.c.list_processes()["processes"] if p["roles"] == [q]]
            self.assertLessEqual(len(rows), 1, rows)
            return rows[0] if rows else None

        def listed():
            if proc.poll() is not None:
                self.fail(f"alk worker exited {proc.returncode}: {output()}")
            return mine()

        row = eventually(self, listed, timeout=15, what="the worker listed")
        version = self.c.store_info()["version"]
        self.assertEqual((row["kind"], row["roles"], row["alive"], row["order"], row["pid"]),
                         ("worker", [q], True, "run", proc.pid), row)
        self.assertEqual((row["concurrency"], row["version"]), (2, version), row)
        self.assertTrue(row["id"] and row["host"], row)
        self.assertLessEqual(row["started_at_ms"], row["heartbeat_at_ms"])
        self.assertEqual(row["expires_at_ms"] - row["heartbeat_at_ms"], 15000, row)

        # It works the queue: a job runs `true` and is acked.
        first = self.c.enqueue(q, payload={"n": 1})["id"]
        totals = eventually(self, lambda: self.c.throughput(queue=q, window_s=600)["totals"],
                            timeout=15, what="the first job acked")
        self.assertEqual(totals, [{"queue": q, "completed": 1, "failed": 0}])
        self.assertEqual(api_error(self, self.c.get_job, first).status, 404)

        # Quiet: the order shows at once; at its next heartbeat the worker
        # reads it, stays registered and alive, and claims nothing new.
        self.assertEqual(self.c.quiet_process(row["id"]), {"done": True})
        now = mine()
        self.assertEqual((now["id"], now["order"], now["alive"]), (row["id"], "quiet", True), now)
        beat = eventually(self, lambda: (p := listed()) and p["heartbeat_at_ms"] > now["heartbeat_at_ms"] and p,
                          timeout=15, what="a heartbeat after the quiet order")
        self.assertEqual((beat["order"], beat["alive"], beat["running"]), ("quiet", True, 0), beat)
        second = self.c.enqueue(q, payload={"n": 2})["id"]
        until = time.monotonic() + 1.0
        while time.monotonic() < until:
            job = self.c.get_job(second)
            self.assertEqual((job["state"], job["attempts"]), ("pending", 0), "a quiet worker claimed a job")
            time.sleep(0.1)
        self.assertIsNone(proc.poll(), "a quiet worker exited before it was told to stop")

        # Stop: it exits at its next heartbeat, and its row goes with it.
        self.assertEqual(self.c.stop_process(row["id"]), {"done": True})
        after = mine()
        self.assertTrue(after is None or after["order"] == "stop", after)
        try:
            code = proc.wait(20)
        except subprocess.TimeoutExpired:
            self.fail(f"alk worker still running 20 s after the stop order: {output()}")
        self.assertEqual(code, 0, output())
        self.assertIn("stopped", output())
        self.assertIsNone(mine())
        self.assertNotIn(row["id"], [p["id"] for p in self.c.list_processes()["processes"]])
        self.assertEqual(self.c.get_job(second)["state"], "pending")
        e = api_error(self, self.c.stop_process, row["id"])
        self.assertEqual((e.status, e.code, e.field), (404, "not_found", "id"))


ZERO = {"pending": 0, "scheduled": 0, "retryable": 0, "running": 0, "expired": 0,
        "dead": 0, "cancelled": 0, "completed": 0}


class JobsByState(unittest.TestCase):
    def setUp(self):
        self.c = client()

    def test_counts_search_and_bulk_actions(self):
        q = name("operator jobs")
        customer = random.randrange(10**12, 10**13)
        # retryable: claimed, then retried with a long delay
        retryable = self.c.enqueue(q, payload={"kind": "retryable"}, max_attempts=5)["id"]
        [job] = self.c.claim(q, worker="py-operator", limit=5, wait_ms=2000)["jobs"]
        self.assertEqual(job["id"], retryable)
        answer = self.c.retry(retryable, worker="py-operator", token=job["token"], error="later",
                              delay_ms=600_000)
        self.assertEqual(answer["outcome"], "scheduled")
        # scheduled: its first run an hour away
        scheduled = self.c.enqueue(q, payload={"kind": "scheduled"}, delay_ms=3_600_000)["id"]
        # pending, with a customer to search for
        pending = self.c.enqueue(q, payload={"customer_id": customer})["id"]

        self.assertEqual(self.c.job_counts(queue=q), {**ZERO, "pending": 1, "scheduled": 1, "retryable": 1})
        everywhere = self.c.job_counts()
        self.assertTrue(all(everywhere[k] >= v for k, v in self.c.job_counts(queue=q).items()), everywhere)

        def found(**query):
            return [(j["id"], j["state"]) for j in self.c.search_jobs(**query)["jobs"]]

        self.assertEqual(found(state="retryable", queue=q), [(retryable, "retryable")])
        self.assertEqual(found(state="scheduled", queue=q), [(scheduled, "scheduled")])
        self.assertEqual(found(state="pending", queue=q), [(pending, "pending")])
        self.assertEqual(found(state="running", queue=q), [])
        self.assertEqual(found(queue=q), [(retryable, "retryable"), (scheduled, "scheduled"), (pending, "pending")])
        where = f"$.customer_id = {customer}"
        self.assertEqual(found(queue=q, where=where), [(pending, "pending")])
        page = self.c.search_jobs(where=where)  # every queue
        self.assertEqual([(j["id"], j["queue"], j["payload"]) for j in page["jobs"]],
                         [(pending, q, {"customer_id": customer})])
        self.assertEqual(found(queue=q, where=f"$.customer_id = {customer + 1}"), [])
        self.assertEqual(found(queue=q, state="scheduled", where=where), [])
        e = api_error(self, self.c.search_jobs, where="customer_id = 1")
        self.assertEqual((e.status, e.code, e.field), (400, "invalid_input", "where"))
        e = api_error(self, self.c.search_jobs, state="sleeping")
        self.assertEqual((e.status, e.field), (400, "state"))

        # run_now: the scheduled and the retryable one (the pending one is due already).
        self.assertEqual(self.c.bulk_jobs(action="run_now", ids=[retryable, scheduled, pending]),
                         {"changed": 2, "requested": 0})
        self.assertEqual(self.c.job_counts(queue=q), {**ZERO, "pending": 3})
        self.assertEqual(found(state="pending", queue=q),
                         [(retryable, "pending"), (scheduled, "pending"), (pending, "pending")])
        # cancel two: dead letters as cancelled
        self.assertEqual(self.c.bulk_jobs(action="cancel", ids=[retryable, scheduled]),
                         {"changed": 2, "requested": 0})
        self.assertEqual(self.c.job_counts(queue=q), {**ZERO, "pending": 1, "dead": 2, "cancelled": 2})
        cancelled = self.c.search_jobs(state="cancelled", queue=q)["jobs"]
        self.assertEqual([(j["id"], j["state"], j["dead_reason"]) for j in cancelled],
                         [(retryable, "dead", "cancelled"), (scheduled, "dead", "cancelled")])
        # cancelling them again changes nothing
        self.assertEqual(self.c.bulk_jobs(action="cancel", ids=[retryable, scheduled])["changed"], 0)
        # delete all three: the pending job and both dead letters
        self.assertEqual(self.c.bulk_jobs(action="delete", ids=[retryable, scheduled, pending]),
                         {"changed": 3, "requested": 0})
        self.assertEqual(self.c.job_counts(queue=q), ZERO)
        self.assertEqual(found(queue=q), [])
        self.assertEqual(self.c.bulk_jobs(action="delete", ids=[pending])["changed"], 0)

        e = api_error(self, self.c.bulk_jobs, action="explode", ids=[pending])
        self.assertEqual((e.status, e.code, e.field), (400, "invalid_input", "action"))
        self.assertTrue(e.message)


class Tags(unittest.TestCase):
    def setUp(self):
        self.c = client()

    def test_tags_and_meta_are_kept_shown_and_searched(self):
        q = name("tagged")
        vip = f"vip-{random.randrange(10**9)}"
        both = self.c.enqueue(q, payload=1, tags=["billing", vip, "billing"], meta={"by": "py", "n": 2})["id"]
        billing = self.c.enqueue(q, payload=2, tags=["billing"])["id"]
        plain = self.c.enqueue(q, payload=3)["id"]
        batch = [j["id"] for j in self.c.enqueue_batch(q, jobs=[
            {"payload": 4, "tags": [vip]}, {"payload": 5, "meta": {"step": "b"}}])["jobs"]]

        shown = self.c.get_job(both)
        self.assertEqual((shown["tags"], shown["meta"]), (["billing", vip], {"by": "py", "n": 2}))
        self.assertEqual((self.c.get_job(plain)["tags"], self.c.get_job(plain)["meta"]), ([], {}))
        self.assertEqual(self.c.get_job(batch[1])["meta"], {"step": "b"})

        def found(**query):
            return [j["id"] for j in self.c.search_jobs(**query)["jobs"]]

        self.assertEqual(found(queue=q, tag="billing"), [both, billing])
        self.assertEqual(found(tag=vip), [both, batch[0]])  # every queue
        self.assertEqual(found(queue=q, tag="bill"), [])
        self.assertEqual([j["id"] for j in self.c.list_jobs(q, tag="billing")["jobs"]], [both, billing])
        # A worker gets them with the job.
        jobs = self.c.claim(q, worker="py-tags", limit=1, wait_ms=2000)["jobs"]
        self.assertEqual((jobs[0]["id"], jobs[0]["tags"], jobs[0]["meta"]),
                         (both, ["billing", vip], {"by": "py", "n": 2}))
        self.assertEqual(found(state="running", tag=vip), [both])
        self.c.fail(both, worker="py-tags", token=jobs[0]["token"], error="no")
        self.assertEqual(found(state="dead", tag=vip), [both])
        self.assertEqual([j["id"] for j in self.c.dead_list(q, tag=vip)["jobs"]], [both])
        self.assertEqual(self.c.dead_list(q, tag="billing-eu")["jobs"], [])

        bad = name("bad tags")
        for body, field in [({"tags": [f"t{i}" for i in range(21)]}, "tags"),
                            ({"tags": [""]}, "tags"),
                            ({"meta": [1, 2]}, "meta"),
                            ({"meta": {"blob": "x" * 9000}}, "meta"),
                            ({"meta": {"who": "a\u0000b"}}, "meta")]:
            e = api_error(self, self.c.enqueue, bad, payload=0, **body)
            self.assertEqual((e.status, e.code, e.field), (400, "invalid_input", field), body)
        self.assertEqual(self.c.job_counts(queue=bad), ZERO)
        e = api_error(self, self.c.search_jobs, tag="")
        self.assertEqual((e.status, e.field), (400, "tag"))


class BulkMatching(unittest.TestCase):
    def setUp(self):
        self.c = client()

    def test_bulk_acts_on_every_matching_job_page_by_page(self):
        q = name("bulk matching")
        tag = f"sweep-{random.randrange(10**9)}"
        self.c.enqueue_batch(q, jobs=[{"payload": i, "tags": [tag]} for i in range(7)]
                             + [{"payload": i} for i in range(3)])
        matching = {"queue": q, "tag": tag, "limit": 3, "after_id": 0}
        totals, calls = {"changed": 0, "matched": 0}, 0
        while True:
            calls += 1
            r = self.c.bulk_jobs(action="cancel", matching=matching)
            totals["changed"] += r["changed"]
            totals["matched"] += r["matched"]
            if "next_after_id" not in r:
                break
            matching["after_id"] = r["next_after_id"]
        self.assertEqual(totals, {"changed": 7, "matched": 7})
        self.assertGreaterEqual(calls, 3)
        self.assertEqual(self.c.job_counts(queue=q), {**ZERO, "pending": 3, "dead": 7, "cancelled": 7})
        # Dead ones by tag, all at once: retried.
        r = self.c.bulk_jobs(action="retry", matching={"state": "cancelled", "tag": tag})
        self.assertEqual((r["changed"], r["matched"]), (7, 7))
        self.assertEqual(self.c.job_counts(queue=q), {**ZERO, "pending": 10})

        e = api_error(self, self.c.bulk_jobs, action="cancel", ids=[1], matching={"queue": q})
        self.assertEqual((e.status, e.field), (400, "ids"))
        e = api_error(self, self.c.bulk_jobs, action="cancel", matching={"state": "asleep"})
        self.assertEqual((e.status, e.field), (400, "matching.state"))
        e = api_error(self, self.c.bulk_jobs, action="explode", matching={"queue": name("nothing here")})
        self.assertEqual((e.status, e.field), (400, "action"))
        e = api_error(self, self.c.bulk_jobs, action="cancel", matching={"queue": q, "limit": 0})
        self.assertEqual((e.status, e.field), (400, "matching.limit"))
        self.assertEqual(self.c.job_counts(queue=q), {**ZERO, "pending": 10})


class ScheduleFires(unittest.TestCase):
    def setUp(self):
        self.c = client()

    def test_run_now_is_listed_as_a_manual_fire(self):
        sched, q = name("fired schedule"), name("fired queue")
        # A boundary once a year: only the manual runs fire during the test.
        self.c.set_schedule(sched, spec="0 0 1 1 *", queue=q, payload={"report": "daily"}, priority=4)
        self.addCleanup(self.c.remove_schedule, sched)
        self.assertEqual(self.c.schedule_fires(sched), {"fires": []})
        before_ms = time.time() * 1000
        fire = self.c.run_schedule(sched)
        self.assertEqual((fire["schedule"], fire["queue"], fire["manual"]), (sched, q, True), fire)
        self.assertIsInstance(fire["job_id"], int)
        self.assertLess(abs(fire["fired_at_ms"] - before_ms), 60_000, fire)
        job = self.c.get_job(fire["job_id"])
        self.assertEqual((job["queue"], job["payload"], job["priority"], job["state"]),
                         (q, {"report": "daily"}, 4, "pending"))
        fires = self.c.schedule_fires(sched)["fires"]
        self.assertEqual(fires, [fire])
        self.assertEqual(fires[0]["job_id"], fire["job_id"])
        self.assertTrue(fires[0]["manual"])
        # A paused schedule still runs on demand; newest first. (Two runs
        # within one millisecond share a job: the second waits a tick.)
        self.c.pause_schedule(sched)
        eventually(self, lambda: time.time() * 1000 > fire["boundary_ms"] + 1, what="a later millisecond")
        again = self.c.run_schedule(sched)
        self.assertNotEqual(again["job_id"], fire["job_id"])
        fires = self.c.schedule_fires(sched)["fires"]
        self.assertEqual([(f["job_id"], f["manual"]) for f in fires], [(again["job_id"], True), (fire["job_id"], True)])
        self.assertEqual(self.c.schedule_fires(sched, limit=1)["fires"], [again])

        for call in (self.c.schedule_fires, self.c.run_schedule):
            e = api_error(self, call, name("no such schedule"))
            self.assertEqual((e.status, e.code, e.field), (404, "not_found", "name"))


class GroupHandoffs(unittest.TestCase):
    def setUp(self):
        self.c = client()

    def test_handoffs_counted_by_cause(self):
        g, s = name("handoff group"), name("handoff stream")
        a, b = "py member a", "py member b"
        joined_a = self.c.join_group(g, stream=s, buckets=2, member=a, ttl_ms=60_000)
        self.assertEqual(sorted(l["bucket"] for l in joined_a["leases"]), [0, 1])
        joined_b = self.c.join_group(g, stream=s, member=b, ttl_ms=60_000)
        self.assertEqual((joined_b["leases"], joined_b["live_members"]), ([], 2))
        # a gives back its surplus at its heartbeat; b takes it when it claims.
        [kept] = self.c.member_heartbeat(g, a, ttl_ms=60_000)["leases"]
        [taken] = self.c.member_claim(g, b, ttl_ms=60_000)["leases"]
        self.assertEqual({kept["bucket"], taken["bucket"]}, {0, 1})
        # a leaves; b takes its bucket at its next heartbeat.
        self.assertEqual(self.c.leave_group(g, a), {"released": 1})
        self.assertEqual(sorted(l["bucket"] for l in self.c.member_heartbeat(g, b, ttl_ms=60_000)["leases"]), [0, 1])

        view = self.c.group_handoffs(g)
        self.assertEqual(view["totals"], {"first": 2, "rebalance": 1, "leave": 1, "lapse": 0})
        self.assertEqual(
            [(h["cause"], h["bucket"], h["from_worker"], h["to_worker"], h["epoch"]) for h in view["handoffs"][:2]],
            [("leave", kept["bucket"], a, b, 2), ("rebalance", taken["bucket"], a, b, 2)])
        self.assertEqual(sorted((h["cause"], h["bucket"], h["from_worker"], h["to_worker"], h["epoch"])
                                for h in view["handoffs"][2:]),
                         [("first", 0, None, a, 1), ("first", 1, None, a, 1)])
        times = [h["at_ms"] for h in view["handoffs"]]
        self.assertEqual(times, sorted(times, reverse=True))
        self.assertEqual(len(self.c.group_handoffs(g, limit=1)["handoffs"]), 1)

        e = api_error(self, self.c.group_handoffs, name("no such group"))
        self.assertEqual((e.status, e.code), (404, "not_found"))


class History(unittest.TestCase):
    def setUp(self):
        self.c = client()

    def test_throughput_over_a_week(self):
        q = name("throughput")
        ids = [j["id"] for j in self.c.enqueue_batch(q, jobs=[{"payload": i} for i in range(3)])["jobs"]]
        claimed = {j["id"]: j for j in self.c.claim(q, worker="py-history", limit=3, wait_ms=2000)["jobs"]}
        self.assertEqual(sorted(claimed), sorted(ids))
        for i in ids[:2]:
            self.c.ack(i, worker="py-history", token=claimed[i]["token"])
        self.c.fail(ids[2], worker="py-history", token=claimed[ids[2]]["token"], error="no")

        view = self.c.throughput(window_s=WEEK_S)
        self.assertEqual(view["bucket_s"], 10)
        self.assertLessEqual(abs(view["now"] - time.time()), 60, view["now"])
        self.assertTrue(view["buckets"], view)
        for bucket in view["buckets"]:
            self.assertIn(bucket["span_s"], (10, 300), bucket)
            self.assertEqual(bucket["start"] % bucket["span_s"], 0, bucket)
            self.assertGreaterEqual(bucket["start"], view["now"] - WEEK_S - bucket["span_s"], bucket)
        self.assertIn({"queue": q, "completed": 2, "failed": 1}, view["totals"])
        mine = [b for b in view["buckets"] if b["queue"] == q]
        self.assertEqual((sum(b["completed"] for b in mine), sum(b["failed"] for b in mine)), (2, 1), mine)
        self.assertTrue(all(b["span_s"] == 10 for b in mine), mine)
        one = self.c.throughput(queue=q, window_s=WEEK_S)
        self.assertEqual(one["totals"], [{"queue": q, "completed": 2, "failed": 1}])
        self.assertEqual(one["buckets"], mine)
        e = api_error(self, self.c.throughput, window_s=WEEK_S + 1)
        self.assertEqual((e.status, e.field), (400, "window_s"))

    def test_depth_lists_samples_of_the_queue(self):
        q = name("depth")
        self.c.enqueue(q, payload="x")
        samples = self.c.depth(queue=q)["samples"]
        self.assertIsInstance(samples, list)
        self.assertTrue(all(s["queue"] == q for s in samples), samples)
        e = api_error(self, self.c.depth, window_s=0)
        self.assertEqual((e.status, e.field), (400, "window_s"))

    @unittest.skipUnless(ALK_BIN and ALK_DB, NEEDS_ALK)
    def test_depth_sample_after_a_sweep(self):
        q = name("depth swept")
        dead = self.c.enqueue(q, payload="dead")["id"]
        [job] = self.c.claim(q, worker="py-depth", limit=1, wait_ms=2000)["jobs"]
        self.c.fail(dead, worker="py-depth", token=job["token"], error="no")
        running = self.c.enqueue(q, payload="running")["id"]
        [job] = self.c.claim(q, worker="py-depth", limit=1, wait_ms=2000)["jobs"]
        self.assertEqual(job["id"], running)
        self.c.enqueue_batch(q, jobs=[{"payload": "ready 1"}, {"payload": "ready 2"},
                                      {"payload": "later", "delay_ms": 3_600_000}])
        started = int(time.time()) - 1
        alk("sweep")
        samples = self.c.depth(queue=q, window_s=3600)["samples"]
        self.assertTrue(samples, "no depth sample after a sweep")
        self.assertTrue(all(s["queue"] == q for s in samples), samples)
        last = samples[-1]
        self.assertEqual((last["ready"], last["scheduled"], last["processing"], last["dead"]), (2, 1, 1, 1), samples)
        self.assertGreaterEqual(last["at"], started, last)
        everywhere = self.c.depth(window_s=3600)["samples"]
        self.assertIn(last, everywhere)


if __name__ == "__main__":
    unittest.main()
