"""Jobs over the live server: the generated calls and the worker helper."""

import threading
import time
import unittest

from alkstore_client import ApiError, Client, Fail, Worker, work

from live import client, eventually, in_thread, joined, name


class Jobs(unittest.TestCase):
    def setUp(self):
        self.c = client()

    def claim_one(self, queue, worker="py-test", limit=10):
        jobs = self.c.claim(queue, worker=worker, limit=limit, wait_ms=2000)["jobs"]
        self.assertEqual(len(jobs), 1, jobs)
        return jobs[0]

    def test_enqueue_claim_ack(self):
        q = name("ack")
        e = self.c.enqueue(q, payload={"n": 1, "s": "é"}, priority=3)
        self.assertFalse(e["duplicate"])
        job = self.claim_one(q, "py-w1")
        self.assertEqual((job["id"], job["queue"], job["payload"], job["priority"], job["attempt"]),
                         (e["id"], q, {"n": 1, "s": "é"}, 3, 1))
        self.assertEqual(self.c.get_job(job["id"])["state"], "processing")
        self.assertEqual(self.c.ack(job["id"], worker="py-w1", token=job["token"]), {"done": True})
        # Settled once: the same claim acks nothing more.
        self.assertEqual(self.c.ack(job["id"], worker="py-w1", token=job["token"]), {"done": False})
        stats = self.c.queue_stats(q)
        self.assertEqual((stats["queue"], stats["ready"], stats["processing"], stats["dead"]), (q, 0, 0, 0))
        self.assertEqual(self.c.claim(q, worker="py-w1", wait_ms=0)["jobs"], [])

    def test_batch_and_unique_key(self):
        q = name("batch")
        ids = [j["id"] for j in self.c.enqueue_batch(q, jobs=[{"payload": i} for i in range(5)])["jobs"]]
        self.assertEqual(len(set(ids)), 5)
        first = self.c.enqueue(q, payload="u", unique_key="k1")
        again = self.c.enqueue(q, payload="u2", unique_key="k1")
        self.assertEqual((again["id"], again["duplicate"]), (first["id"], True))
        page = self.c.list_jobs(q, limit=3)
        self.assertEqual([j["id"] for j in page["jobs"]], sorted(ids)[:3])
        rest = self.c.list_jobs(q, after_id=page["next_after_id"])
        self.assertEqual([j["id"] for j in rest["jobs"]], sorted(ids)[3:] + [first["id"]])

    def test_ack_with_result_then_result_wait(self):
        q = name("result")
        job_id = self.c.enqueue(q, payload="sum 40 2")["id"]
        with self.assertRaises(ApiError) as cm:
            self.c.result(job_id, wait_ms=0)
        self.assertEqual((cm.exception.status, cm.exception.code), (404, "not_found"))
        job = self.claim_one(q)
        # A waiter blocked on the result gets it once the ack lands.
        t, box = in_thread(self.c.result, job_id, wait_ms=5000)
        time.sleep(0.2)
        self.assertTrue(t.is_alive(), "result() returned before the job was acked")
        answer = self.c.ack(job_id, worker="py-test", token=job["token"], result={"sum": 42, "of": [40, 2]})
        self.assertEqual(answer, {"done": True})
        self.assertEqual(joined(self, t, box, 10), {"sum": 42, "of": [40, 2]})
        full = self.c.get_result(job_id)
        self.assertEqual((full["job_id"], full["result"]), (job_id, {"sum": 42, "of": [40, 2]}))
        kept_ms = full["expires_at_ms"] - full["saved_at_ms"]
        self.assertTrue(23 * 3600_000 <= kept_ms <= 25 * 3600_000, full)

    def test_retry_makes_the_job_claimable_again(self):
        q = name("retry")
        job_id = self.c.enqueue(q, payload=None, max_attempts=3)["id"]
        job = self.claim_one(q)
        answer = self.c.retry(job_id, worker="py-test", token=job["token"], error="boom", delay_ms=0)
        self.assertEqual(answer["outcome"], "scheduled")
        again = self.claim_one(q, "py-other")
        self.assertEqual((again["id"], again["attempt"], again["payload"]), (job_id, 2, None))
        view = self.c.get_job(job_id)
        self.assertEqual(view["last_error"], "boom")
        self.assertEqual([e["error"] for e in view["errors"]], ["boom"])

    def test_fail_goes_to_the_dead_letters(self):
        q = name("fail")
        keep = self.c.enqueue(q, payload="keep")["id"]
        job_id = self.c.enqueue(q, payload="bad", priority=9)["id"]
        job = self.claim_one(q, limit=1)  # by priority: the bad one first
        self.assertEqual(job["id"], job_id)
        self.assertEqual(self.c.fail(job_id, worker="py-test", token=job["token"], error="no such user"),
                         {"done": True})
        dead = self.c.dead_list(q)["jobs"]
        self.assertEqual([(d["id"], d["state"], d["dead_reason"], d["last_error"]) for d in dead],
                         [(job_id, "dead", "failed", "no such user")])
        self.assertEqual(self.c.queue_stats(q)["dead"], 1)
        self.assertEqual(self.c.dead_requeue(q, ids=[job_id]), {"count": 1})
        self.assertEqual(sorted(j["id"] for j in self.c.list_jobs(q)["jobs"]), sorted([keep, job_id]))

    def test_names_are_percent_encoded(self):
        for q in ("py a/b", "py ?x=1&y=2", "py #frag", "py 100%", "py ..", "py +plus+", "py ü 名前"):
            q = f"{q} {name('enc')}"
            job_id = self.c.enqueue(q, payload=q)["id"]
            job = self.claim_one(q)
            self.assertEqual((job["id"], job["queue"], job["payload"]), (job_id, q, q))
            self.assertEqual(self.c.queue_stats(q)["queue"], q)
        names = {s["queue"] for s in self.c.list_queues()["queues"]}
        self.assertIn(q, names)
        # Dot segments are names too (sent as they are, never resolved).
        for q in (".", ".."):
            job_id = self.c.enqueue(q, payload=q)["id"]
            self.assertEqual(self.c.queue_stats(q)["queue"], q)
            self.assertIn(job_id, [j["id"] for j in self.c.list_jobs(q, limit=1000)["jobs"]])

    def test_bad_input_is_an_api_error(self):
        with self.assertRaises(ApiError) as cm:
            self.c.claim(name("bad"), worker="py-test", limit=0)
        e = cm.exception
        self.assertEqual((e.status, e.code, e.field), (400, "invalid_input", "limit"))
        self.assertTrue(e.message)
        with self.assertRaises(ApiError) as cm:
            self.c.enqueue(name("bad"), payload=1, priority="high")
        self.assertEqual((cm.exception.code, cm.exception.field), ("invalid_input", "priority"))
        with self.assertRaises(ApiError) as cm:
            self.c.queue_stats(name("never used"))
        self.assertEqual((cm.exception.status, cm.exception.code), (404, "not_found"))
        with self.assertRaises(ApiError) as cm:
            Client(self.c.url, token="not-the-token-at-all").list_queues()
        self.assertEqual((cm.exception.status, cm.exception.code), (401, "unauthorized"))


