// Peer benchmark: pg-boss and graphile-worker on PostgreSQL.
//
// Scenarios per peer (each peer gets its own freshly created database,
// alk_peer_pgboss / alk_peer_graphile, dropped again at the end):
//   insert_50k:   enqueue N small jobs ({"n": i}) through the peer's bulk API.
//   work_50k:     with those N jobs waiting, start the peer's worker(s) with a
//                 no-op handler and time until all N completions are persisted.
//   wake_latency: on another fresh database, start the peer's worker idle with
//                 its low-latency settings, then enqueue BENCH_SAMPLES jobs one
//                 at a time and measure how long until the handler starts,
//                 from the enqueue call and from its commit (see wakeSamples).
// N is BENCH_JOBS (default 50000); the scenario names stay fixed, as in
// alkstore's `alk bench queue --scale`, and jobs= carries the real count.
//
// stdout carries only machine-readable lines:
//   # <comment>            (versions)
//   bench peer=<p> scenario=<s> jobs=<n> secs=<s> jobs_per_s=<r>
//   bench peer=<p> scenario=wake_latency samples=<n> p50_ms_from_commit=<x>
//         p99_ms_from_commit=<x> p50_ms_from_call=<x> p99_ms_from_call=<x>   (one line)
// Everything else (progress, library logs) goes to stderr.
//
// Env:
//   DATABASE_URL   admin URL (default postgres://postgres@127.0.0.1:5432/postgres)
//   BENCH_JOBS     job count (default 50000)
//   BENCH_PEERS    comma list, subset of "pg-boss,graphile-worker" (default both)
//   BENCH_SCENARIOS comma list, subset of "insert_50k,work_50k,wake_latency"
//                  (default all). work_50k alone still runs the (unreported)
//                  insert it needs.
//   BENCH_SAMPLES  wake_latency samples (default 500)
//   BENCH_ROUNDS   rounds per peer for insert_50k/work_50k, each on a fresh
//                  database; the fastest is reported per scenario (default 1).
//                  wake_latency always runs once.
//   BENCH_KEEP_DB  set to 1 to keep the peer databases after the run
//   BENCH_ANALYZE  set to 0 to skip the untimed ANALYZE between insert and work

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';

// Library code may log with console.log; keep stdout clean for the parser.
const writeOut = (line) => process.stdout.write(line + '\n');
console.log = console.error;
console.info = console.error;
console.debug = console.error;
const log = (...a) => console.error('[bench]', ...a);

const DATABASE_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const JOBS = parseInt(process.env.BENCH_JOBS || '50000', 10);
if (!Number.isInteger(JOBS) || JOBS < 1) throw new Error(`bad BENCH_JOBS: ${process.env.BENCH_JOBS}`);
const PEERS = (process.env.BENCH_PEERS || 'pg-boss,graphile-worker').split(',').map((s) => s.trim()).filter(Boolean);
const KEEP_DB = process.env.BENCH_KEEP_DB === '1';
const KNOWN_SCENARIOS = ['insert_50k', 'work_50k', 'wake_latency'];
const SCENARIOS = (process.env.BENCH_SCENARIOS || KNOWN_SCENARIOS.join(',')).split(',').map((s) => s.trim()).filter(Boolean);
for (const s of SCENARIOS) if (!KNOWN_SCENARIOS.includes(s)) throw new Error(`unknown scenario ${s} (known: ${KNOWN_SCENARIOS.join(', ')})`);
const THROUGHPUT = SCENARIOS.includes('insert_50k') || SCENARIOS.includes('work_50k');
const WAKE = SCENARIOS.includes('wake_latency');
const SAMPLES = parseInt(process.env.BENCH_SAMPLES || '500', 10);
if (!Number.isInteger(SAMPLES) || SAMPLES < 1) throw new Error(`bad BENCH_SAMPLES: ${process.env.BENCH_SAMPLES}`);
const WAKE_GAP_MS = 3; // pause between wake_latency samples, so the worker is idle again
const WAKE_TIMEOUT_MS = 10_000; // per sample; both peers' polling backstops are far shorter
const ROUNDS = parseInt(process.env.BENCH_ROUNDS || '1', 10);
if (!Number.isInteger(ROUNDS) || ROUNDS < 1) throw new Error(`bad BENCH_ROUNDS: ${process.env.BENCH_ROUNDS}`);
// ANALYZE the peer's database between the insert and the work scenario (not
// timed). Without planner statistics on the freshly filled job table both
// peers' fetch queries can get a seq-scan + sort plan that costs O(backlog)
// per fetch; a long-running queue has stats from autovacuum, so we model that
// steady state. BENCH_ANALYZE=0 turns it off.
const ANALYZE = process.env.BENCH_ANALYZE !== '0';
const WORK_TIMEOUT_MS = 30 * 60 * 1000;

