// Peer throughput benchmark: pg-boss and graphile-worker on PostgreSQL.
//
// Scenarios per peer (each peer gets its own freshly created database,
// alk_peer_pgboss / alk_peer_graphile, dropped again at the end):
//   insert_50k: enqueue N small jobs ({"n": i}) through the peer's bulk API.
//   work_50k:   with those N jobs waiting, start the peer's worker(s) with a
//               no-op handler and time until all N completions are persisted.
// N is BENCH_JOBS (default 50000); the scenario names stay fixed, as in
// alkstore's `alk bench queue --scale`, and jobs= carries the real count.
//
// stdout carries only machine-readable lines:
//   # <comment>            (versions)
//   bench peer=<p> scenario=<s> jobs=<n> secs=<s> jobs_per_s=<r>
// Everything else (progress, library logs) goes to stderr.
//
// Env:
//   DATABASE_URL   admin URL (default postgres://postgres@127.0.0.1:5432/postgres)
//   BENCH_JOBS     job count (default 50000)
//   BENCH_PEERS    comma list, subset of "pg-boss,graphile-worker" (default both)
//   BENCH_ROUNDS   rounds per peer, each on a fresh database; the fastest is
//                  reported per scenario (default 1)
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

// ---------------------------------------------------------------------------

const PEER_FNS = { 'pg-boss': benchPgBoss, 'graphile-worker': benchGraphile };
for (const p of PEERS) if (!PEER_FNS[p]) throw new Error(`unknown peer ${p} (known: ${Object.keys(PEER_FNS).join(', ')})`);

writeOut(`# node ${process.version}`);
writeOut(`# pg-boss ${pkgVersion('pg-boss')}`);
writeOut(`# graphile-worker ${pkgVersion('graphile-worker')}`);
await withAdmin(async (c) => writeOut(`# postgres ${(await c.query('SHOW server_version')).rows[0].server_version}`));
log(`jobs=${JOBS} peers=${PEERS.join(',')} db=${DATABASE_URL}`);

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
  for (const k of ['insert', 'work']) if (best[k] !== undefined) report(p, k, JOBS, best[k]);
}
process.exit(failed ? 1 : 0);
