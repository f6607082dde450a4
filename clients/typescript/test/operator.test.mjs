// The operator endpoints over the live server: the store, the registered
// processes (a real `alk worker`, quieted and stopped), jobs by state with
// bulk actions, schedule fires, group handoffs, throughput and depth.
//
// The process and depth-sample tests run the `alk` binary named by ALK_BIN
// against ALK_DB, the store URL the server serves (scripts/client-checks
// sets both); without them those tests are skipped.
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { test } from "node:test";
import { promisify } from "node:util";
import { T, apiError, client, eventually, name, sleep, within } from "./live.mjs";

const c = client();
const { ALK_BIN, ALK_DB } = process.env;
const needsAlk = ALK_BIN && ALK_DB ? false : "set ALK_BIN (the alk binary) and ALK_DB (the store URL the server serves) to run it";
const WEEK_S = 604_800;
const run = promisify(execFile);

/** `$ALK_BIN --db $ALK_DB ...args`: its stdout. */
async function alk(...args) {
  const { stdout } = await run(ALK_BIN, ["--db", ALK_DB, ...args], { timeout: 60_000 });
  return stdout;
}

test("store: the engine and version it serves", T, async () => {
  const info = await c.store_info();
  assert.ok(["sqlite", "postgres"].includes(info.engine), JSON.stringify(info));
  assert.match(info.version, /^\d+\.\d+\.\d+/);
  assert.ok(info.location.length > 0, JSON.stringify(info));
  if (info.engine === "sqlite") assert.equal(info.schema ?? null, null);
  else assert.ok(info.schema, JSON.stringify(info));
  if (ALK_DB) {
    // the store the server was started on
    const sqlite = ALK_DB.startsWith("sqlite:");
    assert.equal(info.engine, sqlite ? "sqlite" : "postgres", `${JSON.stringify(info)} ${ALK_DB}`);
    if (sqlite) assert.ok(info.location.endsWith(new URL(ALK_DB).pathname), `${JSON.stringify(info)} ${ALK_DB}`);
    else assert.equal(info.schema, new URL(ALK_DB).searchParams.get("schema"));
  }
  if (ALK_BIN) {
    const { stdout } = await run(ALK_BIN, ["--version"], { timeout: 30_000 });
    assert.deepEqual(stdout.trim().split(/\s+/), ["alk", info.version]);
  }
});

test("processes: an unknown id is 404", T, async () => {
  for (const call of [(id) => c.quiet_process(id), (id) => c.stop_process(id)]) {
    const e = await apiError(call(name("no such process")));
    assert.deepEqual([e.status, e.code, e.field], [404, "not_found", "id"]);
  }
  assert.ok(Array.isArray((await c.list_processes()).processes));
});

