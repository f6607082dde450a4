// Jobs over the live server: the generated calls and the worker helper.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ApiError, Client, Fail, Worker, work } from "@alkstore/client";
import { T, apiError, client, name, sleep, within } from "./live.mjs";

const c = client();

async function claimOne(queue, worker = "js-test", limit = 10) {
  const { jobs } = await c.claim(queue, { worker, limit, wait_ms: 2000 });
  assert.equal(jobs.length, 1, JSON.stringify(jobs));
  return jobs[0];
}

test("enqueue, claim, ack", T, async () => {
  const q = name("ack");
  const e = await c.enqueue(q, { payload: { n: 1, s: "é" }, priority: 3 });
  assert.equal(e.duplicate, false);
  const job = await claimOne(q, "js-w1");
  assert.deepEqual([job.id, job.queue, job.payload, job.priority, job.attempt], [e.id, q, { n: 1, s: "é" }, 3, 1]);
  assert.equal((await c.get_job(job.id)).state, "processing");
  assert.deepEqual(await c.ack(job.id, { worker: "js-w1", token: job.token }), { done: true });
  assert.deepEqual(await c.ack(job.id, { worker: "js-w1", token: job.token }), { done: false });
  const stats = await c.queue_stats(q);
  assert.deepEqual([stats.queue, stats.ready, stats.processing, stats.dead], [q, 0, 0, 0]);
  assert.deepEqual((await c.claim(q, { worker: "js-w1", wait_ms: 0 })).jobs, []);
});

test("ack with a result, then result(wait) returns it", T, async () => {
  const q = name("result");
  const { id } = await c.enqueue(q, { payload: "sum 40 2" });
  const none = await apiError(c.result(id, 0));
  assert.deepEqual([none.status, none.code], [404, "not_found"]);
  const job = await claimOne(q);
  let settled = false;
  const waiting = c.result(id, 5000).finally(() => (settled = true));
  await sleep(200);
  assert.equal(settled, false, "result() returned before the job was acked");
  assert.deepEqual(await c.ack(id, { worker: "js-test", token: job.token, result: { sum: 42, of: [40, 2] } }), { done: true });
  assert.deepEqual(await within(waiting, 5000, "result"), { sum: 42, of: [40, 2] });
  const full = await c.get_result(id);
  assert.deepEqual([full.job_id, full.result], [id, { sum: 42, of: [40, 2] }]);
  const keptMs = full.expires_at_ms - full.saved_at_ms;
  assert.ok(keptMs >= 23 * 3600_000 && keptMs <= 25 * 3600_000, JSON.stringify(full));
});

test("retry makes the job claimable again, attempt 2", T, async () => {
  const q = name("retry");
  const { id } = await c.enqueue(q, { payload: null, max_attempts: 3 });
  const job = await claimOne(q);
  assert.equal((await c.retry(id, { worker: "js-test", token: job.token, error: "boom", delay_ms: 0 })).outcome, "scheduled");
  const again = await claimOne(q, "js-other");
  assert.deepEqual([again.id, again.attempt, again.payload], [id, 2, null]);
  const view = await c.get_job(id);
  assert.equal(view.last_error, "boom");
  assert.deepEqual(view.errors.map((e) => e.error), ["boom"]);
});

test("fail puts the job in the dead letters", T, async () => {
  const q = name("fail");
  await c.enqueue(q, { payload: "keep" });
  const { id } = await c.enqueue(q, { payload: "bad", priority: 9 });
  const job = await claimOne(q, "js-test", 1);
  assert.equal(job.id, id);
  assert.deepEqual(await c.fail(id, { worker: "js-test", token: job.token, error: "no such user" }), { done: true });
  const dead = (await c.dead_list(q)).jobs;
  assert.deepEqual(dead.map((d) => [d.id, d.state, d.dead_reason, d.last_error]), [[id, "dead", "failed", "no such user"]]);
  assert.deepEqual(await c.dead_requeue(q, { ids: [id] }), { count: 1 });
  assert.equal((await c.queue_stats(q)).dead, 0);
});

test("names are percent-encoded as one path segment", T, async () => {
  let last;
  for (const prefix of ["js a/b", "js ?x=1&y=2", "js #frag", "js 100%", "js ..", "js +plus+", "js (x)!*'", "js ü 名前"]) {
    const q = `${prefix} ${name("enc")}`;
    const { id } = await c.enqueue(q, { payload: q });
    const job = await claimOne(q);
    assert.deepEqual([job.id, job.queue, job.payload], [id, q, q]);
    assert.equal((await c.queue_stats(q)).queue, q);
    last = q;
  }
  assert.ok((await c.list_queues()).queues.some((s) => s.queue === last));
  // fetch would resolve "." and ".." as relative segments: refused before sending.
  await assert.rejects(c.enqueue("..", { payload: 1 }), RangeError);
  await assert.rejects(c.queue_stats("."), RangeError);
});

test("bad input is an ApiError naming the field", T, async () => {
  const e = await apiError(c.claim(name("bad"), { worker: "js-test", limit: 0 }));
  assert.ok(e instanceof ApiError);
  assert.deepEqual([e.status, e.code, e.field], [400, "invalid_input", "limit"]);
  assert.ok(e.detail.length > 0);
  const p = await apiError(c.enqueue(name("bad"), { payload: 1, priority: "high" }));
  assert.deepEqual([p.code, p.field], ["invalid_input", "priority"]);
  const nf = await apiError(c.queue_stats(name("never used")));
  assert.deepEqual([nf.status, nf.code], [404, "not_found"]);
  const auth = await apiError(new Client(c.url, { token: "not-the-token-at-all" }).list_queues());
  assert.deepEqual([auth.status, auth.code], [401, "unauthorized"]);
});