const require = createRequire(import.meta.url);
function pkgVersion(name) {
  // Read package.json directly: "exports" maps may not expose it.
  const path = require.resolve(name).replace(/(node_modules\/(?:@[^/]+\/)?[^/]+)\/.*$/, '$1/package.json');
  return JSON.parse(readFileSync(path, 'utf8')).version;
}

function report(peer, scenario, jobs, secs) {
  const rate = Math.round(jobs / secs);
  writeOut(`bench peer=${peer} scenario=${scenario}_50k jobs=${jobs} secs=${secs.toFixed(3)} jobs_per_s=${rate}`);
}

function dbUrl(name) {
  const u = new URL(DATABASE_URL);
  u.pathname = '/' + name;
  return u.toString();
}

async function withAdmin(fn) {
  const c = new pg.Client({ connectionString: DATABASE_URL });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

async function recreateDb(name) {
  await withAdmin(async (c) => {
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await c.query(`CREATE DATABASE ${name}`);
  });
}

async function dropDb(name) {
  if (KEEP_DB) return;
  await withAdmin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
}

// Polls `fn` until it returns true.
async function waitFor(desc, fn, deadline, intervalMs = 10) {
  for (;;) {
    if (await fn()) return;
    if (performance.now() > deadline) throw new Error(`timeout waiting for ${desc}`);
    await sleep(intervalMs);
  }
}

function progressTicker(peer, getDone) {
  const t0 = performance.now();
  const h = setInterval(() => {
    log(`${peer} work: ${getDone()}/${JOBS} handled after ${((performance.now() - t0) / 1000).toFixed(1)}s`);
  }, 2000);
  h.unref();
  return () => clearInterval(h);
}

// wake_latency: the handler calls probe.hit(i, process.hrtime.bigint()) as its
// first statement; the sampler waits on probe.expect(i) for sample i.
function makeWakeProbe() {
  const waiting = new Map(); // i -> { resolve, timer }
  return {
    unexpected: 0,
    expect(i) {
      const p = new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiting.delete(i);
          reject(new Error(`wake_latency: handler not started for sample ${i} within ${WAKE_TIMEOUT_MS} ms`));
        }, WAKE_TIMEOUT_MS);
        waiting.set(i, { resolve, timer });
      });
      p.catch(() => {}); // awaited later; don't let an early rejection go unhandled
      return p;
    },
    hit(i, ts) {
      const w = waiting.get(i);
      if (!w) {
        this.unexpected++;
        return;
      }
      waiting.delete(i);
      clearTimeout(w.timer);
      w.resolve(ts);
    },
  };
}

const nsToMs = (ns) => Number(ns) / 1e6;
const percentile = (sorted, p) => sorted[Math.round((sorted.length - 1) * p)];