test("processes: a real worker is listed, quieted and stopped", { timeout: 90_000, skip: needsAlk }, async () => {
  const q = name("process");
  const child = spawn(ALK_BIN, ["--db", ALK_DB, "worker", "--queue", q, "--exec", "true", "--concurrency", "2"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  let exit = null;
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve((exit = { code, signal }))));
  try {
    /** This worker's row (null when not listed). */
    const mine = async () => {
      const rows = (await c.list_processes()).processes.filter((p) => p.roles.length === 1 && p.roles[0] === q);
      assert.ok(rows.length <= 1, JSON.stringify(rows));
      return rows[0] ?? null;
    };
    const listed = async () => {
      if (exit) throw new Error(`alk worker exited ${JSON.stringify(exit)}: ${output}`);
      return mine();
    };
    const row = await eventually(listed, 15_000, "the worker listed");
    const { version } = await c.store_info();
    assert.deepEqual([row.kind, row.roles, row.alive, row.order, row.pid], ["worker", [q], true, "run", child.pid]);
    assert.deepEqual([row.concurrency, row.version], [2, version]);
    assert.ok(row.id && row.host, JSON.stringify(row));
    assert.ok(row.started_at_ms <= row.heartbeat_at_ms, JSON.stringify(row));
    assert.equal(row.expires_at_ms - row.heartbeat_at_ms, 15_000);

    // It works the queue: a job runs `true` and is acked.
    const first = await c.enqueue(q, { payload: { n: 1 } });
    const totals = await eventually(async () => {
      const t = (await c.throughput({ queue: q, window_s: 600 })).totals;
      return t.length > 0 && t;
    }, 15_000, "the first job acked");
    assert.deepEqual(totals, [{ queue: q, completed: 1, failed: 0 }]);
    assert.equal((await apiError(c.get_job(first.id))).status, 404);

    // Quiet: the order shows at once; at its next heartbeat the worker
    // reads it, stays registered and alive, and claims nothing new.
    assert.deepEqual(await c.quiet_process(row.id), { done: true });
    const now = await mine();
    assert.deepEqual([now.id, now.order, now.alive], [row.id, "quiet", true]);
    const beat = await eventually(async () => {
      const p = await listed();
      return p && p.heartbeat_at_ms > now.heartbeat_at_ms && p;
    }, 15_000, "a heartbeat after the quiet order");
    assert.deepEqual([beat.order, beat.alive, beat.running], ["quiet", true, 0]);
    const second = await c.enqueue(q, { payload: { n: 2 } });
    const until = Date.now() + 1000;
    while (Date.now() < until) {
      const job = await c.get_job(second.id);
      assert.deepEqual([job.state, job.attempts], ["pending", 0], "a quiet worker claimed a job");
      await sleep(100);
    }
    assert.equal(exit, null, `a quiet worker exited before it was told to stop: ${output}`);

    // Stop: it exits at its next heartbeat, and its row goes with it.
    assert.deepEqual(await c.stop_process(row.id), { done: true });
    const after = await mine();
    assert.ok(after === null || after.order === "stop", JSON.stringify(after));
    const ended = await within(exited, 20_000, "the worker's exit after the stop order").catch((e) => {
      throw new Error(`${e.message}: ${output}`);
    });
    assert.deepEqual(ended, { code: 0, signal: null }, output);
    assert.match(output, /stopped/);
    assert.equal(await mine(), null);
    assert.ok(!(await c.list_processes()).processes.some((p) => p.id === row.id));
    assert.equal((await c.get_job(second.id)).state, "pending");
    const e = await apiError(c.stop_process(row.id));
    assert.deepEqual([e.status, e.code, e.field], [404, "not_found", "id"]);
  } finally {
    if (!exit) {
      child.kill("SIGKILL");
      await exited;
    }
  }
});

const ZERO = { pending: 0, scheduled: 0, retryable: 0, running: 0, expired: 0, dead: 0, cancelled: 0, completed: 0 };

