// The dashboard of `alk serve` in headless Chromium, against a live server
// and real group-worker processes. Run by scripts/browser-test, which starts
// the server and passes:
//   ALK_URL    the server's base URL (http://127.0.0.1:PORT)
//   ALK_TOKEN  its --token
//   ALK_BIN    the alk binary (to start `alk test-group-worker` processes)
//   ALK_DB     the server's --db URL (the workers share it)
//   ALK_SCREENSHOT=1  also save docs/dashboard.png (1280x800) under load
//   ALK_REPO   the repository root (where docs/ is)
// Every wait is a bounded poll; any failure exits non-zero.

import { chromium } from 'playwright-core';
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const need = (name) => {
  const v = process.env[name];
  if (!v) {
    console.error(`browser test: set ${name} (scripts/browser-test does)`);
    process.exit(2);
  }
  return v;
};
const BASE = need('ALK_URL').replace(/\/$/, '');
const TOKEN = need('ALK_TOKEN');
const ALK = need('ALK_BIN');
const DB = need('ALK_DB');
const REPO = process.env.ALK_REPO || path.resolve(here, '..', '..');
const SCREENSHOT = process.env.ALK_SCREENSHOT === '1';
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const ARTIFACTS = path.join(here, 'artifacts');
const WAIT_MS = 30_000;

// ------------------------------------------------------------------ helpers

const children = new Set();
function killAll(signal = 'SIGKILL') {
  for (const c of children) {
    try { c.kill(signal); } catch { /* gone */ }
  }
}
process.on('exit', () => killAll());
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => { killAll(); process.exit(130); });
}