// One sample at a time, with the peer's worker idle: t0 = hrtime before the
// enqueue call, t1 = hrtime after its promise resolves (the insert has
// committed), ts = hrtime at handler start. from_call = ts - t0, from_commit =
// max(0, ts - t1) (the handler can start before the enqueue promise's
// continuation runs: the NOTIFY and the insert's reply arrive on different
// connections). Then a WAKE_GAP_MS pause. Nothing is discarded (no warm-up).
async function wakeSamples(peer, enqueue, probe) {
  const fromCall = [];
  const fromCommit = [];
  let beforeResolve = 0;
  for (let i = 0; i < SAMPLES; i++) {
    const seen = probe.expect(i);
    const t0 = process.hrtime.bigint();
    await enqueue(i);
    const t1 = process.hrtime.bigint();
    const ts = await seen;
    fromCall.push(nsToMs(ts - t0));
    if (ts < t1) beforeResolve++;
    fromCommit.push(ts > t1 ? nsToMs(ts - t1) : 0);
    if ((i + 1) % 100 === 0) log(`${peer} wake_latency: ${i + 1}/${SAMPLES} samples`);
    await sleep(WAKE_GAP_MS);
  }
  if (probe.unexpected) log(`${peer} wake_latency: ${probe.unexpected} unexpected handler calls`);
  const call = [...fromCall].sort((a, b) => a - b);
  const commit = [...fromCommit].sort((a, b) => a - b);
  log(
    `${peer} wake_latency: from call min ${call[0].toFixed(3)} max ${call[call.length - 1].toFixed(3)} ms; ` +
      `handler started before the enqueue promise resolved in ${beforeResolve}/${SAMPLES} samples`,
  );
  return {
    samples: SAMPLES,
    p50Commit: percentile(commit, 0.5),
    p99Commit: percentile(commit, 0.99),
    p50Call: percentile(call, 0.5),
    p99Call: percentile(call, 0.99),
  };
}

function reportWake(peer, r) {
  writeOut(
    `bench peer=${peer} scenario=wake_latency samples=${r.samples}` +
      ` p50_ms_from_commit=${r.p50Commit.toFixed(3)} p99_ms_from_commit=${r.p99Commit.toFixed(3)}` +
      ` p50_ms_from_call=${r.p50Call.toFixed(3)} p99_ms_from_call=${r.p99Call.toFixed(3)}`,
  );
}

// ---------------------------------------------------------------------------
// pg-boss
// ---------------------------------------------------------------------------
// Settings (pg-boss 12.x docs / dist/types.d.ts):
//  * insert(): the raw bulk path (one json_to_recordset INSERT per call). We send
//    chunks of PGBOSS_INSERT_CHUNK (1000) jobs with PGBOSS_INSERT_PAR (2) calls
//    in flight, the same shape as alkstore's insert_50k (1000 per statement, 2
//    producers). Measured on 2 cores: 1000x2 ~ 5000x2 > 1000x4 > one 50k call.
//  * work(): batchSize 500 jobs per fetch, localConcurrency 4 independent
//    workers, burstWhenBatchFull (fetch again at once while batches come back
//    full), the minimum pollingIntervalSeconds (0.5). A batch handler's jobs are
//    completed with one statement after it resolves. batchSize 250..1000 with
//    2..8 workers all measured within noise (~15-18k/s) here.
//  * schedule: false (no cron in this benchmark); other maintenance defaults.
const PGBOSS = {
  insertChunk: parseInt(process.env.PGBOSS_INSERT_CHUNK || '1000', 10),
  insertPar: parseInt(process.env.PGBOSS_INSERT_PAR || '2', 10),
  batchSize: parseInt(process.env.PGBOSS_BATCH || '500', 10),
  localConcurrency: parseInt(process.env.PGBOSS_CONCURRENCY || '4', 10),
};