test("jobs: counts per state, search by state and payload, bulk actions", T, async () => {
  const q = name("operator jobs");
  const customer = 1e12 + Math.floor(Math.random() * 9e12);
  // retryable: claimed, then retried with a long delay
  const retryable = (await c.enqueue(q, { payload: { kind: "retryable" }, max_attempts: 5 })).id;
  const { jobs } = await c.claim(q, { worker: "js-operator", limit: 5, wait_ms: 2000 });
  assert.deepEqual(jobs.map((j) => j.id), [retryable]);
  const answer = await c.retry(retryable, { worker: "js-operator", token: jobs[0].token, error: "later", delay_ms: 600_000 });
  assert.equal(answer.outcome, "scheduled");
  // scheduled: its first run an hour away
  const scheduled = (await c.enqueue(q, { payload: { kind: "scheduled" }, delay_ms: 3_600_000 })).id;
  // pending, with a customer to search for
  const pending = (await c.enqueue(q, { payload: { customer_id: customer } })).id;

  assert.deepEqual(await c.job_counts({ queue: q }), { ...ZERO, pending: 1, scheduled: 1, retryable: 1 });
  const everywhere = await c.job_counts();
  for (const [k, v] of Object.entries(await c.job_counts({ queue: q }))) assert.ok(everywhere[k] >= v, JSON.stringify(everywhere));

  const found = async (query) => (await c.search_jobs(query)).jobs.map((j) => [j.id, j.state]);
  assert.deepEqual(await found({ state: "retryable", queue: q }), [[retryable, "retryable"]]);
  assert.deepEqual(await found({ state: "scheduled", queue: q }), [[scheduled, "scheduled"]]);
  assert.deepEqual(await found({ state: "pending", queue: q }), [[pending, "pending"]]);
  assert.deepEqual(await found({ state: "running", queue: q }), []);
  assert.deepEqual(await found({ queue: q }), [[retryable, "retryable"], [scheduled, "scheduled"], [pending, "pending"]]);
  const where = `$.customer_id = ${customer}`;
  assert.deepEqual(await found({ queue: q, where }), [[pending, "pending"]]);
  const page = await c.search_jobs({ where }); // every queue
  assert.deepEqual(page.jobs.map((j) => [j.id, j.queue, j.payload]), [[pending, q, { customer_id: customer }]]);
  assert.deepEqual(await found({ queue: q, where: `$.customer_id = ${customer + 1}` }), []);
  assert.deepEqual(await found({ queue: q, state: "scheduled", where }), []);
  let e = await apiError(c.search_jobs({ where: "customer_id = 1" }));
  assert.deepEqual([e.status, e.code, e.field], [400, "invalid_input", "where"]);
  e = await apiError(c.search_jobs({ state: "sleeping" }));
  assert.deepEqual([e.status, e.field], [400, "state"]);

  // run_now: the scheduled and the retryable one (the pending one is due already).
  assert.deepEqual(await c.bulk_jobs({ action: "run_now", ids: [retryable, scheduled, pending] }), { changed: 2, requested: 0 });
  assert.deepEqual(await c.job_counts({ queue: q }), { ...ZERO, pending: 3 });
  assert.deepEqual(await found({ state: "pending", queue: q }), [[retryable, "pending"], [scheduled, "pending"], [pending, "pending"]]);
  // cancel two: dead letters as cancelled
  assert.deepEqual(await c.bulk_jobs({ action: "cancel", ids: [retryable, scheduled] }), { changed: 2, requested: 0 });
  assert.deepEqual(await c.job_counts({ queue: q }), { ...ZERO, pending: 1, dead: 2, cancelled: 2 });
  const cancelled = (await c.search_jobs({ state: "cancelled", queue: q })).jobs;
  assert.deepEqual(cancelled.map((j) => [j.id, j.state, j.dead_reason]), [[retryable, "dead", "cancelled"], [scheduled, "dead", "cancelled"]]);
  // cancelling them again changes nothing
  assert.equal((await c.bulk_jobs({ action: "cancel", ids: [retryable, scheduled] })).changed, 0);
  // delete all three: the pending job and both dead letters
  assert.deepEqual(await c.bulk_jobs({ action: "delete", ids: [retryable, scheduled, pending] }), { changed: 3, requested: 0 });
  assert.deepEqual(await c.job_counts({ queue: q }), ZERO);
  assert.deepEqual(await found({ queue: q }), []);
  assert.equal((await c.bulk_jobs({ action: "delete", ids: [pending] })).changed, 0);

  e = await apiError(c.bulk_jobs({ action: "explode", ids: [pending] }));
  assert.deepEqual([e.status, e.code, e.field], [400, "invalid_input", "action"]);
  assert.ok(e.detail.length > 0);
});