async function api(method, p, body) {
  const res = await fetch(BASE + p, {
    method,
    headers: {
      Authorization: `Bearer ${TOKEN}`,
      ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Poll `probe` (returning {ok, seen}) until ok, or fail after `ms` saying
// what was awaited and what was last seen.
async function waitFor(what, probe, ms = WAIT_MS) {
  const started = Date.now();
  let seen;
  for (;;) {
    try {
      const r = await probe();
      seen = r.seen;
      if (r.ok) return { seen, ms: Date.now() - started };
    } catch (e) {
      seen = `error: ${e.message.split('\n')[0]}`;
    }
    if (Date.now() - started > ms) {
      throw new Error(`timed out after ${ms / 1000} s waiting for ${what}; last seen: ${JSON.stringify(seen)}`);
    }
    await sleep(200);
  }
}

function assert(cond, message) {
  if (!cond) throw new Error(message);
}

const text = async (locator) => {
  if ((await locator.count()) === 0) return null;
  return (await locator.first().textContent({ timeout: 1000 }))?.trim() ?? null;
};

const sel = (testid, extra = '') => `[data-testid="${testid}"]${extra}`;

const withoutDatabaseUrl = { ...process.env };
delete withoutDatabaseUrl.DATABASE_URL;

function groupWorker(name, { group = 'dash', stream = 'orders', buckets = 8, extra = [] } = {}) {
  const child = spawn(ALK, [
    '--db', DB, 'test-group-worker',
    '--group', group, '--stream', stream,
    '--buckets', String(buckets), '--name', name,
    '--ttl-ms', '2000', '--heartbeat-ms', '300',
    ...extra,
  ], { stdio: ['ignore', 'ignore', 'pipe'], env: withoutDatabaseUrl });
  let err = '';
  child.stderr.on('data', (d) => { err = (err + d).slice(-2000); });
  child.on('exit', () => children.delete(child));
  child.stderrTail = () => err;
  children.add(child);
  return child;
}

// ------------------------------------------------------------------ browser

const profile = mkdtempSync(path.join(tmpdir(), 'alk-chromium-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: CHROMIUM,
  headless: true,
  args: [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
  ],
  viewport: { width: 1280, height: 800 },
  deviceScaleFactor: 1,
  colorScheme: 'light',
});
const page = context.pages()[0] || (await context.newPage());
const pageErrors = [];
const cspErrors = [];
page.on('pageerror', (e) => pageErrors.push(e.message));
page.on('console', (m) => {
  if (m.type() === 'error' && /Content Security Policy/i.test(m.text())) cspErrors.push(m.text());
});

const results = [];
async function step(name, fn) {
  const started = Date.now();
  try {
    await fn();
    results.push({ name, ok: true });
    console.log(`ok   ${name} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
  } catch (e) {
    results.push({ name, ok: false });
    console.log(`FAIL ${name}: ${e.message}`);
    try {
      mkdirSync(ARTIFACTS, { recursive: true });
      const shot = path.join(ARTIFACTS, `${name.replace(/[^a-z0-9]+/gi, '-')}.png`);
      await page.screenshot({ path: shot });
      console.log(`     screenshot of the page: ${shot}`);
    } catch { /* the browser may be gone */ }
  }
}

const goto = async (hash) => {
  await page.goto(`${BASE}/${hash}`);
  await page.waitForSelector(sel('status', '[data-state="ok"]'), { timeout: WAIT_MS });
};

// ------------------------------------------------------------------ steps

await step('login: /?token= sets the HttpOnly cookie and redirects to /', async () => {
  const anon = await fetch(`${BASE}/`, { redirect: 'manual' });
  assert(anon.status === 401, `GET / without a token: want 401, got ${anon.status}`);
  const wrong = await fetch(`${BASE}/?token=not-the-token`, { redirect: 'manual' });
  assert(wrong.status === 401, `GET /?token=wrong: want 401, got ${wrong.status}`);
  const api401 = await fetch(`${BASE}/api/v1/queues?token=${encodeURIComponent(TOKEN)}`);
  assert(api401.status === 401, `the API must not take ?token=: got ${api401.status}`);

  const res = await page.goto(`${BASE}/?token=${encodeURIComponent(TOKEN)}`);
  assert(res && res.status() === 200, `the page after login: status ${res && res.status()}`);
  assert(page.url() === `${BASE}/`, `redirected to / without the token, got ${page.url()}`);
  const cookie = (await context.cookies(BASE)).find((c) => c.name === 'alk_token');
  assert(cookie, 'cookie alk_token is set');
  assert(cookie.value === TOKEN, 'the cookie holds the token');
  assert(cookie.httpOnly, 'the cookie is HttpOnly');
  assert(cookie.sameSite === 'Strict', `the cookie is SameSite=Strict (got ${cookie.sameSite})`);
  assert(cookie.path === '/', 'the cookie has Path=/');
  await page.waitForSelector(sel('status', '[data-state="ok"]'), { timeout: WAIT_MS });
});

await step('queues: the ready count follows enqueues and claims', async () => {
  const jobs = (n, from) => ({ jobs: Array.from({ length: n }, (_, i) => ({ payload: { to: `user${from + i}@example.com` } })) });
  await api('POST', '/api/v1/queues/emails/jobs/batch', jobs(5, 0));
  await goto('#/queues');
  const row = page.locator(sel('queue-row', '[data-queue="emails"]'));
  const count = (c) => text(row.locator(sel(c)));
  await waitFor('emails ready = 5', async () => {
    const r = await count('count-ready');
    return { ok: r === '5', seen: r };
  });
  await api('POST', '/api/v1/queues/emails/jobs/batch', jobs(3, 5));
  await waitFor('emails ready = 8 after 3 more enqueues', async () => {
    const r = await count('count-ready');
    return { ok: r === '8', seen: r };
  });
  const claimed = await api('POST', '/api/v1/queues/emails/claim', { worker: 'browser-test', limit: 2 });
  assert(claimed.jobs.length === 2, `claimed 2, got ${claimed.jobs.length}`);
  await waitFor('emails ready = 6, processing = 2 after claiming 2', async () => {
    const seen = { ready: await count('count-ready'), processing: await count('count-processing') };
    return { ok: seen.ready === '6' && seen.processing === '2', seen };
  });
  for (const j of claimed.jobs) {
    await api('POST', `/api/v1/jobs/${j.id}/ack`, { worker: 'browser-test', token: j.token });
  }
  await waitFor('emails processing = 0 after the acks', async () => {
    const r = await count('count-processing');
    return { ok: r === '0', seen: r };
  });
  // The chart draws from the polled samples.
  assert((await page.locator(sel('chart')).count()) === 1, 'a chart on the queues view');
  // The acks came over HTTP, not from a worker of the serving process: the
  // store counted them, and the queue's page shows its all-time total.
  await goto('#/queues/emails');
  await waitFor('emails completed all time = 2 (acked over HTTP)', async () => {
    const r = await text(page.locator(sel('total-completed')).locator('.v'));
    return { ok: r === '2', seen: r };
  });
  const note = await text(page.locator(sel('rate-note')));
  assert(note.includes('every worker of every process'), `the rate note says who is counted: ${note}`);
  await goto('#/queues');
});

await step('queues: pause and resume from the page', async () => {
  const row = page.locator(sel('queue-row', '[data-queue="emails"]'));
  await row.locator(sel('queue-pause')).click();
  await waitFor('emails shown paused', async () => {
    const p = await row.getAttribute('data-paused', { timeout: 1000 });
    return { ok: p === 'true', seen: p };
  });
  const q = await api('GET', '/api/v1/queues/emails');
  assert(q.paused === true, 'the API says emails is paused');
  await row.locator(sel('queue-resume')).click();
  await waitFor('emails shown running', async () => {
    const p = await row.getAttribute('data-paused', { timeout: 1000 });
    return { ok: p === 'false', seen: p };
  });
  assert((await api('GET', '/api/v1/queues/emails')).paused === false, 'the API says emails runs');
});

await step('dead letters: a failed job is listed, shown in detail, and requeued from the page', async () => {
  const { id } = await api('POST', '/api/v1/queues/billing/jobs', { payload: { invoice: 42, amount: '19.99' } });
  const claimed = await api('POST', '/api/v1/queues/billing/claim', { worker: 'browser-test' });
  assert(claimed.jobs.length === 1 && claimed.jobs[0].id === id, 'claimed the billing job');
  const done = await api('POST', `/api/v1/jobs/${id}/fail`, { worker: 'browser-test', token: claimed.jobs[0].token, error: 'card declined' });
  assert(done.done, 'fail took effect');

  await goto('#/dead/billing');
  const row = page.locator(sel('dead-row', `[data-job-id="${id}"]`));
  await waitFor(`dead letter ${id} listed`, async () => {
    const n = await row.count();
    return { ok: n === 1, seen: `${n} rows` };
  });

  // Its detail, from the id link.
  await row.locator(`a[href="#/jobs/${id}"]`).click();
  await waitFor(`job ${id} detail: state dead, its error and payload`, async () => {
    const seen = {
      state: await page.locator(sel('job-state')).first().getAttribute('data-state', { timeout: 1000 }),
      error: await text(page.locator(sel('job-last-error'))),
      payload: await text(page.locator(sel('job-payload'))),
      attempts: await text(page.locator(sel('job-attempts'))),
    };
    const ok = seen.state === 'dead' && seen.error === 'card declined' &&
      /"invoice": 42/.test(seen.payload || '') && /^1 of /.test(seen.attempts || '');
    return { ok, seen };
  });
  assert((await page.locator(`${sel('job-errors')} td`).filter({ hasText: 'card declined' }).count()) === 1,
    'the errors list has the attempt\'s error');

  await goto('#/dead/billing');
  await waitFor(`dead letter ${id} listed again`, async () => ({ ok: (await row.count()) === 1, seen: await row.count() }));
  await row.locator(sel('dead-requeue')).click();
  await waitFor(`dead letter ${id} gone from the list`, async () => {
    const n = await row.count();
    return { ok: n === 0 && (await page.locator(sel('dead-empty')).count()) === 1, seen: `${n} rows` };
  });
  const q = await api('GET', '/api/v1/queues/billing');
  assert(q.dead === 0 && q.ready === 1, `billing after requeue: dead 0, ready 1; got dead ${q.dead}, ready ${q.ready}`);
});

// Accept the next window.confirm() (playwright dismisses dialogs unless told).
const acceptNextDialog = () => page.once('dialog', (d) => d.accept());

// The nav's dead-letter badge as a number (0 when hidden).
const badgeCount = async () => {
  const b = page.locator('#nav-dead-count');
  if (await b.isHidden()) return 0;
  return Number((await b.textContent()).replace(/,/g, ''));
};

await step('dead letters: a consumer group\'s are counted in the badge, listed, requeued and purged', async () => {
  // A worker whose handler fails every event keyed "poison": one run each,
  // then the group's dead letters.
  const poisoned = groupWorker('poisoned', { group: 'ledger-dash', stream: 'ledger', buckets: 2, extra: ['--fail-key', 'poison'] });
  const pub = await api('POST', '/api/v1/streams/ledger/events', { events: [
    { key: 'poison', payload: { entry: 1 } }, { key: 'fine', payload: { entry: 2 } }, { key: 'poison', payload: { entry: 3 } },
  ] });
  const deadOf = async () => ((await api('GET', '/api/v1/groups')).groups.find((g) => g.group === 'ledger-dash') || {}).dead;
  await waitFor('2 dead letters in group ledger-dash', async () => {
    const n = await deadOf();
    return { ok: n === 2, seen: n };
  });
  const queuesDead = (await api('GET', '/api/v1/queues')).queues.reduce((n, q) => n + q.dead, 0);
  await goto('#/dead');
  const row = page.locator(sel('dead-group-row', '[data-group="ledger-dash"]'));
  await waitFor('group ledger-dash listed with 2 dead letters, and the badge counts them', async () => {
    const seen = { count: await text(row.locator(sel('dead-group-count'))), badge: await badgeCount() };
    return { ok: seen.count === '2' && seen.badge === queuesDead + 2, seen };
  });
  await row.locator('a').click();
  const rows = page.locator(sel('group-dead-row'));
  await waitFor('both dead letters listed, lowest offset first', async () => {
    const offsets = await rows.evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-offset'))));
    return { ok: offsets.join() === [pub.offsets[0], pub.offsets[2]].join(), seen: offsets };
  });
  const first = page.locator(sel('group-dead-row', `[data-offset="${pub.offsets[0]}"]`));
  assert(/"entry":1/.test(await text(first.locator(sel('group-dead-payload')))), 'the payload is shown');
  // Requeue one: its bucket's holder runs it again (and it fails again).
  await page.locator(sel('group-dead-row', `[data-offset="${pub.offsets[2]}"]`)).locator(sel('group-dead-requeue')).click();
  await waitFor('the requeue reported', async () => {
    const t = await text(page.locator('#toast'));
    return { ok: t === 'Requeued 1 dead letter', seen: t };
  });
  // Purge one, then the rest.
  acceptNextDialog();
  await first.locator(sel('group-dead-purge')).click();
  await waitFor(`dead letter ${pub.offsets[0]} purged`, async () => {
    const n = await deadOf();
    return { ok: n === 1 && (await first.count()) === 0, seen: n };
  });
  await waitFor('the purge-all button enabled', async () => {
    const d = await page.locator(sel('group-dead-purge-all')).isDisabled();
    return { ok: !d, seen: d };
  });
  acceptNextDialog();
  await page.locator(sel('group-dead-purge-all')).click();
  await waitFor('no dead letters left in the group', async () => {
    const n = await deadOf();
    return { ok: n === 0 && (await page.locator(sel('group-dead-empty')).count()) === 1, seen: n };
  });
  await goto('#/dead');
  await waitFor('no group listed with dead letters', async () => {
    const n = await page.locator(sel('group-dead-none')).count();
    return { ok: n === 1, seen: n };
  });
  poisoned.kill('SIGTERM');
  const events = (await api('GET', '/api/v1/streams/ledger/events')).events.length;
  assert(events === 3, `the events stay in the stream: ${events}`);
});

await step('jobs: retryable and scheduled jobs say so; a dead one shows no claim', async () => {
  const q = 'states';
  const { id: later } = await api('POST', `/api/v1/queues/${q}/jobs`, { payload: { first: 'later' }, delay_ms: 3_600_000 });
  await api('POST', `/api/v1/queues/${q}/jobs/batch`, { jobs: [{ payload: { n: 1 } }, { payload: { n: 2 } }] });
  const claimed = await api('POST', `/api/v1/queues/${q}/claim`, { worker: 'browser-test', limit: 2 });
  assert(claimed.jobs.length === 2, `claimed 2, got ${claimed.jobs.length}`);
  const [again, dead] = claimed.jobs;
  await api('POST', `/api/v1/jobs/${again.id}/retry`, { worker: 'browser-test', token: again.token, error: 'try later', delay_ms: 3_600_000 });
  await api('POST', `/api/v1/jobs/${dead.id}/fail`, { worker: 'browser-test', token: dead.token, error: 'gone' });
  await goto(`#/queues/${q}`);
  const stateOf = (id) => page.locator(sel('job-row', `[data-job-id="${id}"]`)).locator(sel('job-state')).getAttribute('data-state', { timeout: 1000 });
  await waitFor('the delayed job shown scheduled, the retried one retryable', async () => {
    const seen = { scheduled: await stateOf(later), retryable: await stateOf(again.id) };
    return { ok: seen.scheduled === 'scheduled' && seen.retryable === 'retryable', seen };
  });
  // Where ids are listed, their header says why they jump (SQLite's id blocks).
  const idNote = await page.locator(sel('jobs-table')).locator('th').first().getAttribute('title', { timeout: 1000 });
  assert(idNote && idNote.includes('blocks of 1,024'), `the Id header explains id jumps: ${idNote}`);
  await goto(`#/jobs/${dead.id}`);
  await waitFor(`job ${dead.id} shown dead without a claim expiry`, async () => {
    const details = await text(page.locator(sel('job-details')));
    const state = await page.locator(sel('job-state')).first().getAttribute('data-state', { timeout: 1000 });
    return { ok: state === 'dead' && !!details && !details.includes('Claim expires'), seen: { state, details } };
  });
});

await step('jobs: an acked job\'s page explains that finished jobs are deleted', async () => {
  const { id } = await api('POST', '/api/v1/queues/quick/jobs', { payload: { n: 1 } });
  const c = await api('POST', '/api/v1/queues/quick/claim', { worker: 'browser-test' });
  assert(c.jobs.length === 1 && c.jobs[0].id === id, 'claimed the job');
  await api('POST', `/api/v1/jobs/${id}/ack`, { worker: 'browser-test', token: c.jobs[0].token });
  await page.goto(`${BASE}/#/jobs/${id}`);
  await waitFor(`job ${id}: the page says why it is gone`, async () => {
    const t = await text(page.locator(sel('view-error')));
    return { ok: !!t && t.includes('deleted when it is acked, unless its queue keeps completed jobs'), seen: t };
  });
});

await step('queues: a name with spaces and URL characters works throughout', async () => {
  const name = 'bad queue name!/?#%';
  const { id } = await api('POST', `/api/v1/queues/${encodeURIComponent(name)}/jobs`, { payload: { odd: true } });
  await goto('#/queues');
  const row = page.locator(sel('queue-row')).filter({ has: page.locator(`a[href="#/queues/${encodeURIComponent(name)}"]`) });
  await waitFor('the queue listed under its own name', async () => {
    const q = await row.getAttribute('data-queue', { timeout: 1000 });
    return { ok: q === name && (await text(row.locator(sel('count-ready')))) === '1', seen: q };
  });
  await row.locator('a').first().click();
  await waitFor(`job ${id} listed on the queue's page`, async () => {
    const n = await page.locator(sel('job-row', `[data-job-id="${id}"]`)).count();
    const h1 = await text(page.locator('h1'));
    return { ok: n === 1 && h1 === name, seen: { n, h1 } };
  });
});

let alpha = null;
await step('groups: the bucket grid shows two owners, then the survivor of a SIGKILL', async () => {
  const events = Array.from({ length: 200 }, (_, i) => ({ key: `customer-${i % 25}`, payload: { order: i } }));
  await api('POST', '/api/v1/streams/orders/events', { events });
  alpha = groupWorker('alpha');
  const beta = groupWorker('beta');
  await goto('#/groups');
  const cells = page.locator(sel('group-cell', '[data-group="dash"]'));
  const grid = async () => cells.evaluateAll((els) => els.map((e) => ({
    bucket: e.getAttribute('data-bucket'),
    owner: e.getAttribute('data-owner'),
    expired: e.getAttribute('data-expired'),
    shown: e.querySelector('[data-testid="cell-owner"]')?.textContent,
  })));
  const summary = (g) => g.map((c) => `${c.bucket}:${c.owner || '-'}${c.expired === 'true' ? '(expired)' : ''}`).join(' ');
  await waitFor('8 buckets owned by alpha and beta, none expired', async () => {
    const g = await grid();
    const owners = new Set(g.map((c) => c.owner));
    const ok = g.length === 8 && g.every((c) => c.expired === 'false' && c.shown === c.owner) &&
      owners.size === 2 && owners.has('alpha') && owners.has('beta');
    return { ok, seen: summary(g) };
  });
  const legend = await page.locator(`${sel('group', '[data-group="dash"]')} ${sel('group-owner')}`).evaluateAll((els) => els.map((e) => e.getAttribute('data-owner')));
  assert(legend.join(',') === 'alpha,beta', `legend lists alpha and beta, got ${legend}`);
  const alphaColour = await cells.evaluateAll((els) => {
    const a = els.find((e) => e.getAttribute('data-owner') === 'alpha');
    const b = els.find((e) => e.getAttribute('data-owner') === 'beta');
    return [getComputedStyle(a).borderLeftColor, getComputedStyle(b).borderLeftColor];
  });
  assert(alphaColour[0] !== alphaColour[1], `owners have distinct colours: ${alphaColour}`);

  beta.kill('SIGKILL');
  const killedAt = Date.now();
  let sawExpired = false;
  const r = await waitFor('all 8 buckets owned by alpha after beta was killed', async () => {
    const g = await grid();
    if (g.some((c) => c.expired === 'true' && c.owner === 'beta')) sawExpired = true;
    const ok = g.length === 8 && g.every((c) => c.owner === 'alpha' && c.expired === 'false' && c.shown === 'alpha');
    return { ok, seen: summary(g) };
  });
  console.log(`     failover shown after ${((Date.now() - killedAt) / 1000).toFixed(1)} s` +
    `${sawExpired ? ' (beta\'s leases were shown expired meanwhile)' : ''}; ${r.seen}`);
  const legendAfter = await page.locator(`${sel('group', '[data-group="dash"]')} ${sel('group-owner')}`).evaluateAll((els) => els.map((e) => e.getAttribute('data-owner')));
  assert(legendAfter.join(',') === 'alpha', `legend lists only alpha, got ${legendAfter}`);
  if (alpha.exitCode !== null) throw new Error(`alpha exited: ${alpha.stderrTail()}`);
});

await step('streams, schedules and locks show what the API holds', async () => {
  // A consumer behind the head.
  const pub = await api('POST', '/api/v1/streams/audit/events', { events: Array.from({ length: 10 }, (_, i) => ({ payload: { n: i } })) });
  await api('PUT', `/api/v1/streams/audit/consumers/exporter`, { offset: pub.offsets[3] });
  await goto('#/streams');
  const consumer = page.locator(`${sel('stream', '[data-stream="audit"]')} ${sel('consumer-row', '[data-consumer="exporter"]')}`);
  await waitFor('consumer exporter of audit with lag 6', async () => {
    const seen = { offset: await text(consumer.locator(sel('consumer-offset'))), lag: await text(consumer.locator(sel('consumer-lag'))) };
    return { ok: seen.offset === String(pub.offsets[3]) && seen.lag === '6', seen };
  });

  await api('PUT', '/api/v1/schedules/nightly-report', { spec: '@every 1h', queue: 'reports', payload: { kind: 'nightly' } });
  await goto('#/schedules');
  const sched = page.locator(sel('schedule-row', '[data-name="nightly-report"]'));
  await waitFor('schedule nightly-report listed with a next fire time', async () => {
    const next = await text(sched.locator(sel('schedule-next')));
    return { ok: !!next && next !== '–', seen: next };
  });
  await sched.locator(sel('schedule-pause')).click();
  await waitFor('nightly-report shown paused', async () => {
    const p = await sched.getAttribute('data-paused', { timeout: 1000 });
    return { ok: p === 'true', seen: p };
  });
  const s = (await api('GET', '/api/v1/schedules')).schedules.find((x) => x.name === 'nightly-report');
  assert(s && s.paused, 'the API says nightly-report is paused');
  await sched.locator(sel('schedule-resume')).click();
  await waitFor('nightly-report shown running', async () => {
    const p = await sched.getAttribute('data-paused', { timeout: 1000 });
    return { ok: p === 'false', seen: p };
  });

  const grant = await api('POST', '/api/v1/locks/migrations/acquire', { owner: 'deployer', ttl_ms: 60_000 });
  assert(grant.held, 'lock granted');
  await goto('#/locks');
  const lock = page.locator(sel('lock-row', '[data-name="migrations"]'));
  await waitFor('lock migrations held by deployer with its token', async () => {
    const seen = { owner: await text(lock.locator(sel('lock-owner'))), token: await text(lock.locator(sel('lock-token'))) };
    return { ok: seen.owner === 'deployer' && seen.token === String(grant.token), seen };
  });
});

if (SCREENSHOT) {
  await step('screenshot of the dashboard under load (docs/dashboard.png)', async () => {
    // Load for a while so the chart has a shape: enqueue in waves, claim
    // in batches, hold each claim a few rounds, then settle it (a few fail).
    await goto('#/queues');
    const queues = ['emails', 'thumbnails', 'webhooks'];
    const held = [];
    const stopAt = Date.now() + 40_000;
    let round = 0;
    while (Date.now() < stopAt) {
      round++;
      const wave = Math.sin(round / 10);
      for (const [i, q] of queues.entries()) {
        const n = Math.max(0, Math.round((wave + 1) * (10 - i * 3)));
        if (n) {
          await api('POST', `/api/v1/queues/${q}/jobs/batch`, { jobs: Array.from({ length: n }, (_, k) => ({ payload: { round, k } })) });
        }
        const c = await api('POST', `/api/v1/queues/${q}/claim`, { worker: `load-${q}`, limit: 12 - i * 3 });
        for (const j of c.jobs) held.push({ q, j, until: round + 2 + (j.id % 4) });
      }
      const due = held.filter((x) => x.until <= round);
      held.splice(0, held.length, ...held.filter((x) => x.until > round));
      for (const { q, j } of due) {
        const body = { worker: `load-${q}`, token: j.token };
        if (j.id % 23 === 0) {
          await api('POST', `/api/v1/jobs/${j.id}/fail`, { ...body, error: 'upstream timed out after 30 s' });
        } else {
          await api('POST', `/api/v1/jobs/${j.id}/ack`, body);
        }
      }
      await sleep(250);
    }
    await page.locator(sel('queue-row', '[data-queue="emails"]')).click({ position: { x: 400, y: 10 } });
    await sleep(1500);
    const out = path.join(REPO, 'docs', 'dashboard.png');
    mkdirSync(path.dirname(out), { recursive: true });
    await page.screenshot({ path: out });
    console.log(`     wrote ${out}`);
  });
}

await step('the chart turns the store\'s buckets into per-second rates', async () => {
  const r = await page.evaluate(() => window.alkDashboard.rates(
    [{ start: 980, completed: 50, failed: 10 }, { start: 960, completed: 20, failed: 0 }, { start: 1000, completed: 7, failed: 0 }],
    1004, 10, 1_000_000,
  ));
  // 300 s back from 1004: buckets 700 … 990 whole, and 1000 (4 s in) at now.
  assert(r.length === 31, `31 points; got ${r.length}`);
  const at = (t) => r.find((p) => p.t === t);
  const p980 = at(1_000_000 - (1004 - 990) * 1000);
  assert(p980 && p980.v === 5 && p980.f === 1, `bucket 980: 5/s completed, 1/s failed; got ${JSON.stringify(p980)}`);
  const p960 = at(1_000_000 - (1004 - 970) * 1000);
  assert(p960 && p960.v === 2 && p960.f === 0, `bucket 960: 2/s; got ${JSON.stringify(p960)}`);
  const p970 = at(1_000_000 - (1004 - 980) * 1000);
  assert(p970 && p970.v === 0, `an absent bucket is 0/s; got ${JSON.stringify(p970)}`);
  const last = r[r.length - 1];
  assert(last.t === 1_000_000 && last.v === 7 / 4, `the filling bucket at now: 1.75/s; got ${JSON.stringify(last)}`);
});

await step('at 800 px wide the dead-letter badge is fully visible', async () => {
  // A three-digit count: the widest badge a busy store shows.
  await api('POST', '/api/v1/queues/narrow/jobs/batch', { jobs: Array.from({ length: 120 }, (_, i) => ({ payload: i })) });
  const c = await api('POST', '/api/v1/queues/narrow/claim', { worker: 'browser-test', limit: 120 });
  await Promise.all(c.jobs.map((j) => api('POST', `/api/v1/jobs/${j.id}/fail`, { worker: 'browser-test', token: j.token, error: 'for the badge' })));
  await page.setViewportSize({ width: 800, height: 600 });
  try {
    await goto('#/queues');
    await waitFor('the badge shown', async () => ({ ok: (await badgeCount()) > 0, seen: await badgeCount() }));
    const seen = await page.evaluate(() => {
      const badge = document.getElementById('nav-dead-count');
      const r = badge.getBoundingClientRect();
      const out = { badge: [r.left, r.top, r.right, r.bottom].map(Math.round), viewport: [innerWidth, innerHeight], clippedBy: null };
      out.inViewport = r.width > 0 && r.height > 0 && r.left >= 0 && r.top >= 0 && r.right <= innerWidth && r.bottom <= innerHeight;
      for (let el = badge.parentElement; el && el !== document.documentElement; el = el.parentElement) {
        const cs = getComputedStyle(el);
        if (cs.overflowX === 'visible' && cs.overflowY === 'visible') continue;
        const p = el.getBoundingClientRect();
        if (r.left < p.left || r.right > p.right || r.top < p.top || r.bottom > p.bottom) out.clippedBy = el.tagName + '.' + el.className;
      }
      // Its own text fits it (a squeezed badge cuts its digits).
      out.textFits = badge.scrollWidth <= badge.clientWidth && badge.scrollHeight <= badge.clientHeight;
      const hit = document.elementFromPoint((r.left + r.right) / 2, (r.top + r.bottom) / 2);
      out.onTop = hit === badge;
      out.noSideScroll = document.documentElement.scrollWidth <= innerWidth;
      return out;
    });
    assert(seen.inViewport && seen.clippedBy === null && seen.onTop && seen.noSideScroll && seen.textFits,
      `the badge is within the window, unclipped and on top: ${JSON.stringify(seen)}`);
  } finally {
    await page.setViewportSize({ width: 1280, height: 800 });
  }
});

await step('no script errors or CSP violations on the page', async () => {
  assert(pageErrors.length === 0, `uncaught errors: ${pageErrors.join(' | ')}`);
  assert(cspErrors.length === 0, `CSP violations: ${cspErrors.join(' | ')}`);
});

if (alpha) alpha.kill('SIGTERM');
await context.close();
rmSync(profile, { recursive: true, force: true });
killAll();

const passed = results.filter((r) => r.ok).length;
const failed = results.length - passed;
console.log(`browser: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