async function benchPgBoss() {
  const { PgBoss } = await import('pg-boss');
  const dbName = 'alk_peer_pgboss';
  await recreateDb(dbName);
  const url = dbUrl(dbName);
  const queue = 'bench';
  log('pg-boss settings', JSON.stringify(PGBOSS));

  const boss = new PgBoss({
    connectionString: url,
    max: PGBOSS.localConcurrency + PGBOSS.insertPar + 4,
    schedule: false, // no cron in this benchmark
  });
  boss.on('error', (e) => log('pg-boss error:', e?.message || e));
  boss.on('warning', (w) => log('pg-boss warning:', w?.message || JSON.stringify(w)));
  await boss.start();
  await boss.createQueue(queue);

  const check = new pg.Client({ connectionString: url });
  await check.connect();
  const countState = async (state) =>
    Number((await check.query(`SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND state = $2`, [queue, state])).rows[0].n);

  const result = {};
  try {
    // insert
    const jobs = Array.from({ length: JOBS }, (_, i) => ({ data: { n: i } }));
    const chunks = [];
    for (let i = 0; i < jobs.length; i += PGBOSS.insertChunk) chunks.push(jobs.slice(i, i + PGBOSS.insertChunk));
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: Math.min(PGBOSS.insertPar, chunks.length) }, async () => {
        while (next < chunks.length) {
          const chunk = chunks[next++];
          await boss.insert(queue, chunk);
        }
      }),
    );
    const insertSecs = (performance.now() - t0) / 1000;
    const created = await countState('created');
    if (created !== JOBS) throw new Error(`pg-boss: expected ${JOBS} created jobs, found ${created}`);
    result.insert = insertSecs;
    log(`pg-boss insert: ${JOBS} jobs in ${insertSecs.toFixed(3)}s`);
    if (ANALYZE) await check.query('ANALYZE');

    // work
    let handled = 0;
    const stopTicker = progressTicker('pg-boss', () => handled);
    const t1 = performance.now();
    const deadline = t1 + WORK_TIMEOUT_MS;
    await boss.work(
      queue,
      {
        batchSize: PGBOSS.batchSize,
        localConcurrency: PGBOSS.localConcurrency,
        pollingIntervalSeconds: 0.5,
        burstWhenBatchFull: true,
      },
      async (batch) => {
        if (handled === 0) log(`pg-boss work: first batch after ${((performance.now() - t1) / 1000).toFixed(3)}s`);
        handled += batch.length; // no-op handler
      },
    );
    await waitFor('pg-boss handler calls', () => handled >= JOBS, deadline, 5);
    log(`pg-boss work: all handler calls done after ${((performance.now() - t1) / 1000).toFixed(3)}s`);
    // Completion is written after each batch handler resolves; wait until persisted.
    await waitFor('pg-boss completions', async () => (await countState('completed')) >= JOBS, deadline, 5);
    const workSecs = (performance.now() - t1) / 1000;
    stopTicker();
    if (handled !== JOBS) log(`pg-boss: handler saw ${handled} jobs (expected ${JOBS})`);
    result.work = workSecs;
    log(`pg-boss work: ${JOBS} jobs in ${workSecs.toFixed(3)}s`);
    await boss.offWork(queue);
    return result;
  } finally {
    await check.end();
    await boss.stop({ graceful: true, timeout: 10000 }).catch((e) => log('pg-boss stop:', e?.message));
    await dropDb(dbName);
  }
}

// wake_latency for pg-boss, with its low-latency settings (pg-boss 12.x
// dist/types.d.ts): useListenNotify on the instance plus notify: true on the
// queue, so send() commits a pg_notify with the insert and the listener wakes
// the idle worker at once (it aborts the worker's poll delay); polling stays
// as a backstop at the minimum 0.5 s for both pollingIntervalSeconds and
// notifyPollingIntervalSeconds. One worker (localConcurrency 1), batchSize 1.
// pg-boss has no "fetch on insert" beyond this NOTIFY wake-up.
async function wakePgBoss() {
  const { PgBoss } = await import('pg-boss');
  const dbName = 'alk_peer_pgboss';
  await recreateDb(dbName);
  const queue = 'wake';
  let listenFailed = null;
  const boss = new PgBoss({
    connectionString: dbUrl(dbName),
    max: 4,
    schedule: false, // no cron in this benchmark
    useListenNotify: true,
  });
  boss.on('error', (e) => log('pg-boss error:', e?.message || e));
  boss.on('warning', (w) => {
    log('pg-boss warning:', w?.message || JSON.stringify(w));
    if (w?.data?.type === 'listen_notify_unavailable') listenFailed = w.message;
  });
  try {
    await boss.start();
    await boss.createQueue(queue, { notify: true });
    if (listenFailed) throw new Error(`pg-boss LISTEN/NOTIFY unavailable: ${listenFailed}`);
    const probe = makeWakeProbe();
    await boss.work(
      queue,
      { batchSize: 1, localConcurrency: 1, pollingIntervalSeconds: 0.5, notifyPollingIntervalSeconds: 0.5 },
      async (jobs) => {
        const ts = process.hrtime.bigint();
        for (const job of jobs) probe.hit(job.data.i, ts);
      },
    );
    await sleep(1000); // worker's first (empty) fetch done; idle
    if (listenFailed) throw new Error(`pg-boss LISTEN/NOTIFY unavailable: ${listenFailed}`);
    const res = await wakeSamples('pg-boss', (i) => boss.send(queue, { i }), probe);
    await boss.offWork(queue);
    return res;
  } finally {
    await boss.stop({ graceful: true, timeout: 10000 }).catch((e) => log('pg-boss stop:', e?.message));
    await dropDb(dbName);
  }
}