test("jobs: tags and meta are kept, shown and searched", T, async () => {
  const q = name("tagged");
  const vip = `vip-${Math.floor(Math.random() * 1e9)}`;
  const both = (await c.enqueue(q, { payload: 1, tags: ["billing", vip, "billing"], meta: { by: "js", n: 2 } })).id;
  const billing = (await c.enqueue(q, { payload: 2, tags: ["billing"] })).id;
  const plain = (await c.enqueue(q, { payload: 3 })).id;
  const batch = (await c.enqueue_batch(q, { jobs: [{ payload: 4, tags: [vip] }, { payload: 5, meta: { step: "b" } }] })).jobs.map((j) => j.id);

  const shown = await c.get_job(both);
  assert.deepEqual([shown.tags, shown.meta], [["billing", vip], { by: "js", n: 2 }]);
  const bare = await c.get_job(plain);
  assert.deepEqual([bare.tags, bare.meta], [[], {}]);
  assert.deepEqual((await c.get_job(batch[1])).meta, { step: "b" });

  const found = async (query) => (await c.search_jobs(query)).jobs.map((j) => j.id);
  assert.deepEqual(await found({ queue: q, tag: "billing" }), [both, billing]);
  assert.deepEqual(await found({ tag: vip }), [both, batch[0]]);
  assert.deepEqual(await found({ queue: q, tag: "bill" }), []);
  assert.deepEqual((await c.list_jobs(q, { tag: "billing" })).jobs.map((j) => j.id), [both, billing]);
  const { jobs } = await c.claim(q, { worker: "js-tags", limit: 1, wait_ms: 2000 });
  assert.deepEqual([jobs[0].id, jobs[0].tags, jobs[0].meta], [both, ["billing", vip], { by: "js", n: 2 }]);
  assert.deepEqual(await found({ state: "running", tag: vip }), [both]);
  await c.fail(both, { worker: "js-tags", token: jobs[0].token, error: "no" });
  assert.deepEqual(await found({ state: "dead", tag: vip }), [both]);
  assert.deepEqual((await c.dead_list(q, { tag: vip })).jobs.map((j) => j.id), [both]);

  const bad = name("bad tags");
  for (const [body, field] of [
    [{ tags: Array.from({ length: 21 }, (_, i) => `t${i}`) }, "tags"],
    [{ tags: [""] }, "tags"],
    [{ meta: [1, 2] }, "meta"],
    [{ meta: { blob: "x".repeat(9000) } }, "meta"],
  ]) {
    const e = await apiError(c.enqueue(bad, { payload: 0, ...body }));
    assert.deepEqual([e.status, e.code, e.field], [400, "invalid_input", field], JSON.stringify(body).slice(0, 80));
  }
  assert.deepEqual(await c.job_counts({ queue: bad }), ZERO);
  const e = await apiError(c.search_jobs({ tag: "" }));
  assert.deepEqual([e.status, e.field], [400, "tag"]);
});

test("jobs: a bulk action on every matching job, page by page", T, async () => {
  const q = name("bulk matching");
  const tag = `sweep-${Math.floor(Math.random() * 1e9)}`;
  await c.enqueue_batch(q, { jobs: [...Array.from({ length: 7 }, (_, i) => ({ payload: i, tags: [tag] })), ...[0, 1, 2].map((i) => ({ payload: i }))] });
  const matching = { queue: q, tag, limit: 3, after_id: 0 };
  const totals = { changed: 0, matched: 0 };
  let calls = 0;
  for (;;) {
    calls += 1;
    const r = await c.bulk_jobs({ action: "cancel", matching });
    totals.changed += r.changed;
    totals.matched += r.matched;
    if (r.next_after_id === undefined) break;
    matching.after_id = r.next_after_id;
  }
  assert.deepEqual(totals, { changed: 7, matched: 7 });
  assert.ok(calls >= 3, `${calls} calls`);
  assert.deepEqual(await c.job_counts({ queue: q }), { ...ZERO, pending: 3, dead: 7, cancelled: 7 });
  const r = await c.bulk_jobs({ action: "retry", matching: { state: "cancelled", tag } });
  assert.deepEqual([r.changed, r.matched], [7, 7]);
  assert.deepEqual(await c.job_counts({ queue: q }), { ...ZERO, pending: 10 });
  let e = await apiError(c.bulk_jobs({ action: "cancel", ids: [1], matching: { queue: q } }));
  assert.deepEqual([e.status, e.field], [400, "ids"]);
  e = await apiError(c.bulk_jobs({ action: "cancel", matching: { state: "asleep" } }));
  assert.deepEqual([e.status, e.field], [400, "matching.state"]);
});

