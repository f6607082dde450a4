// The dashboard of `alk serve` in headless Chromium, against a live server
// and real group-worker processes. Run by scripts/browser-test, which starts
// the server and passes:
//   ALK_URL    the server's base URL (http://127.0.0.1:PORT)
//   ALK_TOKEN  its --token
//   ALK_BIN    the alk binary (to start real processes: group members, workers,
//              a subscriber, a scheduler, sweeps)
//   ALK_DB     the server's --db URL (the workers share it)
//   ALK_SCREENSHOT=1  also save docs/dashboard.png (the queues under load, 1280 wide),
//                     docs/dashboard-processes.png, docs/dashboard-streams.png,
//                     docs/dashboard-jobs.png (tagged jobs) and
//                     docs/dashboard-narrow.png (375x800)
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
  return alkProcess([
    'test-group-worker',
    '--group', group, '--stream', stream,
    '--buckets', String(buckets), '--name', name,
    '--ttl-ms', '2000', '--heartbeat-ms', '300',
    ...extra,
  ]);
}

// A real `alk` process on the server's store (a worker, a subscriber, a
// scheduler, a group member), killed when the test ends.
function alkProcess(args) {
  const child = spawn(ALK, ['--db', DB, ...args], { stdio: ['ignore', 'ignore', 'pipe'], env: withoutDatabaseUrl });
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

await step('store: the top bar names the store the page shows', async () => {
  const info = await api('GET', '/api/v1/store');
  await waitFor('the engine and the SQLite file in the top bar', async () => {
    const seen = { engine: await text(page.locator(sel('store-engine'))), location: await text(page.locator(sel('store-location'))) };
    return { ok: seen.engine === 'sqlite' && seen.location === info.location && DB.endsWith(info.location), seen };
  });
  assert(await page.locator(sel('store')).isVisible(), 'the store is shown');
  const title = await page.locator(sel('store')).getAttribute('title');
  assert(title.includes(info.location) && title.includes(info.version), `its title says where and which version: ${title}`);
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

await step('groups: handoffs tell the failover (beta\'s lapsed leases) from rebalances and first claims', async () => {
  await goto('#/groups');
  const ho = page.locator(sel('handoffs', '[data-group="dash"]'));
  const api1 = await api('GET', '/api/v1/groups/dash/handoffs');
  assert(api1.totals.lapse >= 1, `the store counted a failover: ${JSON.stringify(api1.totals)}`);
  await waitFor('the totals as the API has them, and beta → alpha failovers listed', async () => {
    const now = (await api('GET', '/api/v1/groups/dash/handoffs')).totals;
    const seen = {
      lapse: await ho.locator(sel('handoffs-lapse')).getAttribute('data-count', { timeout: 1000 }),
      rebalance: await ho.locator(sel('handoffs-rebalance')).getAttribute('data-count', { timeout: 1000 }),
      first: await ho.locator(sel('handoffs-first')).getAttribute('data-count', { timeout: 1000 }),
      rows: await ho.locator(sel('handoff-row', '[data-cause="lapse"][data-from="beta"][data-to="alpha"]')).count(),
      flagged: await page.locator(`${sel('group', '[data-group="dash"]')} ${sel('cell-handoff', '[data-cause="lapse"]')}`).count(),
      chart: await ho.locator(`${sel('handoff-chart')} .seg.lapse`).count(),
    };
    const ok = seen.lapse === String(now.lapse) && seen.rebalance === String(now.rebalance) && seen.first === String(now.first) &&
      seen.rows >= 1 && seen.flagged >= 1 && seen.chart >= 1;
    return { ok, seen };
  });
});

await step('streams, schedules and locks show what the API holds', async () => {
  // A consumer behind the head.
  const pub = await api('POST', '/api/v1/streams/audit/events', { events: Array.from({ length: 10 }, (_, i) => ({ payload: { n: i } })) });
  await api('PUT', `/api/v1/streams/audit/consumers/exporter`, { offset: pub.offsets[3] });
  await goto('#/streams');
  const audit = page.locator(sel('stream', '[data-stream="audit"]'));
  await waitFor('stream audit listed with 10 events, its most-behind reader 6 behind', async () => {
    const seen = { events: await text(audit.locator(sel('stream-events'))), lag: await text(audit.locator(sel('stream-lag'))) };
    return { ok: seen.events === '10' && seen.lag === '6', seen };
  });
  await audit.locator(sel('stream-link')).click();
  const consumer = page.locator(`${sel('readers')} ${sel('consumer-row', '[data-consumer="exporter"]')}`);
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

// The processes page's row of a process, by pid.
const processRow = (pid) => page.locator(sel('process-row', `[data-pid="${pid}"]`));
const tileAlive = async (kind) => Number(await page.locator(sel(`proc-count-${kind}`)).getAttribute('data-alive', { timeout: 1000 }));

await step('processes: a real alk worker is listed, quieted and stopped from the page; a killed one shown dead', async () => {
  await goto('#/processes');
  await page.waitForSelector(sel('proc-count-worker'), { timeout: WAIT_MS });
  const before = await tileAlive('worker');
  const worker = alkProcess(['worker', '--queue', 'procs', '--exec', 'sleep 5', '--concurrency', '3']);
  const row = processRow(worker.pid);
  await waitFor(`worker pid ${worker.pid} listed alive, working procs with 3 slots`, async () => {
    const seen = {
      kind: await row.getAttribute('data-kind', { timeout: 1000 }),
      alive: await row.getAttribute('data-alive', { timeout: 1000 }),
      roles: await text(row.locator(sel('process-roles'))),
      slots: await row.locator(sel('process-running')).getAttribute('data-concurrency', { timeout: 1000 }),
      beat: await text(row.locator(sel('process-heartbeat'))),
      tile: await tileAlive('worker'),
    };
    const ok = seen.kind === 'worker' && seen.alive === 'true' && seen.roles === 'procs' && seen.slots === '3' &&
      /ago$|^just now$/.test(seen.beat || '') && seen.tile === before + 1;
    return { ok, seen };
  });
  const id = await row.getAttribute('data-id');
  // Quiet: asked first, and the store holds the order.
  page.once('dialog', (d) => d.dismiss());
  await row.locator(sel('process-quiet')).click();
  await sleep(300);
  assert((await api('GET', '/api/v1/processes')).processes.find((p) => p.id === id).order === 'run', 'a dismissed confirm orders nothing');
  acceptNextDialog();
  await row.locator(sel('process-quiet')).click();
  await waitFor('the worker shown quiet', async () => {
    const seen = { order: await row.getAttribute('data-order', { timeout: 1000 }), pill: await text(row.locator(sel('process-order'))) };
    return { ok: seen.order === 'quiet' && seen.pill === 'quiet', seen };
  });
  assert(await row.locator(sel('process-quiet')).isDisabled(), 'Quiet is off once quiet');
  acceptNextDialog();
  await row.locator(sel('process-stop')).click();
  await waitFor('the worker stopping, then gone from the list as it exits', async () => {
    const n = await row.count();
    return { ok: n === 0 && worker.exitCode !== null, seen: { rows: n, exit: worker.exitCode } };
  });
  // beta was SIGKILLed in the groups step: listed dead, and greyed.
  const beta = page.locator(sel('process-row', '[data-id="beta"]'));
  await waitFor('group member beta shown dead and greyed, alpha alive', async () => {
    const seen = {
      beta: await beta.getAttribute('data-alive', { timeout: 1000 }),
      state: await text(beta.locator(sel('process-state'))),
      alpha: await page.locator(sel('process-row', '[data-id="alpha"]')).getAttribute('data-alive', { timeout: 1000 }),
      opacity: await beta.locator('td').first().evaluate((td) => Number(getComputedStyle(td).opacity)),
      stop: await beta.locator(sel('process-stop')).isDisabled(),
    };
    return { ok: seen.beta === 'false' && seen.state === 'dead' && seen.alpha === 'true' && seen.opacity < 1 && seen.stop, seen };
  });
  // The kind filter.
  await page.locator(sel('proc-count-group')).click();
  await waitFor('only group members listed after picking their tile', async () => {
    const kinds = await page.locator(sel('process-row')).evaluateAll((els) => els.map((e) => e.getAttribute('data-kind')));
    return { ok: kinds.length >= 2 && kinds.every((k) => k === 'group'), seen: kinds };
  });
  await page.locator(sel('proc-count-group')).click();
});

await step('streams: every reader with its lag (consumers, groups, their processes); events paged, filtered, expanded', async () => {
  // Another stream's events between: offsets of one stream are not dense.
  for (let b = 0; b < 3; b++) {
    await api('POST', '/api/v1/streams/clicks/events', { events: Array.from({ length: 40 }, (_, i) => ({ key: `k-${(b * 40 + i) % 7}`, payload: { n: b * 40 + i, page: `/p/${i}` } })) });
    await api('POST', '/api/v1/streams/noise/events', { events: Array.from({ length: 15 }, (_, i) => ({ payload: i })) });
  }
  const info = await api('GET', '/api/v1/streams/clicks');
  const all = (await api('GET', '/api/v1/streams/clicks/events?limit=1000')).events;
  assert(all.length === 120, `120 clicks events, got ${all.length}`);
  await api('PUT', '/api/v1/streams/clicks/consumers/exporter', { offset: all[99].offset });
  const sub = alkProcess(['streams', 'tail', 'clicks', '--consumer', 'live-tail', '--follow', '--commit-every', '1']);
  await goto('#/streams/clicks');
  const exporter = page.locator(sel('consumer-row', '[data-consumer="exporter"]'));
  const tail = page.locator(sel('consumer-row', '[data-consumer="live-tail"]'));
  await waitFor('exporter 20 behind; live-tail caught up and read by a live subscriber process', async () => {
    const seen = {
      exporter: await text(exporter.locator(sel('consumer-lag'))),
      tailLag: await text(tail.locator(sel('consumer-lag'))),
      tailOffset: await text(tail.locator(sel('consumer-offset'))),
      procs: await tail.locator(sel('reader-process')).evaluateAll((els) => els.map((e) => `${e.getAttribute('data-id')}:${e.getAttribute('data-alive')}`)),
    };
    const ok = seen.exporter === '20' && seen.tailLag === '0' && seen.tailOffset === String(info.head) &&
      seen.procs.length === 1 && seen.procs[0].endsWith(':true');
    return { ok, seen };
  });
  sub.kill('SIGTERM');

  // The consumer group dash reads orders: its lag, and its members (alpha alive, beta dead).
  await goto('#/streams/orders');
  const dash = page.locator(sel('group-reader-row', '[data-group="dash"]'));
  await waitFor('group dash listed on orders with its lag and members', async () => {
    const seen = {
      lag: await text(dash.locator(sel('group-lag'))),
      bars: await dash.locator(`${sel('lag-bars')} > span`).count(),
      procs: await dash.locator(sel('reader-process')).evaluateAll((els) => els.map((e) => `${e.getAttribute('data-id')}:${e.getAttribute('data-alive')}`).sort()),
    };
    return { ok: seen.lag === '0' && seen.bars === 8 && seen.procs.join() === 'alpha:true,beta:false', seen };
  });
  // Lag follows the store: alpha is the only member; stop it handling with SIGSTOP, publish, see lag.
  if (alpha && alpha.exitCode === null) {
    alpha.kill('SIGSTOP');
    try {
      await api('POST', '/api/v1/streams/orders/events', { events: Array.from({ length: 12 }, (_, i) => ({ key: `late-${i}`, payload: { late: i } })) });
      await waitFor('group dash 12 behind while its member is stopped', async () => {
        const lag = await text(dash.locator(sel('group-lag')));
        return { ok: lag === '12', seen: lag };
      });
    } finally {
      alpha.kill('SIGCONT');
    }
  }

  // The event browser on clicks: 50 a page, from the start.
  await goto('#/streams/clicks');
  const offsets = async () => page.locator(sel('event-row')).evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-offset'))));
  const want = (from, n) => all.slice(from, from + n).map((e) => e.offset).join();
  await waitFor('the first 50 events', async () => {
    const o = await offsets();
    return { ok: o.join() === want(0, 50), seen: `${o[0]}…${o[o.length - 1]} (${o.length})` };
  });
  await page.locator(sel('events-next')).click();
  await waitFor('Next: events 51 to 100', async () => {
    const o = await offsets();
    return { ok: o.join() === want(50, 50), seen: `${o[0]}…${o[o.length - 1]} (${o.length})` };
  });
  await page.locator(sel('events-newest')).click();
  await waitFor('Newest: the last 50, up to the head', async () => {
    const o = await offsets();
    return { ok: o.join() === want(70, 50), seen: `${o[0]}…${o[o.length - 1]} (${o.length})` };
  });
  // Previous from there searches back (no page was left behind to pop).
  await page.locator(sel('events-prev')).click();
  await waitFor('Previous: the 50 before', async () => {
    const o = await offsets();
    return { ok: o.join() === want(20, 50), seen: `${o[0]}…${o[o.length - 1]} (${o.length})` };
  });
  await page.locator(sel('events-from')).fill(String(all[10].offset));
  await page.locator(sel('events-go')).click();
  await waitFor('From offset: the page starts at the 11th event', async () => {
    const o = await offsets();
    return { ok: o.join() === want(10, 50), seen: `${o[0]}…${o[o.length - 1]} (${o.length})` };
  });
  // The key filter narrows this page.
  await page.locator(sel('events-key')).fill('k-3');
  const k3 = all.slice(10, 60).filter((e) => e.key === 'k-3').map((e) => e.offset);
  await waitFor('only k-3 events of the page', async () => {
    const o = await offsets();
    const matched = await text(page.locator(sel('events-matched')));
    return { ok: o.join() === k3.join() && matched === `${k3.length} of 50 on this page`, seen: { o, matched } };
  });
  // A click shows the payload in full; another hides it.
  const first = page.locator(sel('event-row', `[data-offset="${k3[0]}"]`));
  await first.click();
  const shown = all.find((e) => e.offset === k3[0]);
  await waitFor('the payload expanded', async () => {
    const t = await text(page.locator(sel('event-json')));
    return { ok: t === JSON.stringify(shown.payload, null, 2), seen: t };
  });
  await sleep(1200); // a poll later it stays open
  assert((await page.locator(sel('event-json')).count()) === 1, 'the payload stays open across polls');
  await first.locator(sel('event-toggle')).click();
  await waitFor('the payload hidden again', async () => ({ ok: (await page.locator(sel('event-json')).count()) === 0, seen: null }));
});

await step('schedules: edit spec and payload (a bad spec refused in place), create, run now and its last fires, delete', async () => {
  await api('PUT', '/api/v1/schedules/digest', { spec: '@every 1h', queue: 'mail', payload: { kind: 'daily' } });
  await goto('#/schedules');
  const row = page.locator(sel('schedule-row', '[data-name="digest"]'));
  await row.locator(sel('schedule-edit')).click();
  const form = page.locator(sel('schedule-form', '[data-name="digest"]'));
  await form.locator(sel('schedule-field-spec')).fill('every hour');
  await form.locator(sel('schedule-save')).click();
  await waitFor('the bad spec refused, shown in the editor', async () => {
    const t = await text(form.locator(sel('schedule-error')));
    return { ok: !!t && t.includes('invalid schedule spec'), seen: t };
  });
  assert((await api('GET', '/api/v1/schedules')).schedules.find((s) => s.name === 'digest').spec === '@every 1h', 'nothing changed');
  await sleep(1100); // a poll does not reset what is being typed
  assert((await form.locator(sel('schedule-field-spec')).inputValue()) === 'every hour', 'the typed spec survives a poll');
  await form.locator(sel('schedule-field-spec')).fill('@every 2h');
  await form.locator(sel('schedule-field-payload')).fill('{"kind": "weekly", "to": ["ops@example.com"]}');
  await form.locator(sel('schedule-save')).click();
  await waitFor('digest shown with the new spec and payload', async () => {
    const seen = { spec: await text(row.locator(sel('schedule-spec'))), payload: await text(row.locator(sel('schedule-payload'))), form: await form.count() };
    return { ok: seen.spec === '@every 2h' && seen.payload === '{"kind":"weekly","to":["ops@example.com"]}' && seen.form === 0, seen };
  });
  const s = (await api('GET', '/api/v1/schedules')).schedules.find((x) => x.name === 'digest');
  assert(s.spec === '@every 2h' && s.payload.kind === 'weekly' && s.queue === 'mail', `the API has the edit: ${JSON.stringify(s)}`);

  await page.locator(sel('schedule-new')).click();
  const create = page.locator(sel('schedule-new-panel'));
  await create.locator(sel('schedule-field-name')).fill('cleanup');
  await create.locator(sel('schedule-field-spec')).fill('0 4 * * *');
  await create.locator(sel('schedule-field-tz')).fill('Europe/Paris');
  await create.locator(sel('schedule-field-queue')).fill('maintenance');
  await create.locator(sel('schedule-field-payload')).fill('{"older_than_days": 30}');
  await create.locator(sel('schedule-save')).click();
  await waitFor('schedule cleanup created and listed', async () => {
    const n = await page.locator(sel('schedule-row', '[data-name="cleanup"]')).count();
    return { ok: n === 1 && (await create.count()) === 0, seen: n };
  });
  const c = (await api('GET', '/api/v1/schedules')).schedules.find((x) => x.name === 'cleanup');
  assert(c && c.tz === 'Europe/Paris' && c.payload.older_than_days === 30, `created as typed: ${JSON.stringify(c)}`);

  // Run now, then its last fires: the manual one, with its job.
  const cleanup = page.locator(sel('schedule-row', '[data-name="cleanup"]'));
  await cleanup.locator(sel('schedule-run')).click();
  let jobId = null;
  await waitFor('the run reported with its job', async () => {
    const t = await text(page.locator('#toast'));
    const m = /^Ran cleanup now: job (\d+) on maintenance$/.exec(t || '');
    if (m) jobId = m[1];
    return { ok: !!m, seen: t };
  });
  await cleanup.locator(sel('schedule-fires-toggle')).click();
  const fires = page.locator(`${sel('schedule-fires', '[data-name="cleanup"]')} ${sel('fire-row')}`);
  await waitFor('one fire listed: run now, its job pending', async () => {
    const seen = {
      rows: await fires.count(),
      job: await fires.first().getAttribute('data-job-id', { timeout: 1000 }),
      manual: await fires.first().getAttribute('data-manual', { timeout: 1000 }),
      state: await text(fires.first().locator(sel('fire-job-state'))),
    };
    return { ok: seen.rows === 1 && seen.job === jobId && seen.manual === 'true' && seen.state === 'pending', seen };
  });
  const api1 = (await api('GET', '/api/v1/schedules/cleanup/fires')).fires;
  assert(api1.length === 1 && String(api1[0].job_id) === jobId && api1[0].manual, `the API lists the fire: ${JSON.stringify(api1)}`);

  acceptNextDialog();
  await row.locator(sel('schedule-delete')).click();
  await waitFor('digest deleted', async () => ({ ok: (await row.count()) === 0, seen: await row.count() }));
  assert(!(await api('GET', '/api/v1/schedules')).schedules.some((x) => x.name === 'digest'), 'the API has no digest');
});

await step('schedules: a payload that is not JSON is kept when the spec is edited', async () => {
  await api('PUT', '/api/v1/schedules/rawsched', { spec: '@every 1d', queue: 'raw', payload_base64: '/wA=' });
  await goto('#/schedules');
  const row = page.locator(sel('schedule-row', '[data-name="rawsched"]'));
  await row.locator(sel('schedule-edit')).click();
  const form = page.locator(sel('schedule-form', '[data-name="rawsched"]'));
  const hint = await form.locator(sel('schedule-field-payload')).getAttribute('placeholder', { timeout: WAIT_MS });
  assert(hint && hint.includes('not JSON') && hint.includes('kept'), `the form says the payload is kept: ${hint}`);
  await form.locator(sel('schedule-field-spec')).fill('@every 2d');
  await form.locator(sel('schedule-save')).click();
  await waitFor('saved: the new spec, the same bytes', async () => {
    const s = (await api('GET', '/api/v1/schedules')).schedules.find((x) => x.name === 'rawsched');
    return { ok: !!s && s.spec === '@every 2d' && s.payload_base64 === '/wA=' && (await form.count()) === 0, seen: s };
  });
  await api('DELETE', '/api/v1/schedules/rawsched');
});

await step('jobs: counts per state, filters by queue, state and payload field, and bulk actions', async () => {
  const q = 'bulk';
  await api('POST', `/api/v1/queues/${q}/jobs/batch`, { jobs: Array.from({ length: 9 }, (_, i) => ({ payload: { customer: i % 3, n: i } })) });
  await api('POST', `/api/v1/queues/${q}/jobs/batch`, { jobs: [0, 1].map((i) => ({ payload: { customer: 9, later: i }, delay_ms: 3_600_000 })) });
  const c = await api('POST', `/api/v1/queues/${q}/claim`, { worker: 'browser-test', limit: 1 });
  await api('POST', `/api/v1/jobs/${c.jobs[0].id}/fail`, { worker: 'browser-test', token: c.jobs[0].token, error: 'no such customer' });
  const count = (s) => page.locator(sel(`job-state-${s}`)).getAttribute('data-count', { timeout: 1000 });
  await goto(`#/jobs?queue=${q}`);
  await waitFor('bulk: 8 pending, 2 scheduled, 1 dead; 10 live listed', async () => {
    const seen = { pending: await count('pending'), scheduled: await count('scheduled'), dead: await count('dead'), rows: await page.locator(sel('jobs-row')).count() };
    return { ok: seen.pending === '8' && seen.scheduled === '2' && seen.dead === '1' && seen.rows === 10, seen };
  });
  // A payload field narrows the list; the URL keeps the filter.
  await page.locator(sel('jobs-where')).fill('$.customer = 1');
  await page.locator(sel('jobs-apply')).click();
  const rows = page.locator(sel('jobs-row'));
  await waitFor('only customer 1\'s jobs', async () => {
    const p = await rows.locator(sel('jobs-payload')).allTextContents();
    return { ok: p.length >= 2 && p.every((x) => x.includes('"customer":1')), seen: p };
  });
  assert(page.url().includes('where='), `the filter is in the address: ${page.url()}`);
  const n1 = await rows.count();
  // Select them all and cancel them.
  await page.locator(sel('jobs-select-all')).check();
  await waitFor('the bulk buttons count the selection', async () => {
    const t = await text(page.locator(sel('jobs-bulk-cancel')));
    return { ok: t === `Cancel ${n1}`, seen: t };
  });
  acceptNextDialog();
  await page.locator(sel('jobs-bulk-cancel')).click();
  await waitFor(`${n1} cancelled: listed under Cancelled, gone from live`, async () => {
    const seen = { cancelled: await count('cancelled'), rows: await rows.count() };
    return { ok: seen.cancelled === String(n1) && seen.rows === 0, seen };
  });
  // Dead letters retried: back to pending.
  await goto(`#/jobs?state=dead&queue=${q}`);
  await waitFor(`${n1 + 1} dead listed`, async () => ({ ok: (await rows.count()) === n1 + 1, seen: await rows.count() }));
  await page.locator(sel('jobs-select-all')).check();
  await page.locator(sel('jobs-bulk-retry')).click();
  // 8 were pending; n1 cancelled; those and the failed one retried.
  const pending = 8 - n1 + n1 + 1;
  await waitFor(`the dead retried: none dead, ${pending} pending`, async () => {
    const seen = { dead: await count('dead'), pending: await count('pending'), rows: await rows.count() };
    return { ok: seen.dead === '0' && seen.pending === String(pending) && seen.rows === 0, seen };
  });
  // Scheduled ones run now.
  await page.locator(sel('job-state-scheduled')).click();
  await waitFor('2 scheduled listed', async () => ({ ok: (await rows.count()) === 2, seen: await rows.count() }));
  await rows.first().locator(sel('job-select')).check();
  assert((await page.locator(sel('jobs-bulk-delete')).textContent()) === 'Delete 1', 'one chosen');
  await rows.nth(1).locator(sel('job-select')).check();
  await page.locator(sel('jobs-bulk-run_now')).click();
  await waitFor(`none scheduled, ${pending + 2} pending`, async () => {
    const seen = { scheduled: await count('scheduled'), pending: await count('pending') };
    return { ok: seen.scheduled === '0' && seen.pending === String(pending + 2), seen };
  });
  const left = await api('GET', `/api/v1/jobs/counts?queue=${q}`);
  assert(left.pending === pending + 2 && left.dead === 0 && left.scheduled === 0, `the store agrees: ${JSON.stringify(left)}`);
  // A job's own page: a scheduled one made due now.
  const { id: later } = await api('POST', `/api/v1/queues/${q}/jobs`, { payload: { later: true }, delay_ms: 3_600_000 });
  await goto(`#/jobs/${later}`);
  await page.locator(sel('job-run-now')).click();
  await waitFor(`job ${later} pending after Run now`, async () => {
    const st = await page.locator(sel('job-state')).first().getAttribute('data-state', { timeout: 1000 });
    return { ok: st === 'pending', seen: st };
  });
  await goto(`#/jobs?queue=${q}`);
  await waitFor(`${pending + 3} pending`, async () => ({ ok: (await count('pending')) === String(pending + 3), seen: await count('pending') }));

  // A bad filter is said, the counts stay.
  await page.locator(sel('jobs-where')).fill('customer = 1');
  await page.locator(sel('jobs-apply')).click();
  await waitFor('the filter\'s error shown', async () => {
    const t = await text(page.locator(sel('jobs-error')));
    // (the server's words, e.g. "the path starts with `$`")
    return { ok: !!t && t.includes('$') && (await rows.count()) === 0 && (await count('pending')) === String(pending + 3), seen: t };
  });
  // Delete them all.
  await page.locator(sel('jobs-clear')).click();
  await waitFor('Clear: every queue\'s jobs, no filter', async () => {
    const seen = { url: page.url(), where: await page.locator(sel('jobs-where')).inputValue(), queue: await page.locator(sel('jobs-queue')).inputValue() };
    return { ok: /#\/jobs$/.test(seen.url) && seen.where === '' && seen.queue === '', seen };
  });
  await page.locator(sel('jobs-queue')).selectOption(q);
  await waitFor(`${pending + 3} listed again`, async () => ({ ok: (await rows.count()) === pending + 3, seen: await rows.count() }));
  await page.locator(sel('jobs-select-all')).check();
  acceptNextDialog();
  await page.locator(sel('jobs-bulk-delete')).click();
  await waitFor('every job of bulk deleted', async () => {
    const seen = { pending: await count('pending'), all: await count('all'), empty: await page.locator(sel('jobs-empty')).count() };
    return { ok: seen.pending === '0' && seen.all === '0' && seen.empty === 1, seen };
  });
});

await step('jobs: tags shown as links; a tag narrows the list; a job\'s page shows its tags and meta', async () => {
  const q = 'tagged';
  const made = await api('POST', `/api/v1/queues/${q}/jobs/batch`, { jobs: [
    { payload: { n: 1 }, tags: ['billing', 'vip'], meta: { requested_by: 'ops@example.com' } },
    { payload: { n: 2 }, tags: ['billing'] },
    { payload: { n: 3 } },
  ] });
  const [vip, billing] = made.jobs.map((j) => String(j.id));
  const rows = page.locator(sel('jobs-row'));
  const ids = async () => rows.evaluateAll((rs) => rs.map((r) => r.getAttribute('data-job-id')));
  await goto(`#/jobs?queue=${q}`);
  await waitFor('three listed; the first shows its two tags', async () => {
    const seen = { ids: await ids(), tags: await rows.first().locator(sel('job-tag')).allTextContents() };
    return { ok: seen.ids.length === 3 && seen.tags.join(',') === 'billing,vip', seen };
  });
  if (SCREENSHOT) await page.screenshot({ path: path.join(REPO, 'docs', 'dashboard-jobs.png') });
  // A tag's link lists the jobs carrying it (every queue), the filter box says which.
  await rows.first().locator(sel('job-tag')).last().click();
  await waitFor('the vip link: only the vip job', async () => {
    const seen = { ids: await ids(), tag: await page.locator(sel('jobs-tag')).inputValue(), url: page.url() };
    return { ok: seen.ids.join() === vip && seen.tag === 'vip' && seen.url.includes('tag=vip'), seen };
  });
  await page.locator(sel('jobs-tag')).fill('billing');
  await page.locator(sel('jobs-apply')).click();
  await waitFor('billing: the two billing jobs', async () => {
    const seen = await ids();
    return { ok: seen.join() === `${vip},${billing}`, seen };
  });
  await goto(`#/queues/${q}`);
  await waitFor('the queue page shows the tags too', async () => {
    const seen = await page.locator(`${sel('job-row')} ${sel('job-tag')}`).allTextContents();
    return { ok: seen.join(',') === 'billing,vip,billing', seen };
  });
  await goto(`#/jobs/${vip}`);
  await waitFor('the job page shows tags and meta', async () => {
    const seen = { tags: await page.locator(sel('job-tag')).allTextContents(), meta: await text(page.locator(sel('job-meta'))) };
    return { ok: seen.tags.join(',') === 'billing,vip' && !!seen.meta && seen.meta.includes('ops@example.com'), seen };
  });
});

await step('jobs: every matching job, past the page, cancelled in one go', async () => {
  const q = 'everything';
  await api('POST', `/api/v1/queues/${q}/jobs/batch`, { jobs: Array.from({ length: 130 }, (_, i) => ({ payload: { i } })) });
  const count = (st) => page.locator(sel(`job-state-${st}`)).getAttribute('data-count', { timeout: 1000 });
  const rows = page.locator(sel('jobs-row'));
  await goto(`#/jobs?queue=${q}`);
  await waitFor('130 pending, one page listed', async () => {
    const seen = { pending: await count('pending'), rows: await rows.count() };
    return { ok: seen.pending === '130' && seen.rows > 0 && seen.rows < 130, seen };
  });
  await page.locator(sel('jobs-select-all')).check();
  await page.locator(sel('jobs-select-matching')).click();
  await waitFor('every matching job selected', async () => {
    const seen = { said: await text(page.locator(sel('jobs-selected'))), button: await text(page.locator(sel('jobs-bulk-cancel'))) };
    return { ok: !!seen.said && seen.said.includes('130') && seen.button === 'Cancel all', seen };
  });
  acceptNextDialog();
  await page.locator(sel('jobs-bulk-cancel')).click();
  await waitFor('all 130 cancelled, none pending', async () => {
    const seen = { pending: await count('pending'), cancelled: await count('cancelled') };
    return { ok: seen.pending === '0' && seen.cancelled === '130', seen };
  });
  const left = await api('GET', `/api/v1/jobs/counts?queue=${q}`);
  assert(left.pending === 0 && left.cancelled === 130, `the store agrees: ${JSON.stringify(left)}`);
});

if (SCREENSHOT) {
  await step('screenshot of the dashboard under load (docs/dashboard.png)', async () => {
    // Load for a while so the chart has a shape: enqueue in waves, claim
    // in batches, hold each claim a few rounds, then settle it (a few fail).
    await goto('#/queues');
    // Real processes for the processes and streams pictures.
    const extras = [
      alkProcess(['worker', '--queue', 'thumbnails', '--exec', 'sleep 0.4', '--concurrency', '4']),
      alkProcess(['worker', '--queue', 'webhooks', '--exec', 'sleep 0.2', '--concurrency', '8']),
      alkProcess(['streams', 'tail', 'orders', '--consumer', 'search-indexer', '--follow']),
      alkProcess(['schedules', 'run']),
    ];
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
    // The whole page: the earlier steps' queues push the chart down.
    await page.screenshot({ path: out, fullPage: true });
    console.log(`     wrote ${out}`);

    await goto('#/processes');
    await page.waitForSelector(sel('processes-table'), { timeout: WAIT_MS });
    await sleep(1200);
    const procs = path.join(REPO, 'docs', 'dashboard-processes.png');
    await page.screenshot({ path: procs });
    console.log(`     wrote ${procs}`);

    // orders: a consumer behind, the group dash, the subscriber, and a group
    // whose member (over HTTP) holds its buckets without checkpointing.
    const skus = ['tea-earl-grey', 'mug-blue', 'kettle-1l', 'filter-paper', 'honey-250g'];
    await api('POST', '/api/v1/streams/orders/events', { events: Array.from({ length: 60 }, (_, i) => ({
      key: `customer-${(i * 7) % 23}`,
      payload: { order_id: `ord_${(48213 + i).toString(36)}`, items: [{ sku: skus[i % 5], qty: 1 + (i % 3) }], total_cents: 1290 + i * 35, currency: 'EUR' },
    })) });
    await api('POST', '/api/v1/groups/billing-sync/members', { stream: 'orders', member: 'http-billing-1', buckets: 8, ttl_ms: 600_000 });
    const orders = (await api('GET', '/api/v1/streams/orders/events?limit=1000')).events;
    await api('PUT', '/api/v1/streams/orders/consumers/analytics', { offset: orders[Math.floor(orders.length * 0.8)].offset });
    await goto('#/streams/orders');
    await page.waitForSelector(sel('events-table'), { timeout: WAIT_MS });
    await page.locator(sel('events-newest')).click();
    await sleep(1200);
    await page.locator(sel('event-row')).nth(1).click();
    await sleep(1200);
    const streams = path.join(REPO, 'docs', 'dashboard-streams.png');
    await page.screenshot({ path: streams });
    console.log(`     wrote ${streams}`);
    for (const c of extras) c.kill('SIGTERM');
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

await step('over a week the chart reads buckets of mixed sizes (5-minute ones older than an hour)', async () => {
  const r = await page.evaluate(() => window.alkDashboard.ratesOver(
    [{ start: 0, span_s: 300, completed: 600, failed: 0 }, { start: 7100, span_s: 10, completed: 50, failed: 10 }],
    7200, 10, 1_000_000, 0,
  ));
  // 0 … 3000 in 5-minute steps (11), then 3300 … 7190 in 10 s ones (390).
  assert(r.length === 401, `401 points; got ${r.length}`);
  const at = (end) => r.find((p) => p.t === 1_000_000 - (7200 - end) * 1000);
  assert(at(300) && at(300).v === 2, `the 5-minute bucket at 0: 2/s; got ${JSON.stringify(at(300))}`);
  assert(at(900) && at(900).v === 0, `an absent 5-minute bucket is 0/s; got ${JSON.stringify(at(900))}`);
  assert(at(7110) && at(7110).v === 5 && at(7110).f === 1, `the 10 s bucket at 7100: 5/s, 1/s failed; got ${JSON.stringify(at(7110))}`);
});

await step('charts: the last hour from the store\'s history (depth sampled by a real alk sweep)', async () => {
  const q = 'history';
  const sweep = () => new Promise((resolve, reject) => {
    const c = alkProcess(['sweep']);
    c.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`alk sweep exited ${code}: ${c.stderrTail()}`))));
  });
  await api('POST', `/api/v1/queues/${q}/jobs/batch`, { jobs: Array.from({ length: 5 }, (_, i) => ({ payload: i })) });
  await sweep();
  await goto(`#/queues/${q}`);
  await page.locator(`${sel('chart-spans')} button[data-span="1h"]`).click();
  const chart = page.locator(sel('chart'));
  const drawn = async () => chart.evaluate((c) => ({ span: c.dataset.span, stored: Number(c.dataset.stored), ready: c.dataset.storedReady }));
  await waitFor('the hour\'s chart drawn from the store\'s sample: ready 5', async () => {
    const seen = { ...(await drawn()), title: await text(page.locator(sel('chart-title'))) };
    return { ok: seen.span === '1h' && seen.stored >= 1 && seen.ready === '5' && seen.title === 'Last hour', seen };
  });
  await sleep(1000); // a sample of a later second
  await api('POST', `/api/v1/queues/${q}/jobs/batch`, { jobs: Array.from({ length: 3 }, (_, i) => ({ payload: i })) });
  await sweep();
  await waitFor('the next sweep\'s sample drawn: ready 8', async () => {
    const seen = await drawn();
    return { ok: seen.ready === '8', seen };
  });
  await page.locator(`${sel('chart-spans')} button[data-span="5m"]`).click();
  await waitFor('back to the page\'s own 5 minutes', async () => {
    const seen = await drawn();
    return { ok: seen.span === '5m' && seen.stored === 0, seen };
  });
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

await step('at 375 px wide nothing is cut off: no sideways page scroll, nav, store and content in view', async () => {
  await page.setViewportSize({ width: 375, height: 800 });
  const views = [
    ['#/queues', 'queues-table'], ['#/jobs', 'all-jobs-table'], ['#/dead', 'group-dead-none'],
    ['#/processes', 'processes-table'], ['#/streams', 'streams-table'], ['#/streams/clicks', 'events-table'],
    ['#/groups', 'group-grid'], ['#/schedules', 'schedules-table'], ['#/locks', 'locks-table'],
  ];
  try {
    for (const [hash, key] of views) {
      await goto(hash);
      await page.waitForSelector(sel(key), { timeout: WAIT_MS });
      const seen = await page.evaluate((key) => {
        const inView = (el) => {
          const r = el.getBoundingClientRect();
          return r.width > 0 && r.height > 0 && r.left >= 0 && r.right <= innerWidth + 0.5;
        };
        const sc = document.scrollingElement;
        const out = { scrollWidth: sc.scrollWidth, innerWidth, bad: [] };
        for (const a of document.querySelectorAll('#nav a')) if (!inView(a)) out.bad.push(`nav ${a.textContent.trim()}`);
        for (const id of ['store', 'status']) if (!inView(document.querySelector(`[data-testid="${id}"]`))) out.bad.push(id);
        const h1 = document.querySelector('main h1');
        if (!h1 || !inView(h1)) out.bad.push('h1');
        const el = document.querySelector(`[data-testid="${key}"]`);
        // A table may be wider than the window: its scroller must not be.
        const box = el.closest('.tscroll') || el;
        if (!inView(box)) out.bad.push(`${key} box`);
        if (el.tagName === 'TABLE') {
          // and the table's first cell shows.
          const cell = el.querySelector('tbody td');
          if (cell && !(cell.getBoundingClientRect().left >= box.getBoundingClientRect().left - 0.5)) out.bad.push('first cell');
        }
        // Nothing in the page sticks out of the window (but inside a
        // scroller, as a table or a row of tabs in a narrow panel).
        const scrolled = (n) => {
          for (let p = n.parentElement; p && p.tagName !== 'MAIN'; p = p.parentElement) {
            if (['auto', 'scroll'].includes(getComputedStyle(p).overflowX)) return true;
          }
          return false;
        };
        for (const n of document.querySelectorAll('main *')) {
          if (scrolled(n)) continue;
          const r = n.getBoundingClientRect();
          if (r.width > 0 && r.right > innerWidth + 0.5) { out.bad.push(`sticks out: ${n.tagName}.${n.className}`); break; }
        }
        return out;
      }, key);
      assert(seen.scrollWidth <= seen.innerWidth && seen.bad.length === 0, `${hash} at 375 px: ${JSON.stringify(seen)}`);
    }
    if (SCREENSHOT) {
      await goto('#/queues');
      await page.waitForSelector(sel('queues-table'), { timeout: WAIT_MS });
      await sleep(1200);
      const out = path.join(REPO, 'docs', 'dashboard-narrow.png');
      await page.screenshot({ path: out });
      console.log(`     wrote ${out}`);
    }
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