// ---------------------------------------------------------------------------
// graphile-worker
// ---------------------------------------------------------------------------
// Settings: graphile-worker's documented performance-test configuration
// (worker.graphile.org/docs/performance): concurrentJobs 24, maxPoolSize 25,
// completeJobBatchDelay 0, failJobBatchDelay 0, plus useNodeTime; localQueue
// size raised from the documented 500 to 1000 (the docs say a much higher
// number may suit very fast tasks; measured here 500 -> ~23k/s, 1000 or
// 2000 -> ~29k/s). Jobs are inserted with workerUtils.addJobs() (the
// add_jobs() bulk SQL function) in chunks of GW_INSERT_CHUNK (1000) with
// GW_INSERT_PAR (2) calls in flight, like alkstore's insert_50k.
const GW = {
  insertChunk: parseInt(process.env.GW_INSERT_CHUNK || '1000', 10),
  insertPar: parseInt(process.env.GW_INSERT_PAR || '2', 10),
  concurrentJobs: parseInt(process.env.GW_CONCURRENCY || '24', 10),
  localQueueSize: parseInt(process.env.GW_LOCAL_QUEUE || '1000', 10),
  completeJobBatchDelay: parseInt(process.env.GW_COMPLETE_DELAY || '0', 10),
};

async function benchGraphile() {
  const { run, makeWorkerUtils, Logger } = await import('graphile-worker');
  const dbName = 'alk_peer_graphile';
  await recreateDb(dbName);
  const url = dbUrl(dbName);
  log('graphile-worker settings', JSON.stringify(GW));

  // Send warnings/errors to stderr; drop info/debug chatter.
  const logger = new Logger((scope) => (level, message) => {
    if (level === 'error' || level === 'warning') console.error(`[graphile-worker ${level}]`, message);
  });
  const preset = {
    worker: {
      maxPoolSize: Math.max(GW.concurrentJobs + 1, 10),
      concurrentJobs: GW.concurrentJobs,
      pollInterval: 2000, // only matters for future/retried jobs; ready jobs use LISTEN/NOTIFY + localQueue refetch
      useNodeTime: true,
      localQueue: { size: GW.localQueueSize },
      completeJobBatchDelay: GW.completeJobBatchDelay,
      failJobBatchDelay: GW.completeJobBatchDelay,
      fileExtensions: ['.js', '.cjs', '.mjs'],
    },
  };

  // Own the pools so they are fully closed (awaited) before the database is dropped;
  // graphile-worker does not await pool.end() for pools it creates itself.
  const workerPool = new pg.Pool({ connectionString: url, max: preset.worker.maxPoolSize });
  const utilsPool = new pg.Pool({ connectionString: url, max: GW.insertPar + 2 });
  for (const p of [workerPool, utilsPool]) {
    p.on('error', (e) => log('graphile-worker pool error:', e?.message));
    p.on('connect', (c) => c.on('error', (e) => log('graphile-worker client error:', e?.message)));
  }
  const utils = await makeWorkerUtils({
    logger,
    pgPool: utilsPool,
    preset: { worker: { maxPoolSize: GW.insertPar + 2, useNodeTime: true } },
  });
  await utils.migrate();
  const check = new pg.Client({ connectionString: url });
  await check.connect();
  const countJobs = async () => Number((await check.query(`SELECT count(*)::int AS n FROM graphile_worker._private_jobs`)).rows[0].n);

  let runner;
  const result = {};
  try {
    // insert
    const specs = Array.from({ length: JOBS }, (_, i) => ({ identifier: 'noop', payload: { n: i } }));
    const chunks = [];
    for (let i = 0; i < specs.length; i += GW.insertChunk) chunks.push(specs.slice(i, i + GW.insertChunk));
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: Math.min(GW.insertPar, chunks.length) }, async () => {
        while (next < chunks.length) {
          const chunk = chunks[next++];
          await utils.addJobs(chunk);
        }
      }),
    );
    const insertSecs = (performance.now() - t0) / 1000;
    const queued = await countJobs();
    if (queued !== JOBS) throw new Error(`graphile-worker: expected ${JOBS} queued jobs, found ${queued}`);
    result.insert = insertSecs;
    log(`graphile-worker insert: ${JOBS} jobs in ${insertSecs.toFixed(3)}s`);
    if (ANALYZE) await check.query('ANALYZE');

    // work
    let handled = 0;
    const stopTicker = progressTicker('graphile-worker', () => handled);
    const t1 = performance.now();
    const deadline = t1 + WORK_TIMEOUT_MS;
    runner = await run({
      preset,
      pgPool: workerPool,
      logger,
      noHandleSignals: true,
      parsedCronItems: [],
      taskList: {
        noop: async () => {
          if (handled++ === 0) log(`graphile-worker work: first job after ${((performance.now() - t1) / 1000).toFixed(3)}s`);
        },
      },
    });
    await waitFor('graphile-worker handler calls', () => handled >= JOBS, deadline, 5);
    log(`graphile-worker work: all handler calls done after ${((performance.now() - t1) / 1000).toFixed(3)}s`);
    // Completed jobs are deleted (completeJobBatchDelay batches the deletes); wait until persisted.
    await waitFor('graphile-worker completions', async () => (await countJobs()) === 0, deadline, 5);
    const workSecs = (performance.now() - t1) / 1000;
    stopTicker();
    if (handled !== JOBS) log(`graphile-worker: handler saw ${handled} jobs (expected ${JOBS})`);
    result.work = workSecs;
    log(`graphile-worker work: ${JOBS} jobs in ${workSecs.toFixed(3)}s`);
    return result;
  } finally {
    if (runner) await runner.stop().catch((e) => log('graphile-worker stop:', e?.message));
    await utils.release().catch((e) => log('graphile-worker utils release:', e?.message));
    await check.end();
    await workerPool.end();
    await utilsPool.end();
    await dropDb(dbName);
  }
}