test("schedules: a run now is listed as a manual fire", T, async () => {
  const sched = name("fired schedule");
  const q = name("fired queue");
  // A boundary once a year: only the manual runs fire during the test.
  await c.set_schedule(sched, { spec: "0 0 1 1 *", queue: q, payload: { report: "daily" }, priority: 4 });
  try {
    assert.deepEqual(await c.schedule_fires(sched), { fires: [] });
    const beforeMs = Date.now();
    const fire = await c.run_schedule(sched);
    assert.deepEqual([fire.schedule, fire.queue, fire.manual], [sched, q, true]);
    assert.ok(Number.isInteger(fire.job_id), JSON.stringify(fire));
    assert.ok(Math.abs(fire.fired_at_ms - beforeMs) < 60_000, JSON.stringify(fire));
    const job = await c.get_job(fire.job_id);
    assert.deepEqual([job.queue, job.payload, job.priority, job.state], [q, { report: "daily" }, 4, "pending"]);
    let { fires } = await c.schedule_fires(sched);
    assert.deepEqual(fires, [fire]);
    assert.equal(fires[0].manual, true);
    // A paused schedule still runs on demand; newest first. (Two runs
    // within one millisecond share a job: the second waits a tick.)
    await c.pause_schedule(sched);
    await eventually(() => Date.now() > fire.boundary_ms + 1, 5000, "a later millisecond");
    const again = await c.run_schedule(sched);
    assert.notEqual(again.job_id, fire.job_id);
    ({ fires } = await c.schedule_fires(sched));
    assert.deepEqual(fires.map((f) => [f.job_id, f.manual]), [[again.job_id, true], [fire.job_id, true]]);
    assert.deepEqual((await c.schedule_fires(sched, { limit: 1 })).fires, [again]);

    for (const call of [(n) => c.schedule_fires(n), (n) => c.run_schedule(n)]) {
      const e = await apiError(call(name("no such schedule")));
      assert.deepEqual([e.status, e.code, e.field], [404, "not_found", "name"]);
    }
  } finally {
    await c.remove_schedule(sched);
  }
});

test("groups: handoffs counted by cause", T, async () => {
  const g = name("handoff group");
  const s = name("handoff stream");
  const [a, b] = ["js member a", "js member b"];
  const joinedA = await c.join_group(g, { stream: s, buckets: 2, member: a, ttl_ms: 60_000 });
  assert.deepEqual(joinedA.leases.map((l) => l.bucket).sort(), [0, 1]);
  const joinedB = await c.join_group(g, { stream: s, member: b, ttl_ms: 60_000 });
  assert.deepEqual([joinedB.leases, joinedB.live_members], [[], 2]);
  // a gives back its surplus at its heartbeat; b takes it when it claims.
  const kept = (await c.member_heartbeat(g, a, { ttl_ms: 60_000 })).leases;
  const taken = (await c.member_claim(g, b, { ttl_ms: 60_000 })).leases;
  assert.equal(kept.length, 1);
  assert.equal(taken.length, 1);
  assert.deepEqual([kept[0].bucket, taken[0].bucket].sort(), [0, 1]);
  // a leaves; b takes its bucket at its next heartbeat.
  assert.deepEqual(await c.leave_group(g, a), { released: 1 });
  assert.deepEqual((await c.member_heartbeat(g, b, { ttl_ms: 60_000 })).leases.map((l) => l.bucket).sort(), [0, 1]);

  const view = await c.group_handoffs(g);
  assert.deepEqual(view.totals, { first: 2, rebalance: 1, leave: 1, lapse: 0 });
  const row = (h) => [h.cause, h.bucket, h.from_worker ?? null, h.to_worker, h.epoch];
  assert.deepEqual(view.handoffs.slice(0, 2).map(row), [
    ["leave", kept[0].bucket, a, b, 2],
    ["rebalance", taken[0].bucket, a, b, 2],
  ]);
  assert.deepEqual(view.handoffs.slice(2).map(row).sort((x, y) => x[1] - y[1]), [
    ["first", 0, null, a, 1],
    ["first", 1, null, a, 1],
  ]);
  const times = view.handoffs.map((h) => h.at_ms);
  assert.deepEqual(times, [...times].sort((x, y) => y - x));
  assert.equal((await c.group_handoffs(g, { limit: 1 })).handoffs.length, 1);

  const e = await apiError(c.group_handoffs(name("no such group")));
  assert.deepEqual([e.status, e.code], [404, "not_found"]);
});