class WorkerHelper(unittest.TestCase):
    def setUp(self):
        self.c = client()

    def test_worker_runs_jobs_retries_and_fails(self):
        q = name("worker")
        n = 12
        self.c.enqueue_batch(q, jobs=[{"payload": {"n": i}} for i in range(n)])
        seen = []

        def handler(job):
            i = job["payload"]["n"]
            seen.append((i, job["attempt"]))
            if i == 3 and job["attempt"] == 1:
                raise ValueError("flaky")
            if i == 5:
                raise Fail("permanently bad")
            return None

        stop = threading.Event()
        timer = threading.Timer(20, stop.set)
        timer.start()
        try:
            counts = work(self.c, q, handler, name="py-worker", batch=4, wait_ms=500, retry_delay_ms=0,
                          stop=stop, max_jobs=n + 1)
        finally:
            timer.cancel()
        self.assertEqual(counts, {"acked": n - 1, "retried": 1, "failed": 1, "lost": 0})
        self.assertEqual(sorted(seen), sorted([(i, 1) for i in range(n)] + [(3, 2)]))
        stats = self.c.queue_stats(q)
        self.assertEqual((stats["ready"], stats["scheduled"], stats["processing"], stats["dead"]), (0, 0, 0, 1))
        [dead] = self.c.dead_list(q)["jobs"]
        self.assertEqual((dead["payload"], dead["last_error"]), ({"n": 5}, "permanently bad"))
        flaky = [j for j in self.c.list_jobs(q, state="completed")["jobs"] if j["payload"] == {"n": 3}]
        if flaky:  # kept completed jobs (depends on the server's retention)
            self.assertEqual(flaky[0]["last_error"], "ValueError: flaky")

    def test_worker_acks_with_the_handler_result(self):
        q = name("worker result")
        job_id = self.c.enqueue(q, payload=[2, 3])["id"]
        counts = work(self.c, q, lambda job: {"product": job["payload"][0] * job["payload"][1]},
                      wait_ms=1000, max_jobs=1)
        self.assertEqual(counts["acked"], 1)
        self.assertEqual(self.c.result(job_id, wait_ms=1000), {"product": 6})
        # A result that is not JSON retries the job, saying why.
        q2 = name("worker bad result")
        bad_id = self.c.enqueue(q2, payload=None)["id"]
        counts = work(self.c, q2, lambda job: {1, 2} if job["attempt"] == 1 else "ok",
                      retry_delay_ms=0, wait_ms=1000, max_jobs=2)
        self.assertEqual((counts["retried"], counts["acked"]), (1, 1))
        self.assertEqual(self.c.result(bad_id), "ok")

    def test_heartbeats_keep_a_long_job_claimed(self):
        q = name("heartbeat")
        job_id = self.c.enqueue(q, payload="slow")["id"]
        beats = []

        class Recording(Client):
            def heartbeat(self, *args, **kwargs):
                answer = super().heartbeat(*args, **kwargs)
                beats.append(answer)
                return answer

        c = Recording(self.c.url, self.c.token)
        expiries = []

        def slow(job):
            expiries.append(job["claim_expires_at"])
            time.sleep(1.3)
            expiries.append(self.c.get_job(job["id"])["claim_expires_at"])

        counts = work(c, q, slow, wait_ms=1000, heartbeat_every=0.25, max_jobs=1)
        self.assertEqual(counts["acked"], 1)
        self.assertGreaterEqual(len(beats), 3, beats)
        self.assertTrue(all(b["held"] for b in beats), beats)
        self.assertGreater(expiries[1], expiries[0], "heartbeats did not move the claim's expiry")
        with self.assertRaises(ApiError):
            self.c.get_job(job_id)  # acked: gone

    def test_stop_releases_claimed_jobs_not_run(self):
        q = name("stop")
        ids = [j["id"] for j in self.c.enqueue_batch(q, jobs=[{"payload": i} for i in range(3)])["jobs"]]
        w, ran = None, []

        def handler(job):
            ran.append(job["id"])
            w.stop()  # stop while holding the rest of the batch

        w = Worker(self.c, q, handler, batch=3, wait_ms=1000)
        counts = w.run()
        self.assertEqual(counts["acked"], 1)
        rest = self.c.claim(q, worker="py-other", limit=10, wait_ms=0)["jobs"]
        self.assertEqual(len(ran), 1)
        self.assertEqual(sorted(j["id"] for j in rest), sorted(set(ids) - set(ran)))

    def test_a_claim_failing_for_a_passing_reason_is_tried_again(self):
        q = name("transient")
        job_id = self.c.enqueue(q, payload="x")["id"]
        failures = []

        class Flaky(Client):  # the first claim meets a dropped connection
            def claim(self, *args, **kwargs):
                if not failures:
                    failures.append(1)
                    raise ConnectionResetError("connection reset by peer")
                return super().claim(*args, **kwargs)

        seen = []
        counts = work(Flaky(self.c.url, self.c.token), q, lambda job: seen.append(job["id"]),
                      wait_ms=1000, max_jobs=1)
        self.assertEqual((failures, seen, counts["acked"]), ([1], [job_id], 1))
        # A 4xx is not passing: it ends the worker.
        with self.assertRaises(ApiError) as cm:
            work(self.c, q, lambda job: None, name="\x00", wait_ms=0)
        self.assertEqual(cm.exception.status, 400)

    def test_stop_event_ends_an_idle_worker(self):
        stop = threading.Event()
        t, box = in_thread(work, self.c, name("idle"), lambda job: None, wait_ms=300, stop=stop)
        time.sleep(0.2)
        self.assertTrue(t.is_alive())
        stop.set()
        self.assertEqual(joined(self, t, box, 3), {"acked": 0, "retried": 0, "failed": 0, "lost": 0})


if __name__ == "__main__":
    unittest.main()