// wake_latency for graphile-worker: its defaults are its low-latency setup.
// add_job() commits a NOTIFY "jobs:insert" with the insert, and the runner's
// LISTEN connection nudges an idle worker to fetch at once. No localQueue (its
// docs: it "trades latency for throughput"), concurrentJobs 1, pollInterval
// left at 2000 ms (only a backstop here), completion not batched (default).
// Jobs are added with workerUtils.addJob() on its own pool.
async function wakeGraphile() {
  const { run, makeWorkerUtils, Logger } = await import('graphile-worker');
  const { EventEmitter } = await import('node:events');
  const dbName = 'alk_peer_graphile';
  await recreateDb(dbName);
  const url = dbUrl(dbName);
  const logger = new Logger((scope) => (level, message) => {
    if (level === 'error' || level === 'warning') console.error(`[graphile-worker ${level}]`, message);
  });
  const workerPool = new pg.Pool({ connectionString: url, max: 10 });
  const utilsPool = new pg.Pool({ connectionString: url, max: 2 });
  for (const p of [workerPool, utilsPool]) {
    p.on('error', (e) => log('graphile-worker pool error:', e?.message));
    p.on('connect', (c) => c.on('error', (e) => log('graphile-worker client error:', e?.message)));
  }
  let utils;
  let runner;
  try {
    utils = await makeWorkerUtils({ logger, pgPool: utilsPool });
    await utils.migrate();
    const probe = makeWakeProbe();
    const events = new EventEmitter();
    const listening = new Promise((resolve) => events.once('pool:listen:success', resolve));
    runner = await run({
      preset: { worker: { concurrentJobs: 1, maxPoolSize: 10 } },
      pgPool: workerPool,
      logger,
      events,
      noHandleSignals: true,
      parsedCronItems: [],
      taskList: {
        wake: async (payload) => {
          const ts = process.hrtime.bigint();
          probe.hit(payload.i, ts);
        },
      },
    });
    let listenTimer;
    await Promise.race([
      listening,
      new Promise((_, reject) => {
        listenTimer = setTimeout(() => reject(new Error('graphile-worker: LISTEN not established within 10 s')), 10_000);
      }),
    ]).finally(() => clearTimeout(listenTimer));
    await sleep(1000); // worker's first (empty) fetch done; idle
    return await wakeSamples('graphile-worker', (i) => utils.addJob('wake', { i }), probe);
  } finally {
    if (runner) await runner.stop().catch((e) => log('graphile-worker stop:', e?.message));
    if (utils) await utils.release().catch((e) => log('graphile-worker utils release:', e?.message));
    await workerPool.end();
    await utilsPool.end();
    await dropDb(dbName);
  }
}