test("history: throughput over a week", T, async () => {
  const q = name("throughput");
  const ids = (await c.enqueue_batch(q, { jobs: [0, 1, 2].map((i) => ({ payload: i })) })).jobs.map((j) => j.id);
  const claimed = new Map((await c.claim(q, { worker: "js-history", limit: 3, wait_ms: 2000 })).jobs.map((j) => [j.id, j]));
  assert.deepEqual([...claimed.keys()].sort((x, y) => x - y), [...ids].sort((x, y) => x - y));
  for (const id of ids.slice(0, 2)) await c.ack(id, { worker: "js-history", token: claimed.get(id).token });
  await c.fail(ids[2], { worker: "js-history", token: claimed.get(ids[2]).token, error: "no" });

  const view = await c.throughput({ window_s: WEEK_S });
  assert.equal(view.bucket_s, 10);
  assert.ok(Math.abs(view.now - Date.now() / 1000) <= 60, String(view.now));
  assert.ok(view.buckets.length > 0);
  for (const bucket of view.buckets) {
    assert.ok([10, 300].includes(bucket.span_s), JSON.stringify(bucket));
    assert.equal(bucket.start % bucket.span_s, 0, JSON.stringify(bucket));
    assert.ok(bucket.start >= view.now - WEEK_S - bucket.span_s, JSON.stringify(bucket));
  }
  assert.deepEqual(view.totals.filter((t) => t.queue === q), [{ queue: q, completed: 2, failed: 1 }]);
  const mine = view.buckets.filter((b) => b.queue === q);
  assert.deepEqual([mine.reduce((n, b) => n + b.completed, 0), mine.reduce((n, b) => n + b.failed, 0)], [2, 1]);
  assert.ok(mine.every((b) => b.span_s === 10), JSON.stringify(mine));
  const one = await c.throughput({ queue: q, window_s: WEEK_S });
  assert.deepEqual(one.totals, [{ queue: q, completed: 2, failed: 1 }]);
  assert.deepEqual(one.buckets, mine);
  const e = await apiError(c.throughput({ window_s: WEEK_S + 1 }));
  assert.deepEqual([e.status, e.field], [400, "window_s"]);
});

test("history: depth lists the queue's samples", T, async () => {
  const q = name("depth");
  await c.enqueue(q, { payload: "x" });
  const { samples } = await c.depth({ queue: q });
  assert.ok(Array.isArray(samples));
  assert.ok(samples.every((s) => s.queue === q), JSON.stringify(samples));
  const e = await apiError(c.depth({ window_s: 0 }));
  assert.deepEqual([e.status, e.field], [400, "window_s"]);
});

test("history: a sweep samples the queue's depth", { ...T, skip: needsAlk }, async () => {
  const q = name("depth swept");
  const dead = (await c.enqueue(q, { payload: "dead" })).id;
  let [job] = (await c.claim(q, { worker: "js-depth", limit: 1, wait_ms: 2000 })).jobs;
  await c.fail(dead, { worker: "js-depth", token: job.token, error: "no" });
  const running = (await c.enqueue(q, { payload: "running" })).id;
  [job] = (await c.claim(q, { worker: "js-depth", limit: 1, wait_ms: 2000 })).jobs;
  assert.equal(job.id, running);
  await c.enqueue_batch(q, { jobs: [{ payload: "ready 1" }, { payload: "ready 2" }, { payload: "later", delay_ms: 3_600_000 }] });
  const started = Math.floor(Date.now() / 1000) - 1;
  await alk("sweep");
  const { samples } = await c.depth({ queue: q, window_s: 3600 });
  assert.ok(samples.length > 0, "no depth sample after a sweep");
  assert.ok(samples.every((s) => s.queue === q), JSON.stringify(samples));
  const last = samples.at(-1);
  assert.deepEqual([last.ready, last.scheduled, last.processing, last.dead], [2, 1, 1, 1], JSON.stringify(samples));
  assert.ok(last.at >= started, JSON.stringify(last));
  assert.ok((await c.depth({ window_s: 3600 })).samples.some((s) => JSON.stringify(s) === JSON.stringify(last)));
});