test("worker: runs N jobs, one retried, one failed", T, async () => {
  const q = name("worker");
  const n = 12;
  await c.enqueue_batch(q, { jobs: Array.from({ length: n }, (_, i) => ({ payload: { n: i } })) });
  const seen = [];
  const stop = AbortSignal.timeout(20_000);
  const counts = await work(
    c,
    q,
    async (job) => {
      const i = job.payload.n;
      seen.push([i, job.attempt]);
      if (i === 3 && job.attempt === 1) throw new RangeError("flaky");
      if (i === 5) throw new Fail("permanently bad");
      return undefined;
    },
    { name: "js-worker", batch: 4, waitMs: 500, retryDelayMs: 0, maxJobs: n + 1, signal: stop },
  );
  assert.deepEqual(counts, { acked: n - 1, retried: 1, failed: 1, lost: 0 });
  const key = ([i, a]) => i * 10 + a;
  assert.deepEqual(seen.map(key).sort((a, b) => a - b), [...Array.from({ length: n }, (_, i) => [i, 1]), [3, 2]].map(key).sort((a, b) => a - b));
  const stats = await c.queue_stats(q);
  assert.deepEqual([stats.ready, stats.scheduled, stats.processing, stats.dead], [0, 0, 0, 1]);
  const [dead] = (await c.dead_list(q)).jobs;
  assert.deepEqual([dead.payload, dead.last_error], [{ n: 5 }, "permanently bad"]);
});

test("worker: acks with the handler's result", T, async () => {
  const q = name("worker result");
  const { id } = await c.enqueue(q, { payload: [2, 3] });
  const counts = await work(c, q, (job) => ({ product: job.payload[0] * job.payload[1] }), { waitMs: 1000, maxJobs: 1 });
  assert.equal(counts.acked, 1);
  assert.deepEqual(await c.result(id, 1000), { product: 6 });
  // A result that is not JSON retries the job, saying why.
  const q2 = name("worker bad result");
  const bad = await c.enqueue(q2, { payload: null });
  const again = await work(c, q2, (job) => (job.attempt === 1 ? { n: 1n } : "ok"), { retryDelayMs: 0, waitMs: 1000, maxJobs: 2 });
  assert.deepEqual([again.retried, again.acked], [1, 1]);
  assert.equal(await c.result(bad.id), "ok");
});

test("worker: heartbeats keep a long job claimed", T, async () => {
  const q = name("heartbeat");
  await c.enqueue(q, { payload: "slow" });
  const beats = [];
  class Recording extends Client {
    async heartbeat(...args) {
      const answer = await super.heartbeat(...args);
      beats.push(answer);
      return answer;
    }
  }
  const rc = new Recording(c.url, { token: c.token });
  const expiries = [];
  const counts = await work(
    rc,
    q,
    async (job) => {
      expiries.push(job.claim_expires_at);
      await sleep(1300);
      expiries.push((await c.get_job(job.id)).claim_expires_at);
    },
    { waitMs: 1000, heartbeatEveryMs: 250, maxJobs: 1 },
  );
  assert.equal(counts.acked, 1);
  assert.ok(beats.length >= 3, JSON.stringify(beats));
  assert.ok(beats.every((b) => b.held), JSON.stringify(beats));
  assert.ok(expiries[1] > expiries[0], `heartbeats did not move the claim's expiry: ${expiries}`);
});

test("worker: stop releases claimed jobs not run", T, async () => {
  const q = name("stop");
  const ids = (await c.enqueue_batch(q, { jobs: [0, 1, 2].map((i) => ({ payload: i })) })).jobs.map((j) => j.id);
  const ran = [];
  const w = new Worker(c, q, (job) => {
    ran.push(job.id);
    w.stop();
  }, { batch: 3, waitMs: 1000 });
  const counts = await w.run();
  assert.equal(counts.acked, 1);
  const rest = (await c.claim(q, { worker: "js-other", limit: 10, wait_ms: 0 })).jobs.map((j) => j.id);
  assert.deepEqual(rest.sort((a, b) => a - b), ids.filter((id) => !ran.includes(id)).sort((a, b) => a - b));
});

test("worker: a claim failing for a passing reason is tried again", T, async () => {
  const q = name("transient");
  const { id } = await c.enqueue(q, { payload: "x" });
  let failures = 0;
  class Flaky extends Client {
    // the first claim meets a dropped connection
    claim(...args) {
      if (failures === 0) {
        failures += 1;
        return Promise.reject(new TypeError("fetch failed"));
      }
      return super.claim(...args);
    }
  }
  const seen = [];
  const counts = await work(new Flaky(c.url, { token: c.token }), q, (job) => { seen.push(job.id); }, { waitMs: 1000, maxJobs: 1 });
  assert.deepEqual([failures, seen, counts.acked], [1, [id], 1]);
  // A 4xx is not passing: it ends the worker.
  const e = await apiError(work(c, q, () => undefined, { name: "\u0000", waitMs: 0 }));
  assert.equal(e.status, 400);
});

test("worker: aborting the signal ends an idle worker at once", T, async () => {
  const controller = new AbortController();
  const running = work(c, name("idle"), () => undefined, { waitMs: 5000, signal: controller.signal });
  await sleep(200);
  const t0 = Date.now();
  controller.abort();
  assert.deepEqual(await within(running, 2000, "worker"), { acked: 0, retried: 0, failed: 0, lost: 0 });
  assert.ok(Date.now() - t0 < 1000, "the waiting claim was not cut short");
});