// ---------------------------------------------------------------------------

const PEER_FNS = { 'pg-boss': benchPgBoss, 'graphile-worker': benchGraphile };
const WAKE_FNS = { 'pg-boss': wakePgBoss, 'graphile-worker': wakeGraphile };
for (const p of PEERS) if (!PEER_FNS[p]) throw new Error(`unknown peer ${p} (known: ${Object.keys(PEER_FNS).join(', ')})`);

writeOut(`# node ${process.version}`);
writeOut(`# pg-boss ${pkgVersion('pg-boss')}`);
writeOut(`# graphile-worker ${pkgVersion('graphile-worker')}`);
await withAdmin(async (c) => writeOut(`# postgres ${(await c.query('SHOW server_version')).rows[0].server_version}`));
log(`jobs=${JOBS} samples=${SAMPLES} peers=${PEERS.join(',')} scenarios=${SCENARIOS.join(',')} db=${DATABASE_URL}`);

// Throughput figures on a small machine are only comparable when nothing else
// is running: warn (stderr) if the CPUs were busy just before a peer starts.
async function warnIfBusy() {
  const read = () => {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    return { total: f.reduce((a, b) => a + b, 0), idle: f[3] + (f[4] || 0) };
  };
  try {
    const a = read();
    await sleep(1000);
    const b = read();
    const idle = (100 * (b.idle - a.idle)) / Math.max(1, b.total - a.total);
    if (idle < 85) log(`WARNING: CPUs only ${idle.toFixed(0)}% idle before this peer; figures will be low and noisy`);
  } catch {
    // no /proc/stat: skip the check
  }
}

let failed = false;
for (const p of PEERS) {
  await warnIfBusy();
  if (THROUGHPUT) {
    // Each round uses a fresh database; the fastest round per scenario is reported.
    const best = {};
    try {
      for (let r = 1; r <= ROUNDS; r++) {
        if (ROUNDS > 1) log(`${p}: round ${r}/${ROUNDS}`);
        const res = await PEER_FNS[p]();
        for (const [k, v] of Object.entries(res)) best[k] = Math.min(best[k] ?? Infinity, v);
      }
    } catch (e) {
      failed = true;
      log(`${p} FAILED:`, e?.stack || e);
    }
    for (const k of ['insert', 'work']) if (best[k] !== undefined && SCENARIOS.includes(`${k}_50k`)) report(p, k, JOBS, best[k]);
  }
  if (WAKE) {
    if (THROUGHPUT) await warnIfBusy();
    try {
      reportWake(p, await WAKE_FNS[p]());
    } catch (e) {
      failed = true;
      log(`${p} wake_latency FAILED:`, e?.stack || e);
    }
  }
}
process.exit(failed ? 1 : 0);
