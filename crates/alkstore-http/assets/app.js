// alkstore dashboard: one page that polls the JSON API once a second.
//
// No framework and no build step. Views are built as fresh element trees
// with h() and patched onto the page with morph(), which keeps existing
// elements (and so a button under the pointer) when only their text
// changes. Data from the server only ever reaches the page as text
// (textContent, attribute values): never parsed as markup.
'use strict';
(function () {
  const POLL_MS = 1000;
  const WINDOW_MS = 5 * 60 * 1000; // the charts' span
  const GAP_MS = 5000; // a longer gap between samples breaks a chart line
  // The charts' spans: the last 5 minutes from this page's own samples (one
  // a second); longer ones from the store's history (depth sampled by each
  // maintenance sweep, about a minute apart; throughput in 10-second buckets
  // within the last hour and 5-minute ones before), read every HISTORY_EVERY_MS.
  const CHART_SPANS = [
    { key: '5m', label: 'Last 5 minutes', ms: 5 * 60e3, tick: 60e3, unit: 'm', gap: GAP_MS },
    { key: '1h', label: 'Last hour', ms: 3600e3, tick: 10 * 60e3, unit: 'm', gap: 5 * 60e3 },
    { key: '24h', label: 'Last 24 hours', ms: 86400e3, tick: 4 * 3600e3, unit: 'h', gap: 30 * 60e3 },
    { key: '7d', label: 'Last 7 days', ms: 7 * 86400e3, tick: 86400e3, unit: 'd', gap: 3 * 3600e3 },
  ];
  const UNIT_MS = { m: 60e3, h: 3600e3, d: 86400e3 };
  const HISTORY_EVERY_MS = 5000;
  const COARSE_S = 300; // throughput buckets older than an hour
  const JOBS_PAGE = 50;
  const DEAD_PAGE = 100;
  const STORE_EVERY_MS = 60 * 1000; // which store: read again this often
  const EVENT_PAGES = [25, 50, 100, 200]; // the event browser's page sizes
  const FIRES = 10; // a schedule's last fires shown
  const JOB_SEEN_MS = 5000; // how often a fired job's state is read again
  const HANDOFFS_EVERY_MS = 2000; // how often a group's handoffs are read again
  const RECENT_HANDOFF_MS = 60 * 1000; // a bucket handed off this recently is flagged
  // Shown on id columns: ids are unique and growing, not dense.
  const ID_NOTE = 'Unique and growing, not dense: on SQLite each process takes ids in blocks of 1,024, so ids of jobs enqueued by different processes jump by up to 1,024.';
  const PALETTE = ['#2f6fde', '#1f9d55', '#d9480f', '#8b5cf6', '#0891b2', '#db2777',
    '#65a30d', '#b7791f', '#4f46e5', '#0d9488', '#be123c', '#7c3aed'];

  const S = {
    route: { view: 'queues' },
    routeKey: '',
    queues: null, // the last /api/v1/queues answer
    groups: null, // the last /api/v1/groups answer (for their dead letters)
    procs: null, // the last /api/v1/processes answer (null: not read yet)
    procsError: null, // why /api/v1/processes failed (an older server has none)
    procKind: '', // the processes view's kind filter ('' for all)
    store: null, // /api/v1/store: which store this server serves
    storeAt: 0, // when it was read (Date.now())
    ev: null, // the stream view's event browser (evState())
    edit: null, // the schedule being edited or created (editState())
    sel: new Set(), // job ids chosen on the jobs view
    selAll: false, // every job the jobs view's filters match is chosen
    firesOpen: new Set(), // schedules whose last fires are shown
    handoffs: new Map(), // group -> {at, list, totals} or {at, error}: its bucket handoffs
    handoffSpan: '1h', // the handoff chart's span
    handoffMore: new Set(), // groups whose every kept handoff is listed
    jobSeen: new Map(), // job id -> {state, at}: the jobs schedules' fires made
    hist: new Map(), // queue -> samples [{t, ready, processing, dead, done}]
    tp: null, // the store's throughput buckets (fetchThroughput)
    chartSpan: '5m', // the charts' span (CHART_SPANS)
    history: null, // {key, at, depth, tp}: the charted queue's history over a long span
    historyError: null, // why it could not be read (an older server has none)
    chartQueue: null,
    hover: null, // {q, x} while the pointer is over a chart
    data: null, // the current view's data
    viewError: null,
    jobsState: '',
    cursor: [], // after_id of each page shown before the current one
    after: null, // after_id of the current page
    busy: new Set(), // actions in flight
    owners: new Map(), // group owner -> colour, by first sight
    clockOffset: 0, // server clock minus this one, ms (from the Date header)
    lastOk: 0,
  };

  // ---------------------------------------------------------------- DOM

  function h(tag, attrs, ...kids) {
    const el = document.createElement(tag);
    let selected = null;
    if (attrs) {
      for (const [k, v] of Object.entries(attrs)) {
        if (v === null || v === undefined || v === false) continue;
        if (k === 'text') el.textContent = String(v);
        else if (k === 'class') el.className = v;
        else if (k === 'key') el.setAttribute('data-key', String(v));
        else if (k === 'testid') el.setAttribute('data-testid', v);
        else if (k === 'style') for (const [p, pv] of Object.entries(v)) el.style.setProperty(p, pv);
        else if (k === 'selected') selected = String(v);
        else if (k.startsWith('on')) el[k] = v;
        else el.setAttribute(k, v === true ? '' : String(v));
      }
    }
    append(el, kids);
    if (selected !== null) {
      el.setAttribute('data-selected', selected);
      el.value = selected;
    }
    return el;
  }

  function append(el, kids) {
    for (const k of kids) {
      if (k === null || k === undefined || k === false) continue;
      if (Array.isArray(k)) append(el, k);
      else el.appendChild(k instanceof Node ? k : document.createTextNode(String(k)));
    }
  }

  const HANDLERS = ['onclick', 'onchange', 'oninput', 'onkeydown', 'onsubmit', 'onmousemove', 'onmouseleave'];

  function keyOf(n) {
    return n.nodeType === 1 ? n.getAttribute('data-key') : null;
  }

  function sameKind(a, b) {
    return a.nodeType === b.nodeType && a.nodeName === b.nodeName;
  }

  // Make `a` (on the page) look like `b` (just built), keeping a's nodes.
  function morph(a, b) {
    if (a.nodeType !== 1) {
      if (a.nodeValue !== b.nodeValue) a.nodeValue = b.nodeValue;
      return;
    }
    for (const ev of HANDLERS) if (a[ev] !== b[ev]) a[ev] = b[ev];
    if (a.hasAttribute('data-keep')) return; // a canvas we draw on
    for (const at of Array.from(a.attributes)) {
      if (at.name !== 'style' && !b.hasAttribute(at.name)) a.removeAttribute(at.name);
    }
    for (const at of Array.from(b.attributes)) {
      if (at.name !== 'style' && a.getAttribute(at.name) !== at.value) a.setAttribute(at.name, at.value);
    }
    syncStyle(a, b);
    morphChildren(a, b);
    // A box the user ticked keeps its own state past the attribute: set it.
    if (a.nodeName === 'INPUT' && a.type === 'checkbox' && a.checked !== b.checked) a.checked = b.checked;
    if (a.nodeName === 'SELECT' && b.hasAttribute('data-selected')) {
      const v = b.getAttribute('data-selected');
      if (a.value !== v) a.value = v;
    }
  }

  function syncStyle(a, b) {
    const want = new Map();
    for (let i = 0; i < b.style.length; i++) want.set(b.style[i], b.style.getPropertyValue(b.style[i]));
    for (let i = a.style.length - 1; i >= 0; i--) if (!want.has(a.style[i])) a.style.removeProperty(a.style[i]);
    for (const [p, v] of want) if (a.style.getPropertyValue(p) !== v) a.style.setProperty(p, v);
  }

  function morphChildren(a, b) {
    const olds = Array.from(a.childNodes);
    const byKey = new Map();
    const unkeyed = [];
    for (const n of olds) {
      const k = keyOf(n);
      if (k !== null && !byKey.has(k)) byKey.set(k, n);
      else unkeyed.push(n);
    }
    const used = new Set();
    let ui = 0;
    let ref = a.firstChild;
    for (const nb of Array.from(b.childNodes)) {
      const k = keyOf(nb);
      let match = null;
      if (k !== null) {
        const c = byKey.get(k);
        if (c && !used.has(c) && sameKind(c, nb)) match = c;
      } else {
        while (ui < unkeyed.length) {
          const c = unkeyed[ui++];
          if (sameKind(c, nb) && keyOf(c) === null) { match = c; break; }
        }
      }
      if (match) {
        used.add(match);
        morph(match, nb);
        if (match === ref) ref = ref.nextSibling;
        else a.insertBefore(match, ref);
      } else {
        a.insertBefore(nb, ref);
        used.add(nb);
      }
    }
    for (const n of olds) if (!used.has(n)) n.remove();
  }

  // ------------------------------------------------------------ format

  const enc = encodeURIComponent;
  const nf = new Intl.NumberFormat('en-US');
  const fmtInt = (n) => (n === null || n === undefined ? '–' : nf.format(n));
  const now = () => Date.now() + S.clockOffset; // the server's clock, near enough

  function pad2(n) { return String(n).padStart(2, '0'); }

  function fmtTimeMs(ms) {
    if (ms === null || ms === undefined) return '–';
    const d = new Date(ms);
    const today = new Date();
    const hms = `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`;
    if (d.toDateString() === today.toDateString()) return hms;
    return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())} ${hms}`;
  }
  const fmtTime = (s) => (s === null || s === undefined ? '–' : fmtTimeMs(s * 1000));
  const isoMs = (ms) => (ms === null || ms === undefined ? null : new Date(ms).toISOString());
  const iso = (s) => (s === null || s === undefined ? null : isoMs(s * 1000));

  function fmtAge(s) {
    if (s === null || s === undefined) return '–';
    s = Math.max(0, Math.round(s));
    if (s < 60) return `${s}s`;
    if (s < 3600) return `${Math.floor(s / 60)}m ${pad2(s % 60)}s`;
    if (s < 86400) return `${Math.floor(s / 3600)}h ${pad2(Math.floor(s / 60) % 60)}m`;
    return `${Math.floor(s / 86400)}d ${Math.floor(s / 3600) % 24}h`;
  }

  // A duration in ms, to a tenth of a second under ten seconds.
  function fmtDur(ms) {
    const s = Math.abs(ms) / 1000;
    return s < 10 ? `${s.toFixed(1)}s` : fmtAge(s);
  }

  function countdown(targetMs) {
    if (targetMs === null || targetMs === undefined) return '–';
    const d = targetMs - now();
    return d >= 0 ? `in ${fmtDur(d)}` : `${fmtDur(d)} ago`;
  }

  // How long ago a moment was, in whole seconds: "3s ago".
  function ago(ms) {
    if (ms === null || ms === undefined) return '–';
    const s = Math.floor((now() - ms) / 1000);
    return s < 1 ? 'just now' : `${fmtAge(s)} ago`;
  }

  // A payload in full, for an expanded row or an editor.
  function pretty(v, b64) {
    if (b64) return `(not JSON: ${b64.length} base64 characters)\n${b64}`;
    return JSON.stringify(v === undefined ? null : v, null, 2);
  }

  function preview(v, b64) {
    if (b64) return `base64 ${b64.length > 40 ? b64.slice(0, 40) + '…' : b64}`;
    let s;
    try { s = JSON.stringify(v); } catch (e) { s = String(v); }
    if (s === undefined) s = 'null';
    return s.length > 80 ? s.slice(0, 80) + '…' : s;
  }

  function ownerColour(owner) {
    if (!S.owners.has(owner)) S.owners.set(owner, PALETTE[S.owners.size % PALETTE.length]);
    return S.owners.get(owner);
  }

  // --------------------------------------------------------------- API

  class ApiFailure extends Error {
    constructor(message, status, code) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  function noteClock(res) {
    const date = res.headers.get('Date');
    if (!date) return;
    const server = Date.parse(date);
    if (Number.isNaN(server)) return;
    // The header has whole seconds: trust it only past that.
    const off = server + 500 - Date.now();
    S.clockOffset = Math.abs(off) > 1500 ? off : 0;
  }

  async function api(method, path, body) {
    const opts = { method, credentials: 'same-origin', cache: 'no-store', headers: { Accept: 'application/json' } };
    if (method !== 'GET') {
      opts.headers['Content-Type'] = 'application/json';
      opts.body = JSON.stringify(body === undefined ? {} : body);
    }
    let res;
    try {
      res = await fetch(path, opts);
    } catch (e) {
      throw new ApiFailure(`the server does not answer (${e.message})`, 0, 'network');
    }
    noteClock(res);
    const text = await res.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
    if (!res.ok) {
      const err = data && data.error;
      throw new ApiFailure(err && err.message ? err.message : `${res.status} ${res.statusText}`,
        res.status, err && err.code);
    }
    return data;
  }

  function qs(params) {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined && v !== '') p.set(k, String(v));
    const s = p.toString();
    return s ? `?${s}` : '';
  }

  // Jobs finished per queue, as the store counts them on every ack, retry
  // and failure (any worker, any process, any HTTP client), in buckets.
  async function fetchThroughput() {
    const t = await api('GET', '/api/v1/throughput' + qs({ window_s: WINDOW_MS / 1000 + 60 }));
    const byQueue = new Map();
    for (const b of t.buckets) {
      if (!byQueue.has(b.queue)) byQueue.set(b.queue, []);
      byQueue.get(b.queue).push(b);
    }
    // The store's clock beside this page's: bucket times are drawn on the page's.
    S.tp = { now: t.now, at: Date.now(), bucketS: t.bucket_s, byQueue, totals: new Map(t.totals.map((x) => [x.queue, x])) };
  }

  function chartSpan() {
    return CHART_SPANS.find((x) => x.key === S.chartSpan) || CHART_SPANS[0];
  }

  // The queue charted now (null: none).
  function chartedQueue() {
    if (S.route.view === 'queue') return S.route.q;
    return S.route.view === 'queues' ? S.chartQueue : null;
  }

  // Over a span longer than the page's own samples: the store's depth
  // samples and throughput buckets for the charted queue.
  async function fetchHistory() {
    const span = chartSpan();
    const q = chartedQueue();
    if (span.key === '5m' || !q) return;
    const key = `${span.key}|${q}`;
    if (S.history && S.history.key === key && Date.now() - S.history.at < HISTORY_EVERY_MS) return;
    const windowS = span.ms / 1000;
    const [depth, tp] = await Promise.all([
      api('GET', '/api/v1/depth' + qs({ queue: q, window_s: windowS })),
      api('GET', '/api/v1/throughput' + qs({ queue: q, window_s: Math.min(604800, windowS + COARSE_S) })),
    ]);
    S.history = {
      key, at: Date.now(), depth: depth.samples.filter((x) => x.queue === q),
      tp: { now: tp.now, at: Date.now(), bucketS: tp.bucket_s, buckets: tp.buckets.filter((b) => b.queue === q) },
    };
    S.historyError = null;
  }

  function record(queues) {
    const t = Date.now();
    for (const q of queues) {
      let hs = S.hist.get(q.queue);
      if (!hs) { hs = []; S.hist.set(q.queue, hs); }
      hs.push({
        t, ready: q.ready, processing: q.processing, dead: q.dead,
      });
    }
    for (const [q, hs] of S.hist) {
      while (hs.length && hs[0].t < t - WINDOW_MS - 10000) hs.shift();
      if (!hs.length) S.hist.delete(q);
    }
  }

  // -------------------------------------------------------------- poll

  let timer = null;
  let running = false;
  let again = false;

  async function tick() {
    if (running) { again = true; return; }
    running = true;
    clearTimeout(timer);
    const started = performance.now();
    try {
      await poll();
    } finally {
      running = false;
      render();
      if (again) {
        again = false;
        timer = setTimeout(tick, 0);
      } else {
        timer = setTimeout(tick, Math.max(100, POLL_MS - (performance.now() - started)));
      }
    }
  }

  async function poll() {
    const key = S.routeKey;
    const errors = [];
    const core = Promise.all([api('GET', '/api/v1/queues'), api('GET', '/api/v1/groups'), fetchThroughput()])
      .then(([list, groups]) => {
        S.queues = list.queues;
        S.groups = groups.groups;
        record(list.queues);
      })
      .catch((e) => errors.push(e));
    const procs = api('GET', '/api/v1/processes')
      .then((r) => { S.procs = r.processes; S.procsError = null; })
      .catch((e) => {
        // A server without the process registry answers 404: say so on its page only.
        if (e.status === 404) { S.procs = null; S.procsError = e; } else errors.push(e);
      });
    const store = S.store && Date.now() - S.storeAt < STORE_EVERY_MS ? null
      : api('GET', '/api/v1/store').then((r) => { S.store = r; S.storeAt = Date.now(); }).catch(() => {});
    const history = fetchHistory().catch((e) => {
      S.historyError = e;
      if (e.status !== 404) errors.push(e);
    });
    const view = pollView(key).catch((e) => {
      if (S.routeKey === key) S.viewError = e;
      if (!(e.status >= 400 && e.status < 500) || e.status === 401) errors.push(e);
    });
    await Promise.all([core, procs, store, history, view]);
    setStatus(errors[0] || null);
  }

  async function pollView(key) {
    const r = S.route;
    let data;
    switch (r.view) {
      case 'queue':
        data = await api('GET', `/api/v1/queues/${enc(r.q)}/jobs` +
          qs({ limit: JOBS_PAGE, state: S.jobsState, after_id: S.after }));
        break;
      case 'job':
        if (!/^\d+$/.test(r.id)) throw new ApiFailure(`${r.id} is not a job id`, 400, 'invalid_input');
        data = await api('GET', `/api/v1/jobs/${enc(r.id)}`);
        break;
      case 'dead':
        if (r.q === null) return;
        data = await api('GET', `/api/v1/queues/${enc(r.q)}/dead` + qs({ limit: DEAD_PAGE, after_id: S.after }));
        break;
      case 'groupDead': {
        const page = await api('GET', `/api/v1/groups/${enc(r.g)}/dead` + qs({ limit: DEAD_PAGE, after: S.after }));
        data = { dead: page.dead, next_after_id: page.next_after };
        break;
      }
      case 'streams': {
        const [list, groups] = await Promise.all([api('GET', '/api/v1/streams'), groupsWithStatus(null)]);
        data = { streams: list.streams, groups };
        break;
      }
      case 'stream': {
        // The page read is stamped with what it asked for: a click on Next
        // must not show the previous page's answer arriving late.
        const at = { after: S.ev.after, limit: S.ev.limit };
        const [info, page, groups] = await Promise.all([
          api('GET', `/api/v1/streams/${enc(r.s)}`),
          api('GET', `/api/v1/streams/${enc(r.s)}/events` + qs(at)),
          groupsWithStatus(r.s),
        ]);
        data = { info, page: Object.assign(page, { at }), groups };
        break;
      }
      case 'groups':
        data = await groupsWithStatus(null);
        await fetchHandoffs(data.map((g) => g.info.group));
        break;
      case 'processes':
        return; // S.procs, polled with the queues
      case 'jobs': {
        // A bad filter (`where`) is the list's error; the counts still show.
        const [counts, page] = await Promise.all([
          api('GET', '/api/v1/jobs/counts' + qs({ queue: r.queue })),
          api('GET', '/api/v1/jobs' + qs({ state: r.state, queue: r.queue, tag: r.tag, where: r.where, after_id: S.after, limit: JOBS_PAGE }))
            .catch((e) => { if (e.status === 400) return { listError: e }; throw e; }),
        ]);
        data = page.listError ? { counts, listError: page.listError } : { counts, jobs: page.jobs, next_after_id: page.next_after_id };
        break;
      }
      case 'schedules': {
        const list = await api('GET', '/api/v1/schedules');
        const open = list.schedules.filter((x) => S.firesOpen.has(x.name));
        const fires = await Promise.all(open.map((x) =>
          api('GET', `/api/v1/schedules/${enc(x.name)}/fires` + qs({ limit: FIRES })).then((f) => f.fires)
            .catch((e) => (e.status === 404 ? null : Promise.reject(e)))));
        await lookJobs(fires.flat().filter(Boolean).map((f) => f.job_id));
        data = Object.assign(list, { fires: new Map(open.map((x, i) => [x.name, fires[i]])) });
        break;
      }
      case 'locks':
        data = await api('GET', '/api/v1/locks');
        break;
      default:
        return;
    }
    if (S.routeKey === key) {
      S.data = data;
      S.viewError = null;
    }
  }

  // The states of jobs schedules fired, read again after JOB_SEEN_MS; a job
  // gone (acked, on a queue that keeps no completed jobs) stays "finished".
  async function lookJobs(ids) {
    const t = Date.now();
    const due = Array.from(new Set(ids)).filter((id) => {
      const j = S.jobSeen.get(id);
      return !j || (j.state !== 'finished' && t - j.at > JOB_SEEN_MS);
    });
    await Promise.all(due.map((id) => api('GET', `/api/v1/jobs/${id}`)
      .then((j) => S.jobSeen.set(id, { state: j.state, job: j, at: t }))
      .catch((e) => { if (e.status === 404) S.jobSeen.set(id, { state: 'finished', at: t }); })));
  }

  // Every consumer group (or those reading `stream`) with its buckets.
  async function groupsWithStatus(stream) {
    const list = (await api('GET', '/api/v1/groups')).groups.filter((g) => stream === null || g.stream === stream);
    const statuses = await Promise.all(list.map((g) =>
      api('GET', `/api/v1/groups/${enc(g.group)}`).catch((e) => ({ error: e }))));
    return list.map((g, i) => ({ info: g, status: statuses[i] }));
  }

  function setStatus(err) {
    const el = document.getElementById('status');
    const text = document.getElementById('status-text');
    if (err) {
      el.setAttribute('data-state', 'error');
      text.textContent = err.status === 401
        ? 'not signed in: open /?token=<token> once'
        : `error: ${err.message}`;
      text.title = err.message;
    } else {
      S.lastOk = Date.now();
      el.setAttribute('data-state', 'ok');
      text.textContent = `live · ${fmtTimeMs(S.lastOk)}`;
      text.title = 'Polling the API every second';
    }
  }

  let toastTimer = null;
  function toast(message, isError) {
    const el = document.getElementById('toast');
    el.textContent = message;
    el.className = isError ? 'toast error' : 'toast';
    el.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => { el.hidden = true; }, isError ? 6000 : 3000);
  }

  // Run a change, keep its button disabled meanwhile, then poll at once.
  async function act(key, done, fn) {
    if (S.busy.has(key)) return;
    S.busy.add(key);
    render();
    try {
      const r = await fn();
      toast(typeof done === 'function' ? done(r) : done);
    } catch (e) {
      toast(`Failed: ${e.message}`, true);
    } finally {
      S.busy.delete(key);
      tick();
    }
  }

  const plural = (n, one, many) => `${fmtInt(n)} ${n === 1 ? one : many}`;

  function pauseQueue(q, pause) {
    const verb = pause ? 'pause' : 'resume';
    return act(`queue:${q}`, pause ? `Paused ${q}` : `Resumed ${q}`,
      () => api('POST', `/api/v1/queues/${enc(q)}/${verb}`));
  }

  function deadAction(q, verb, ids) {
    const all = ids === null;
    if (all || verb === 'purge') {
      const what = all ? `every dead letter of ${q}` : `dead letter ${ids[0]}`;
      const question = verb === 'purge'
        ? `Delete ${what} for good?`
        : `Requeue ${what} as fresh jobs?`;
      if (!window.confirm(question)) return;
    }
    const key = all ? `dead:${q}:${verb}:all` : `dead:${q}:${verb}:${ids[0]}`;
    return act(key, (r) => `${verb === 'purge' ? 'Purged' : 'Requeued'} ${plural(r.count, 'job', 'jobs')}`,
      async () => {
        const r = await api('POST', `/api/v1/queues/${enc(q)}/dead/${verb}`, all ? {} : { ids });
        if (S.route.view === 'dead' && S.route.q === q && S.data && S.data.jobs) {
          S.data = Object.assign({}, S.data, {
            jobs: all ? [] : S.data.jobs.filter((j) => !ids.includes(j.id)),
          });
        }
        return r;
      });
  }

  // A consumer group's dead letters, by offset (null: all of the group's).
  function groupDeadAction(g, verb, offsets) {
    const all = offsets === null;
    if (all || verb === 'purge') {
      const what = all ? `every dead letter of group ${g}` : `dead letter ${offsets[0]} of group ${g}`;
      const question = verb === 'purge'
        ? `Delete ${what} for good? (The events stay in the stream.)`
        : `Run ${what} again? (The worker holding its bucket takes it.)`;
      if (!window.confirm(question)) return;
    }
    const key = all ? `gdead:${g}:${verb}:all` : `gdead:${g}:${verb}:${offsets[0]}`;
    return act(key, (r) => `${verb === 'purge' ? 'Purged' : 'Requeued'} ${plural(r.count, 'dead letter', 'dead letters')}`,
      async () => {
        const r = await api('POST', `/api/v1/groups/${enc(g)}/dead/${verb}`, all ? {} : { offsets });
        if (verb === 'purge' && S.route.view === 'groupDead' && S.route.g === g && S.data && S.data.dead) {
          S.data = Object.assign({}, S.data, {
            dead: all ? [] : S.data.dead.filter((d) => !offsets.includes(d.offset)),
          });
        }
        return r;
      });
  }

  // ------------------------------------------------------------ router

  function parseRoute() {
    // Names in the path are percent-encoded, so a bare `?` starts a query.
    const [path, query] = splitOnce(location.hash.replace(/^#\/?/, ''), '?');
    const params = new URLSearchParams(query);
    const parts = path.split('/').filter(Boolean).map((p) => {
      try { return decodeURIComponent(p); } catch (e) { return p; }
    });
    const [v, arg] = parts;
    switch (v) {
      case 'queues': return arg !== undefined ? { view: 'queue', q: arg } : { view: 'queues' };
      case 'jobs': return arg !== undefined ? { view: 'job', id: arg } : {
        view: 'jobs', state: params.get('state') || '', queue: params.get('queue') || '', tag: params.get('tag') || '',
        where: params.get('where') || '',
      };
      case 'dead': return { view: 'dead', q: arg !== undefined ? arg : null };
      case 'group-dead': return arg !== undefined ? { view: 'groupDead', g: arg } : { view: 'dead', q: null };
      case 'streams': return arg !== undefined ? { view: 'stream', s: arg } : { view: 'streams' };
      case 'processes': case 'groups': case 'schedules': case 'locks': return { view: v };
      default: return { view: 'queues' };
    }
  }

  function splitOnce(s, sep) {
    const i = s.indexOf(sep);
    return i < 0 ? [s, ''] : [s.slice(0, i), s.slice(i + 1)];
  }

  function onRoute() {
    S.route = parseRoute();
    S.routeKey = JSON.stringify(S.route);
    S.data = null;
    S.viewError = null;
    S.cursor = [];
    S.after = null;
    S.jobsState = '';
    S.ev = evState();
    S.edit = null;
    S.sel.clear();
    S.selAll = false;
    S.firesOpen.clear();
    if (S.route.view === 'queue') S.chartQueue = S.route.q;
    render();
    tick();
  }

  function page(delta) {
    if (delta > 0 && S.data && S.data.next_after_id !== undefined && S.data.next_after_id !== null) {
      S.cursor.push(S.after);
      S.after = S.data.next_after_id;
    } else if (delta < 0 && S.cursor.length) {
      S.after = S.cursor.pop();
    } else if (delta === 0) {
      S.cursor = [];
      S.after = null;
    } else {
      return;
    }
    S.data = null;
    render();
    tick();
  }

  // ------------------------------------------------------------- views

  const NAV_OF = { queues: 'queues', queue: 'queues', job: 'jobs', dead: 'dead', groupDead: 'dead', stream: 'streams' };

  function updateNav() {
    const active = NAV_OF[S.route.view] || S.route.view;
    for (const a of document.querySelectorAll('#nav a')) {
      a.classList.toggle('active', a.getAttribute('data-view') === active);
    }
    const badge = document.getElementById('nav-dead-count');
    // Jobs' dead letters and consumer groups' alike.
    const dead = (S.queues || []).reduce((n, q) => n + q.dead, 0) +
      (S.groups || []).reduce((n, g) => n + (g.dead || 0), 0);
    badge.hidden = dead === 0;
    badge.textContent = fmtInt(dead);
    const live = (S.procs || []).filter((p) => p.alive).length;
    const procBadge = document.getElementById('nav-process-count');
    procBadge.hidden = S.procs === null;
    procBadge.textContent = fmtInt(live);
    procBadge.title = `${plural(live, 'live process', 'live processes')}`;
    updateStore();
  }

  // Which store the page shows, in the top bar: engine, where, schema.
  function updateStore() {
    const el = document.getElementById('store');
    const st = S.store;
    const holder = document.createElement('div');
    if (st) {
      holder.appendChild(h('span', { class: `engine ${st.engine}`, testid: 'store-engine', text: st.engine }));
      holder.appendChild(h('span', { class: 'loc mono', testid: 'store-location', text: shortLocation(st.location) }));
      if (st.schema) holder.appendChild(h('span', { class: 'schema', testid: 'store-schema' }, 'schema ', h('span', { class: 'mono', text: st.schema })));
      el.title = `${st.engine} store: ${st.location}${st.schema ? ` (schema ${st.schema})` : ''} · alkstore ${st.version}`;
      el.setAttribute('data-engine', st.engine);
      document.title = `alkstore · ${st.engine} ${tailOf(st.location)}`;
    } else {
      holder.appendChild(h('span', { class: 'loc sub', text: 'store…' }));
    }
    morphChildren(el, holder);
  }

  // A long location keeps its end (a file's name, a database's name).
  function shortLocation(loc) {
    return loc.length > 56 ? `…${loc.slice(-55)}` : loc;
  }

  function tailOf(loc) {
    const m = /[^/]+\/?$/.exec(loc.replace(/[?#].*$/, ''));
    return m ? m[0] : loc;
  }

  function render() {
    updateNav();
    let tree;
    try {
      tree = renderView();
    } catch (e) {
      tree = h('div', { class: 'panel' }, h('div', { class: 'empty', text: `Could not draw this view: ${e.message}` }));
    }
    const holder = document.createElement('main');
    holder.appendChild(h('div', { key: S.routeKey, class: 'page', 'data-view': S.route.view }, tree));
    morphChildren(document.getElementById('view'), holder);
    for (const c of document.querySelectorAll('canvas[data-chart]')) drawChart(c, c.getAttribute('data-chart'));
  }

  function renderView() {
    switch (S.route.view) {
      case 'queue': return viewQueue(S.route.q);
      case 'job': return viewJob(S.route.id);
      case 'dead': return S.route.q === null ? viewDeadIndex() : viewDead(S.route.q);
      case 'groupDead': return viewGroupDead(S.route.g);
      case 'streams': return viewStreams();
      case 'stream': return viewStream(S.route.s);
      case 'processes': return viewProcesses();
      case 'jobs': return viewJobs();
      case 'groups': return viewGroups();
      case 'schedules': return viewSchedules();
      case 'locks': return viewLocks();
      default: return viewQueues();
    }
  }

  function loading() {
    if (S.viewError) {
      const e = S.viewError;
      let text = e.status === 404 ? `Not found: ${e.message}` : `Error: ${e.message}`;
      if (e.status === 404 && S.route.view === 'job') {
        // As `alk job` says it: an acked job is gone unless its queue keeps it.
        text = `Job ${S.route.id} is not in the store. A job that finished is deleted when it is acked, ` +
          'unless its queue keeps completed jobs (keep_completed); dead letters are deleted after their retention.';
      }
      return h('div', { class: 'panel', testid: 'view-error' }, h('div', { class: 'empty', text }));
    }
    return h('div', { class: 'panel' }, h('div', { class: 'empty', text: 'Loading…' }));
  }

  // A table that scrolls sideways inside its panel when the window is narrow.
  function table(attrs, ...kids) {
    return h('div', { class: 'tscroll' }, h('table', attrs, ...kids));
  }

  function num(value, testid, hotWhenPositive) {
    const cls = value === 0 ? 'num zero' : hotWhenPositive && value > 0 ? 'num hot' : 'num';
    return h('td', { class: cls, testid, text: fmtInt(value) });
  }

  function pausedPill(paused) {
    return paused
      ? h('span', { class: 'pill paused', text: 'paused' })
      : h('span', { class: 'pill live', text: 'running' });
  }

  function pauseButton(q, paused) {
    const busy = S.busy.has(`queue:${q}`);
    return paused
      ? h('button', { testid: 'queue-resume', disabled: busy, onclick: (ev) => { ev.stopPropagation(); pauseQueue(q, false); }, text: 'Resume' })
      : h('button', { testid: 'queue-pause', disabled: busy, onclick: (ev) => { ev.stopPropagation(); pauseQueue(q, true); }, text: 'Pause' });
  }

  // 1. Queues: counts and a chart.
  function viewQueues() {
    const queues = S.queues;
    if (queues === null) return loading();
    if (!S.chartQueue || !queues.some((q) => q.queue === S.chartQueue)) {
      const busiest = queues.slice().sort((a, b) => (b.ready + b.processing) - (a.ready + a.processing))[0];
      S.chartQueue = busiest ? busiest.queue : null;
    }
    const totals = queues.reduce((t, q) => {
      t.ready += q.ready; t.processing += q.processing; t.dead += q.dead; t.scheduled += q.scheduled;
      return t;
    }, { ready: 0, processing: 0, dead: 0, scheduled: 0 });
    return [
      h('div', { class: 'head' },
        h('h1', { text: 'Queues' }),
        h('span', { class: 'sub', text: `${plural(queues.length, 'queue', 'queues')} · counts polled every second` })),
      h('div', { class: 'tiles' },
        tile('Ready', totals.ready, null, jobsHash({ state: 'pending' })),
        tile('Scheduled', totals.scheduled, null, jobsHash({ state: 'scheduled' })),
        tile('Processing', totals.processing, null, jobsHash({ state: 'running' })),
        tile('Dead', totals.dead, null, jobsHash({ state: 'dead' }))),
      h('div', { class: 'panel' },
        queues.length === 0
          ? h('div', { class: 'empty', text: 'No queues yet: enqueue a job with POST /api/v1/queues/{queue}/jobs.' })
          : table({ testid: 'queues-table' },
            h('thead', null, h('tr', null,
              h('th', { text: 'Queue' }), h('th', { class: 'num', text: 'Ready' }),
              h('th', { class: 'num', text: 'Scheduled' }), h('th', { class: 'num', text: 'Processing' }),
              h('th', { class: 'num', text: 'Expired claims' }), h('th', { class: 'num', text: 'Dead' }),
              h('th', { class: 'num', text: 'Completed' }), h('th', { class: 'num', text: 'Oldest ready' }),
              h('th', { text: 'State' }), h('th', null))),
            h('tbody', null, queues.map(queueRow)))),
      queues.length ? chartPanel(S.chartQueue, true) : null,
    ];
  }

  // A count; with `href`, a link to the jobs it counts.
  function tile(k, v, testid, href) {
    return h(href ? 'a' : 'div', { class: href ? 'tile pick' : 'tile', testid, href, title: href ? `List them: ${k.toLowerCase()} jobs` : null },
      h('div', { class: 'k', text: k }), h('div', { class: 'v', text: fmtInt(v) }));
  }

  // A queue's all-time count of finished jobs (`completed` or `failed`).
  function totalOf(q, key) {
    const t = S.tp && S.tp.totals.get(q);
    return t ? t[key] : 0;
  }

  function queueRow(q) {
    return h('tr', {
      key: q.queue, testid: 'queue-row', 'data-queue': q.queue, 'data-paused': String(q.paused),
      class: q.queue === S.chartQueue ? 'selected' : null,
      title: 'Click to chart this queue',
      onclick: (ev) => {
        if (ev.target.closest('a,button')) return;
        S.chartQueue = q.queue;
        render();
      },
    },
    h('td', null, h('a', { class: 'mono', href: `#/queues/${enc(q.queue)}`, text: q.queue })),
    num(q.ready, 'count-ready'),
    num(q.scheduled, 'count-scheduled'),
    num(q.processing, 'count-processing'),
    num(q.expired_claims, 'count-expired-claims', true),
    h('td', { class: q.dead > 0 ? 'num hot' : 'num zero', testid: 'count-dead' },
      q.dead > 0 ? h('a', { href: `#/dead/${enc(q.queue)}`, text: fmtInt(q.dead) }) : '0'),
    num(q.completed, 'count-completed'),
    h('td', { class: 'num', testid: 'oldest-ready', text: fmtAge(q.oldest_ready_age_s) }),
    h('td', { testid: 'queue-state' }, pausedPill(q.paused)),
    h('td', { class: 'actions' }, pauseButton(q.queue, q.paused)));
  }

  const SERIES = [
    { key: 'ready', label: 'ready', colour: '--ready', fill: true },
    { key: 'processing', label: 'processing', colour: '--processing' },
    { key: 'dead', label: 'dead', colour: '--dead' },
  ];

  function chartPanel(q, selector) {
    const hasRate = hasRateSeries();
    const names = (S.queues || []).map((x) => x.queue);
    return h('div', { class: 'panel', testid: 'chart-panel' },
      h('div', { class: 'panel-head' },
        h('h2', { testid: 'chart-title', text: chartSpan().label }),
        h('div', { class: 'tabs small', testid: 'chart-spans', 'aria-label': 'Span of the chart' }, CHART_SPANS.map((x) => h('button', {
          key: x.key, class: x.key === S.chartSpan ? 'on' : null, 'data-span': x.key, text: x.key,
          onclick: () => { S.chartSpan = x.key; S.history = null; S.historyError = null; render(); tick(); },
        }))),
        selector
          ? h('select', {
            testid: 'chart-queue', selected: q, 'aria-label': 'Queue to chart',
            onchange: (ev) => { S.chartQueue = ev.target.value; render(); },
          }, names.map((n) => h('option', { key: n, value: n, text: n })))
          : h('span', { class: 'mono', text: q }),
        h('span', { class: 'spacer' }),
        h('div', { class: 'legend' },
          SERIES.map((s) => h('span', { key: s.key }, h('span', { class: 'sw', style: { '--sw': `var(${s.colour})` } }), s.label)),
          h('span', { key: 'rate', class: hasRate ? null : 'off' },
            h('span', { class: 'sw dash', style: { '--sw': 'var(--rate)' } }),
            'completed/s'),
          h('span', { key: 'failed', class: hasRate ? null : 'off' },
            h('span', { class: 'sw dash', style: { '--sw': 'var(--dead)' } }),
            'failed/s'))),
      h('div', { class: 'panel-body' },
        h('div', { class: 'chart-wrap' },
          h('canvas', { key: `chart:${q}`, 'data-chart': q, 'data-keep': '', testid: 'chart',
            'aria-label': `Depth of ${q} by state: ${chartSpan().label.toLowerCase()}`,
            onmousemove: (ev) => {
              const r = ev.target.getBoundingClientRect();
              S.hover = { q, x: ev.clientX - r.left };
              drawChart(ev.target, q);
            },
            onmouseleave: (ev) => { S.hover = null; drawChart(ev.target, q); },
          })),
        h('div', { class: 'note', testid: 'rate-note', text: rateNote(hasRate) })));
  }

  function hasRateSeries() {
    return S.tp !== null;
  }

  function rateNote(hasRate) {
    if (!hasRate) return 'completed/s, failed/s: not read yet.';
    const span = chartSpan();
    const counted = 'completed/s and failed/s (right axis): counted by the store on every ack, retry and failure ' +
      '— every worker of every process and every HTTP client — ';
    if (span.key === '5m') return `${counted}in ${S.tp.bucketS}-second buckets.`;
    if (S.historyError) return `This server keeps no history (${S.historyError.message}).`;
    return `${counted}in ${S.tp.bucketS}-second buckets within the last hour, 5-minute ones before. ` +
      'Depth: sampled by the store\u2019s maintenance sweep (about once a minute while a worker runs), then this page\u2019s own samples.';
  }

  // An axis from 0 in three to five round steps (whole ones for counts).
  function niceAxis(v, whole) {
    if (!(v > 0)) v = whole ? 4 : 1;
    if (whole) v = Math.max(v, 4);
    const raw = v / 5;
    const e = Math.pow(10, Math.floor(Math.log10(raw)));
    let step = 10 * e;
    for (const m of [1, 2, 2.5, 5, 10]) {
      if (m * e >= raw && (!whole || Number.isInteger(m * e))) { step = m * e; break; }
    }
    if (whole) step = Math.max(1, Math.round(step));
    return { max: step * Math.ceil(v / step), step };
  }

  function fmtAxis(v) {
    if (v >= 1e6) return `${+(v / 1e6).toFixed(1)}M`;
    if (v >= 1e4) return `${+(v / 1e3).toFixed(1)}k`;
    if (v >= 100 || Number.isInteger(v)) return nf.format(Math.round(v));
    return String(+v.toFixed(2));
  }

  // Per-second rates from the store's buckets (start, completed, failed;
  // an absent bucket finished nothing): one point at each bucket's end over
  // the window, and the bucket still filling at now once 3 s of it passed.
  // `now` is the store's clock (s), `localNow` the page's at that moment (ms).
  function rates(buckets, now, bucketS, localNow) {
    const by = new Map(buckets.map((b) => [b.start, b]));
    const cur = Math.floor(now / bucketS) * bucketS;
    const first = Math.floor((now - WINDOW_MS / 1000) / bucketS) * bucketS;
    const out = [];
    for (let start = first; start <= cur; start += bucketS) {
      const b = by.get(start) || { completed: 0, failed: 0 };
      const end = Math.min(start + bucketS, now);
      const span = end - start;
      if (span < 3) continue;
      out.push({ t: localNow - (now - end) * 1000, v: b.completed / span, f: b.failed / span });
    }
    return out;
  }

  function ratesOf(q) {
    if (!S.tp) return [];
    return rates(S.tp.byQueue.get(q) || [], S.tp.now, S.tp.bucketS, S.tp.at);
  }

  // Per-second rates over a long span from buckets of mixed sizes (each its
  // `span_s`: fine within the last hour, COARSE_S before; an absent bucket
  // finished nothing), one point at each bucket's end from `fromS` to `now`.
  function ratesOver(buckets, now, bucketS, localNow, fromS) {
    const by = new Map(buckets.map((b) => [b.start, b]));
    const fineFrom = now - 3600 - COARSE_S;
    const out = [];
    let start = Math.floor(fromS / COARSE_S) * COARSE_S;
    while (start <= now) {
      const b = by.get(start);
      const step = b && b.span_s ? b.span_s : start >= fineFrom ? bucketS : COARSE_S;
      const end = Math.min(start + step, now);
      if (end - start >= 3) {
        out.push({ t: localNow - (now - end) * 1000, v: (b ? b.completed : 0) / (end - start), f: (b ? b.failed : 0) / (end - start) });
      }
      start += step;
    }
    return out;
  }

  // What a chart draws: depth samples and rates over its span (null: the
  // history is not read yet).
  function chartData(q, span, t0) {
    if (span.key === '5m') {
      return { samples: (S.hist.get(q) || []).filter((x) => x.t >= t0 - GAP_MS), rates: ratesOf(q), stored: 0 };
    }
    const hs = S.history;
    if (!hs || hs.key !== `${span.key}|${q}`) return null;
    // Store times are the store's clock: drawn on this page's.
    const stored = hs.depth.map((x) => ({ t: x.at * 1000 - S.clockOffset, ready: x.ready, processing: x.processing, dead: x.dead }));
    const last = stored.length ? stored[stored.length - 1].t : -Infinity;
    const live = (S.hist.get(q) || []).filter((x) => x.t > last + 1000);
    const tp = hs.tp;
    return {
      samples: stored.filter((x) => x.t >= t0 - span.gap).concat(live),
      rates: ratesOver(tp.buckets, tp.now, tp.bucketS, tp.at, tp.now - span.ms / 1000),
      stored: stored.length,
      storedReady: stored.length ? stored[stored.length - 1].ready : null,
    };
  }

  function drawChart(canvas, q) {
    const rect = canvas.getBoundingClientRect();
    const W = Math.max(1, Math.round(rect.width));
    const H = Math.max(1, Math.round(rect.height));
    const dpr = window.devicePixelRatio || 1;
    if (canvas.width !== Math.round(W * dpr) || canvas.height !== Math.round(H * dpr)) {
      canvas.width = Math.round(W * dpr);
      canvas.height = Math.round(H * dpr);
    }
    const ctx = canvas.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    const css = getComputedStyle(document.documentElement);
    const col = (n) => css.getPropertyValue(n).trim() || '#888';
    const span = chartSpan();
    const t1 = Date.now();
    const t0 = t1 - span.ms;
    const data = chartData(q, span, t0) || { samples: [], rates: [], stored: 0, loading: true };
    const samples = data.samples;
    const rs = data.rates.filter((r) => r.t >= t0);
    // For the browser test: what was drawn.
    canvas.setAttribute('data-span', span.key);
    canvas.setAttribute('data-points', String(samples.length));
    canvas.setAttribute('data-stored', String(data.stored));
    canvas.setAttribute('data-stored-ready', data.storedReady === null || data.storedReady === undefined ? '' : String(data.storedReady));
    const showRate = hasRateSeries();
    const pad = { l: 52, r: showRate ? 56 : 16, t: 10, b: 22 };
    const pw = W - pad.l - pad.r;
    const ph = H - pad.t - pad.b;
    if (pw < 10 || ph < 10) return;
    let top = 0;
    for (const s of samples) top = Math.max(top, s.ready, s.processing, s.dead);
    const ay = niceAxis(top, true);
    const ar = niceAxis(rs.reduce((m, r) => Math.max(m, r.v, r.f), 0), false);
    const maxY = ay.max;
    const maxR = ar.max;
    const x = (t) => pad.l + ((t - t0) / span.ms) * pw;
    const y = (v) => pad.t + ph - (v / maxY) * ph;
    const yr = (v) => pad.t + ph - (v / maxR) * ph;

    ctx.font = `11px ${col('--mono')}`;
    ctx.lineWidth = 1;
    ctx.strokeStyle = col('--grid');
    ctx.fillStyle = col('--muted');
    ctx.textBaseline = 'middle';
    for (let i = 0; i * ay.step <= maxY + 1e-9; i++) {
      const yy = Math.round(y(i * ay.step)) + 0.5;
      ctx.beginPath(); ctx.moveTo(pad.l, yy); ctx.lineTo(pad.l + pw, yy); ctx.stroke();
      ctx.textAlign = 'right';
      ctx.fillText(fmtAxis(i * ay.step), pad.l - 8, yy);
    }
    if (showRate) {
      // The rate's own scale on the right, in its colour.
      ctx.fillStyle = col('--rate');
      ctx.textAlign = 'left';
      for (let i = 0; i * ar.step <= maxR + 1e-9; i++) {
        ctx.fillText(fmtAxis(i * ar.step), pad.l + pw + 8, Math.round(yr(i * ar.step)) + 0.5);
      }
      ctx.fillStyle = col('--muted');
    }
    ctx.textBaseline = 'top';
    ctx.textAlign = 'center';
    for (let m = Math.round(span.ms / span.tick); m >= 0; m--) {
      const xx = Math.round(x(t1 - m * span.tick)) + 0.5;
      ctx.beginPath(); ctx.moveTo(xx, pad.t); ctx.lineTo(xx, pad.t + ph); ctx.stroke();
      const label = m === 0 ? 'now' : `-${(m * span.tick) / UNIT_MS[span.unit]}${span.unit}`;
      ctx.fillText(label, Math.min(Math.max(xx, pad.l + 12), pad.l + pw - 12), pad.t + ph + 6);
    }

    ctx.save();
    ctx.beginPath();
    ctx.rect(pad.l, pad.t - 1, pw, ph + 2);
    ctx.clip();
    const runs = (pts) => {
      const out = [];
      let cur = [];
      for (let i = 0; i < pts.length; i++) {
        if (i > 0 && pts[i].t - pts[i - 1].t > span.gap) { out.push(cur); cur = []; }
        cur.push(pts[i]);
      }
      if (cur.length) out.push(cur);
      return out;
    };
    for (const s of SERIES) {
      const c = col(s.colour);
      for (const run of runs(samples)) {
        ctx.beginPath();
        run.forEach((p, i) => (i ? ctx.lineTo(x(p.t), y(p[s.key])) : ctx.moveTo(x(p.t), y(p[s.key]))));
        if (run.length === 1) ctx.lineTo(x(run[0].t) + 1, y(run[0][s.key]));
        ctx.strokeStyle = c;
        ctx.lineWidth = 2;
        ctx.lineJoin = 'round';
        ctx.stroke();
        if (s.fill && run.length > 1) {
          ctx.lineTo(x(run[run.length - 1].t), y(0));
          ctx.lineTo(x(run[0].t), y(0));
          ctx.closePath();
          ctx.globalAlpha = 0.12;
          ctx.fillStyle = c;
          ctx.fill();
          ctx.globalAlpha = 1;
        }
      }
    }
    if (showRate) {
      ctx.lineWidth = 2;
      for (const [key, colour, dash] of [['f', '--dead', [2, 3]], ['v', '--rate', [5, 4]]]) {
        ctx.setLineDash(dash);
        ctx.strokeStyle = col(colour);
        ctx.beginPath();
        rs.forEach((p, i) => (i ? ctx.lineTo(x(p.t), yr(p[key])) : ctx.moveTo(x(p.t), yr(p[key]))));
        ctx.stroke();
      }
      ctx.setLineDash([]);
    }
    ctx.restore();

    if (!samples.length) {
      ctx.fillStyle = col('--muted');
      ctx.textAlign = 'center';
      ctx.textBaseline = 'middle';
      const why = span.key === '5m' ? 'collecting samples…'
        : S.historyError ? 'no history on this server'
          : data.loading ? 'reading the store\u2019s history…' : 'no depth samples in this span yet';
      ctx.fillText(why, pad.l + pw / 2, pad.t + ph / 2);
      return;
    }
    // The pointer's crosshair: the nearest sample's values.
    if (S.hover && S.hover.q === q && S.hover.x >= pad.l && S.hover.x <= pad.l + pw) {
      const t = t0 + ((S.hover.x - pad.l) / pw) * span.ms;
      let best = samples[0];
      for (const s of samples) if (Math.abs(s.t - t) < Math.abs(best.t - t)) best = s;
      const xx = Math.round(x(best.t)) + 0.5;
      ctx.strokeStyle = col('--muted');
      ctx.lineWidth = 1;
      ctx.beginPath(); ctx.moveTo(xx, pad.t); ctx.lineTo(xx, pad.t + ph); ctx.stroke();
      let r = null;
      for (const p of rs) if (!r || Math.abs(p.t - t) < Math.abs(r.t - t)) r = p;
      const lines = [fmtTimeMs(best.t)].concat(SERIES.map((s) => `${s.label} ${fmtInt(best[s.key])}`));
      if (showRate) {
        lines.push(`completed/s ${r ? r.v.toFixed(1) : '–'}`);
        lines.push(`failed/s ${r ? r.f.toFixed(1) : '–'}`);
      }
      const bw = 150;
      const bh = lines.length * 16 + 8;
      const bx = xx + 10 + bw > pad.l + pw ? xx - 10 - bw : xx + 10;
      ctx.fillStyle = col('--panel');
      ctx.strokeStyle = col('--border');
      ctx.fillRect(bx, pad.t + 4, bw, bh);
      ctx.strokeRect(bx + 0.5, pad.t + 4.5, bw, bh);
      ctx.textAlign = 'left';
      ctx.textBaseline = 'top';
      lines.forEach((l, i) => {
        ctx.fillStyle = i === 0 ? col('--muted') : col('--text');
        ctx.fillText(l, bx + 8, pad.t + 9 + i * 16);
      });
    }
  }

  function queueOf(name) {
    return (S.queues || []).find((q) => q.queue === name) || null;
  }

  // A queue: its counts, chart and jobs.
  function viewQueue(name) {
    const q = queueOf(name);
    const states = [['', 'All'], ['pending', 'Waiting'], ['processing', 'Processing'], ['completed', 'Completed']];
    const jobs = S.data && S.data.jobs;
    return [
      h('div', { class: 'crumbs' }, h('a', { href: '#/queues', text: 'Queues' }), ' / ', name),
      h('div', { class: 'head' },
        h('h1', { class: 'mono', text: name }),
        q ? pausedPill(q.paused) : null,
        h('span', { class: 'spacer' }),
        h('a', { href: jobsHash({ queue: name }), testid: 'queue-jobs-link', title: 'its jobs by state, a payload filter, bulk actions', text: 'Jobs by state →' }),
        q && q.dead > 0 ? h('a', { href: `#/dead/${enc(name)}`, text: `${plural(q.dead, 'dead letter', 'dead letters')} →` }) : null,
        q ? pauseButton(name, q.paused) : null),
      q
        ? h('div', { class: 'tiles', testid: 'queue-tiles' },
          tile('Ready', q.ready, null, jobsHash({ state: 'pending', queue: name })),
          tile('Scheduled', q.scheduled, null, jobsHash({ state: 'scheduled', queue: name })),
          q.retryable !== undefined ? tile('of them retryable', q.retryable, 'queue-retryable', jobsHash({ state: 'retryable', queue: name })) : null,
          tile('Processing', q.processing, null, jobsHash({ state: 'running', queue: name })),
          tile('Expired claims', q.expired_claims), tile('Dead', q.dead, null, jobsHash({ state: 'dead', queue: name })),
          q.cancelled !== undefined ? tile('of them cancelled', q.cancelled, 'queue-cancelled', jobsHash({ state: 'cancelled', queue: name })) : null,
          tile('Completed, kept', q.completed, null, jobsHash({ state: 'completed', queue: name })),
          tile('Completed, all time', totalOf(name, 'completed'), 'total-completed'),
          tile('Failed attempts, all time', totalOf(name, 'failed'), 'total-failed'),
          h('div', { class: 'tile' }, h('div', { class: 'k', text: 'Oldest ready' }), h('div', { class: 'v', text: fmtAge(q.oldest_ready_age_s) })))
        : h('div', { class: 'panel' }, h('div', { class: 'empty', text: `No queue ${name} in the list (nothing enqueued on it yet).` })),
      chartPanel(name, false),
      h('div', { class: 'panel' },
        h('div', { class: 'panel-head' },
          h('h2', { text: 'Jobs' }),
          h('div', { class: 'tabs' }, states.map(([v, label]) => h('button', {
            key: v || 'all', class: S.jobsState === v ? 'on' : null, text: label,
            onclick: () => { S.jobsState = v; page(0); },
          }))),
          h('span', { class: 'spacer' }),
          h('span', { class: 'sub', text: 'lowest ids first' }),
          pager()),
        jobs === undefined || jobs === null ? loading()
          : jobs.length === 0 ? h('div', { class: 'empty', text: 'No jobs here.' })
            : table({ testid: 'jobs-table' },
              h('thead', null, h('tr', null,
                h('th', { text: 'Id', title: ID_NOTE }), h('th', { text: 'State' }), h('th', { class: 'num', text: 'Priority' }),
                h('th', { class: 'num', text: 'Attempts' }), h('th', { text: 'Run at' }), h('th', { text: 'Created' }),
                h('th', { text: 'Worker' }), h('th', { text: 'Payload' }), h('th', { text: 'Last error' }))),
              h('tbody', null, jobs.map((j) => h('tr', { key: j.id, testid: 'job-row', 'data-job-id': j.id },
                h('td', null, h('a', { class: 'mono', href: `#/jobs/${j.id}`, testid: 'job-link', text: j.id })),
                h('td', null, statePill(j)),
                h('td', { class: 'num', text: j.priority }),
                h('td', { class: 'num', text: `${j.attempts}/${j.max_attempts}` }),
                h('td', { title: iso(j.run_at), text: fmtTime(j.run_at) }),
                h('td', { title: iso(j.created_at), text: fmtTime(j.created_at) }),
                h('td', { class: 'mono', text: j.worker || '–' }),
                h('td', { class: 'truncate' }, j.tags && j.tags.length ? tagChips(j.tags, j.state) : null,
                  h('span', { class: 'mono', text: preview(j.payload, j.payload_base64) })),
                h('td', { class: 'truncate', title: j.last_error, text: j.last_error || '' })))))),
    ];
  }

  function pager() {
    const d = S.data;
    const hasNext = d && d.next_after_id !== undefined && d.next_after_id !== null;
    if (!hasNext && !S.cursor.length) return null;
    return h('span', null,
      h('button', { disabled: !S.cursor.length, onclick: () => page(-1), text: '← Previous' }),
      h('button', { disabled: !hasNext, onclick: () => page(1), text: 'Next →' }));
  }

  // `retryable`: waiting out a retry's backoff; `scheduled`: a first run due
  // later (the API derives both from a pending job's due time and attempts).
  const STATE_TITLE = {
    pending: 'waiting, due now',
    retryable: 'waiting out the backoff after a failed attempt',
    scheduled: 'waiting for its first run, due later',
  };

  function statePill(j) {
    const cls = {
      dead: 'pill dead', processing: 'pill processing', completed: 'pill completed',
      retryable: 'pill retryable', scheduled: 'pill scheduled',
    }[j.state] || 'pill';
    const label = j.state === 'dead' && j.dead_reason ? `dead · ${j.dead_reason}` : j.state;
    return h('span', { class: cls, testid: 'job-state', 'data-state': j.state, title: STATE_TITLE[j.state] || null, text: label });
  }

  // 2. A job.
  function viewJob(id) {
    const j = S.data;
    const crumbs = h('div', { class: 'crumbs' }, h('a', { href: '#/queues', text: 'Queues' }), ' / ',
      j ? h('a', { href: `#/queues/${enc(j.queue)}`, text: j.queue }) : '…', ' / ', `job ${id}`);
    if (!j) return [crumbs, loading()];
    const busyCancel = S.busy.has(`cancel:${j.id}`);
    const rows = [
      ['Queue', h('a', { class: 'mono', href: `#/queues/${enc(j.queue)}`, text: j.queue })],
      ['State', statePill(j)],
      ['Attempts', h('span', { testid: 'job-attempts', text: `${j.attempts} of ${j.max_attempts}` })],
      ['Priority', String(j.priority)],
      ['Worker', h('span', { class: 'mono', text: j.worker || '–' })],
      ['Unique key', h('span', { class: 'mono', text: j.unique_key || '–' })],
      ['Tags', j.tags && j.tags.length ? tagChips(j.tags, j.state) : '–'],
      ['Meta', j.meta && Object.keys(j.meta).length
        ? h('pre', { class: 'mono meta', testid: 'job-meta', text: JSON.stringify(j.meta, null, 2) }) : '–'],
      ['Created', timeCell(j.created_at)],
      ['Run at', timeCell(j.run_at)],
      j.state === 'processing' ? ['Claim expires', timeCell(j.claim_expires_at)] : null,
      ['Expires', timeCell(j.expires_at)],
      [j.state === 'completed' ? 'Completed at' : 'Died at', timeCell(j.died_at)],
      ['Cancel requested', j.cancel_requested ? 'yes' : 'no'],
    ];
    let payload;
    if (j.payload_base64) payload = `(not JSON: ${j.payload_base64.length} base64 characters)\n${j.payload_base64}`;
    else payload = JSON.stringify(j.payload, null, 2);
    return [
      crumbs,
      h('div', { class: 'head' },
        h('h1', null, 'Job ', h('span', { class: 'mono', testid: 'job-id', text: j.id })),
        statePill(j),
        h('span', { class: 'spacer' }),
        j.state === 'dead'
          ? h('button', { testid: 'job-requeue', class: 'primary', disabled: S.busy.has(`dead:${j.queue}:requeue:${j.id}`),
            onclick: () => deadAction(j.queue, 'requeue', [j.id]), text: 'Requeue' })
          : null,
        ['pending', 'retryable', 'scheduled', 'processing'].includes(j.state)
          ? h('button', { testid: 'job-cancel', class: 'danger', disabled: busyCancel || j.cancel_requested,
            onclick: () => {
              if (!window.confirm(`Cancel job ${j.id}?`)) return;
              act(`cancel:${j.id}`, (r) => `Cancel: ${r.outcome}`, () => api('POST', `/api/v1/jobs/${j.id}/cancel`));
            },
            text: j.cancel_requested ? 'Cancel requested' : 'Cancel' })
          : null,
        ['scheduled', 'retryable'].includes(j.state)
          ? h('button', { testid: 'job-run-now', disabled: S.busy.has(`job:${j.id}`), title: 'Make it due now',
            onclick: () => act(`job:${j.id}`, (r) => (r.changed ? `Job ${j.id} runs now` : `Job ${j.id} had moved on`),
              () => api('POST', '/api/v1/jobs/bulk', { action: 'run_now', ids: [j.id] })),
            text: 'Run now' })
          : null,
        ['pending', 'scheduled', 'retryable', 'dead'].includes(j.state)
          ? h('button', { testid: 'job-delete', class: 'danger', disabled: S.busy.has(`job:${j.id}`),
            onclick: () => {
              if (!window.confirm(`Delete job ${j.id} for good?`)) return;
              act(`job:${j.id}`, (r) => (r.changed ? `Deleted job ${j.id}` : `Job ${j.id} had moved on`),
                () => api('POST', '/api/v1/jobs/bulk', { action: 'delete', ids: [j.id] }));
            },
            text: 'Delete' })
          : null),
      h('div', { class: 'cols' },
        h('div', { class: 'panel' },
          h('div', { class: 'panel-head' }, h('h2', { text: 'Details' })),
          h('div', { class: 'panel-body kv', testid: 'job-details' },
            rows.filter(Boolean).map(([k, v]) => [h('div', { class: 'k', text: k }), h('div', null, v)]))),
        h('div', { class: 'panel' },
          h('div', { class: 'panel-head' }, h('h2', { text: 'Payload' })),
          h('div', { class: 'panel-body' }, h('pre', { class: 'json', testid: 'job-payload', text: payload })))),
      h('div', { class: 'panel' },
        h('div', { class: 'panel-head' }, h('h2', { text: 'Errors' }),
          h('span', { class: 'sub', text: j.errors.length ? plural(j.errors.length, 'failed attempt', 'failed attempts') : '' })),
        j.last_error
          ? h('div', { class: 'panel-body' }, h('div', { class: 'k sub', text: 'Last error' }),
            h('pre', { class: 'json', testid: 'job-last-error', text: j.last_error }))
          : null,
        j.errors.length === 0
          ? h('div', { class: 'empty', text: 'No errors recorded.' })
          : table({ class: 'errors', testid: 'job-errors' },
            h('thead', null, h('tr', null, h('th', { class: 'num', text: 'Attempt' }), h('th', { text: 'At' }), h('th', { text: 'Error' }))),
            h('tbody', null, j.errors.map((e, i) => h('tr', { key: i },
              h('td', { class: 'num', text: e.attempt }),
              h('td', { title: iso(e.at), text: fmtTime(e.at) }),
              h('td', null, h('pre', { class: 'json', text: e.error }))))))),
    ];
  }

  function timeCell(s) {
    if (s === null || s === undefined) return '–';
    return h('span', { title: iso(s) }, fmtTime(s), h('span', { class: 'sub', text: ` (${countdown(s * 1000)})` }));
  }

  // 3. Dead letters.
  function viewDeadIndex() {
    const queues = S.queues;
    if (queues === null) return loading();
    const withDead = queues.filter((q) => q.dead > 0);
    const groupsWithDead = (S.groups || []).filter((g) => g.dead > 0);
    return [
      h('div', { class: 'head' }, h('h1', { text: 'Dead letters' }),
        h('span', { class: 'sub', text: 'jobs that failed for good, expired or were cancelled; events a consumer group gave up on' })),
      h('div', { class: 'panel' },
        h('div', { class: 'panel-head' }, h('h2', { text: 'Queues' })),
        withDead.length === 0
          ? h('div', { class: 'empty', testid: 'dead-none', text: 'No dead letters in any queue.' })
          : table(null,
            h('thead', null, h('tr', null, h('th', { text: 'Queue' }), h('th', { class: 'num', text: 'Dead letters' }))),
            h('tbody', null, withDead.map((q) => h('tr', { key: q.queue, testid: 'dead-queue-row', 'data-queue': q.queue },
              h('td', null, h('a', { class: 'mono', href: `#/dead/${enc(q.queue)}`, text: q.queue })),
              h('td', { class: 'num hot', text: fmtInt(q.dead) })))))),
      h('div', { class: 'panel' },
        h('div', { class: 'panel-head' }, h('h2', { text: 'Consumer groups' })),
        groupsWithDead.length === 0
          ? h('div', { class: 'empty', testid: 'group-dead-none', text: 'No dead letters in any consumer group.' })
          : table(null,
            h('thead', null, h('tr', null, h('th', { text: 'Group' }), h('th', { text: 'Stream' }), h('th', { class: 'num', text: 'Dead letters' }))),
            h('tbody', null, groupsWithDead.map((g) => h('tr', { key: g.group, testid: 'dead-group-row', 'data-group': g.group },
              h('td', null, h('a', { class: 'mono', href: `#/group-dead/${enc(g.group)}`, text: g.group })),
              h('td', { class: 'mono', text: g.stream }),
              h('td', { class: 'num hot', testid: 'dead-group-count', text: fmtInt(g.dead) })))))),
    ];
  }

  function groupOf(name) {
    return (S.groups || []).find((g) => g.group === name) || null;
  }

  // A consumer group's dead letters: the events its handler gave up on.
  function viewGroupDead(name) {
    const g = groupOf(name);
    const dead = S.data && S.data.dead;
    const busyAll = S.busy.has(`gdead:${name}:requeue:all`) || S.busy.has(`gdead:${name}:purge:all`);
    const none = !g || g.dead === 0;
    return [
      h('div', { class: 'crumbs' }, h('a', { href: '#/dead', text: 'Dead letters' }), ' / group ', name),
      h('div', { class: 'head' },
        h('h1', null, 'Dead letters of group ', h('span', { class: 'mono', text: name })),
        h('span', { class: 'pill dead', testid: 'group-dead-count', text: fmtInt(g ? g.dead : 0) }),
        g ? h('span', { class: 'sub' }, 'reads ', h('span', { class: 'mono', text: g.stream })) : null,
        h('span', { class: 'spacer' }),
        h('button', { testid: 'group-dead-requeue-all', disabled: busyAll || none, onclick: () => groupDeadAction(name, 'requeue', null), text: 'Requeue all' }),
        h('button', { testid: 'group-dead-purge-all', class: 'danger', disabled: busyAll || none, onclick: () => groupDeadAction(name, 'purge', null), text: 'Purge all' })),
      h('div', { class: 'panel' },
        h('div', { class: 'panel-head' }, h('h2', { text: 'Lowest offsets first' }),
          h('span', { class: 'sub', text: 'a requeued one runs again on the worker holding its bucket, and is deleted when it succeeds' }),
          h('span', { class: 'spacer' }), pager()),
        dead === undefined || dead === null ? loading()
          : dead.length === 0 ? h('div', { class: 'empty', testid: 'group-dead-empty', text: 'No dead letters in this group.' })
            : table({ testid: 'group-dead-table' },
              h('thead', null, h('tr', null,
                h('th', { class: 'num', text: 'Offset' }), h('th', { class: 'num', text: 'Bucket' }), h('th', { text: 'Key' }),
                h('th', { class: 'num', text: 'Attempts' }), h('th', { text: 'Failed' }), h('th', { text: 'Error' }),
                h('th', { text: 'Payload' }), h('th', null))),
              h('tbody', null, dead.map((d) => h('tr', { key: d.offset, testid: 'group-dead-row', 'data-offset': d.offset, 'data-requeued': String(d.requeued) },
                h('td', { class: 'num', text: d.offset }),
                h('td', { class: 'num', text: d.bucket }),
                h('td', { class: 'mono truncate', text: d.key === null || d.key === undefined ? '–' : d.key }),
                h('td', { class: 'num', text: fmtInt(d.attempts) }),
                h('td', { title: iso(d.failed_at), text: fmtTime(d.failed_at) }),
                h('td', { class: 'truncate', title: d.error, text: d.error }),
                h('td', { class: 'mono truncate', testid: 'group-dead-payload', text: preview(d.payload, d.payload_base64) }),
                h('td', { class: 'actions' },
                  d.requeued ? h('span', { class: 'pill', title: 'waiting for the worker holding its bucket', text: 'requeued' }) : null,
                  h('button', { testid: 'group-dead-requeue', disabled: d.requeued || S.busy.has(`gdead:${name}:requeue:${d.offset}`),
                    onclick: () => groupDeadAction(name, 'requeue', [d.offset]), text: 'Requeue' }),
                  h('button', { testid: 'group-dead-purge', class: 'danger', disabled: S.busy.has(`gdead:${name}:purge:${d.offset}`),
                    onclick: () => groupDeadAction(name, 'purge', [d.offset]), text: 'Purge' }))))))),
    ];
  }

  function viewDead(name) {
    const q = queueOf(name);
    const jobs = S.data && S.data.jobs;
    const busyAll = S.busy.has(`dead:${name}:requeue:all`) || S.busy.has(`dead:${name}:purge:all`);
    const none = !q || q.dead === 0;
    return [
      h('div', { class: 'crumbs' }, h('a', { href: '#/dead', text: 'Dead letters' }), ' / ', name),
      h('div', { class: 'head' },
        h('h1', null, 'Dead letters of ', h('span', { class: 'mono', text: name })),
        h('span', { class: 'pill dead', testid: 'dead-count', text: fmtInt(q ? q.dead : 0) }),
        h('span', { class: 'spacer' }),
        h('button', { testid: 'dead-requeue-all', disabled: busyAll || none, onclick: () => deadAction(name, 'requeue', null), text: 'Requeue all' }),
        h('button', { testid: 'dead-purge-all', class: 'danger', disabled: busyAll || none, onclick: () => deadAction(name, 'purge', null), text: 'Purge all' })),
      h('div', { class: 'panel' },
        h('div', { class: 'panel-head' }, h('h2', { text: 'Lowest ids first' }), h('span', { class: 'spacer' }), pager()),
        jobs === undefined || jobs === null ? loading()
          : jobs.length === 0 ? h('div', { class: 'empty', testid: 'dead-empty', text: 'No dead letters in this queue.' })
            : table({ testid: 'dead-table' },
              h('thead', null, h('tr', null,
                h('th', { text: 'Id', title: ID_NOTE }), h('th', { text: 'Reason' }), h('th', { class: 'num', text: 'Attempts' }),
                h('th', { text: 'Died' }), h('th', { text: 'Last error' }), h('th', { text: 'Payload' }), h('th', null))),
              h('tbody', null, jobs.map((j) => h('tr', { key: j.id, testid: 'dead-row', 'data-job-id': j.id },
                h('td', null, h('a', { class: 'mono', href: `#/jobs/${j.id}`, text: j.id })),
                h('td', null, h('span', { class: 'pill dead', text: j.dead_reason || 'dead' })),
                h('td', { class: 'num', text: `${j.attempts}/${j.max_attempts}` }),
                h('td', { title: iso(j.died_at), text: fmtTime(j.died_at) }),
                h('td', { class: 'truncate', title: j.last_error, text: j.last_error || '–' }),
                h('td', { class: 'truncate' }, j.tags && j.tags.length ? tagChips(j.tags, 'dead') : null,
                  h('span', { class: 'mono', text: preview(j.payload, j.payload_base64) })),
                h('td', { class: 'actions' },
                  h('button', { testid: 'dead-requeue', disabled: S.busy.has(`dead:${name}:requeue:${j.id}`),
                    onclick: () => deadAction(name, 'requeue', [j.id]), text: 'Requeue' }),
                  h('button', { testid: 'dead-purge', class: 'danger', disabled: S.busy.has(`dead:${name}:purge:${j.id}`),
                    onclick: () => deadAction(name, 'purge', [j.id]), text: 'Purge' }))))))),
    ];
  }

  // 4. Streams: each with everything that reads it and how far behind it is;
  // a stream's page browses its events.
  function evState() {
    return { after: 0, limit: 50, cursor: [], key: '', open: new Set(), seeking: false };
  }

  // Who reads `stream`: consumers (saved offsets, and the subscriber
  // processes reading as them), and the consumer groups on it with the
  // processes that are their members.
  function readersOf(stream, consumers, groups) {
    const procs = S.procs || [];
    const prefix = `${stream}/`;
    const longer = knownStreams().filter((x) => x.length > stream.length && x.startsWith(prefix));
    const subs = new Map(); // consumer -> subscriber processes
    for (const p of procs) {
      if (p.kind !== 'subscriber') continue;
      for (const r of p.roles) {
        if (!r.startsWith(prefix) || longer.some((x) => r.startsWith(`${x}/`))) continue;
        const c = r.slice(prefix.length);
        if (!subs.has(c)) subs.set(c, []);
        subs.get(c).push(p);
      }
    }
    const rows = consumers.map((c) => ({ kind: 'consumer', name: c.consumer, c, procs: subs.get(c.consumer) || [] }));
    for (const [name, ps] of subs) {
      if (!consumers.some((c) => c.consumer === name)) rows.push({ kind: 'consumer', name, c: null, procs: ps });
    }
    for (const { info, status } of groups) {
      const role = `${info.group}/${stream}`;
      rows.push({
        kind: 'group', name: info.group, info, status,
        procs: procs.filter((p) => p.kind === 'group' && p.roles.includes(role)),
      });
    }
    return rows;
  }

  // Events a reader has still to handle: a consumer's after its offset, a
  // group's after each bucket's checkpoint (null: not known).
  function readerLag(r) {
    if (r.kind === 'group') return r.status && !r.status.error ? r.status.buckets.reduce((n, b) => n + b.lag, 0) : null;
    return r.c ? r.c.lag : null;
  }

  function viewStreams() {
    const d = S.data;
    if (!d) return loading();
    return [
      h('div', { class: 'head' }, h('h1', { text: 'Streams' }),
        h('span', { class: 'sub', text: 'offsets grow across the whole store; lag counts a stream\u2019s events after a reader\u2019s position' })),
      h('div', { class: 'panel' },
        d.streams.length === 0
          ? h('div', { class: 'empty', text: 'No streams yet: publish with POST /api/v1/streams/{stream}/events.' })
          : table({ testid: 'streams-table' },
            h('thead', null, h('tr', null,
              h('th', { text: 'Stream' }), h('th', { class: 'num', text: 'Head' }), h('th', { class: 'num', text: 'Events' }),
              h('th', { class: 'num', text: 'Consumers' }), h('th', { class: 'num', text: 'Groups' }),
              h('th', { class: 'num', text: 'Live readers', title: 'subscriber and group-member processes alive' }),
              h('th', { class: 'num', text: 'Most behind', title: 'the largest lag of a consumer or a group (all its buckets)' }))),
            h('tbody', null, d.streams.map((s) => streamRow(s, d.groups))))),
    ];
  }

  function streamRow(s, groups) {
    const readers = readersOf(s.stream, s.consumers, groups.filter((g) => g.info.stream === s.stream));
    const lag = readers.reduce((m, r) => Math.max(m, readerLag(r) || 0), 0);
    const live = new Set(readers.flatMap((r) => r.procs.filter((p) => p.alive).map((p) => p.id))).size;
    return h('tr', { key: s.stream, testid: 'stream', 'data-stream': s.stream },
      h('td', null, h('a', { class: 'mono', href: `#/streams/${enc(s.stream)}`, testid: 'stream-link', text: s.stream })),
      h('td', { class: 'num', testid: 'stream-head', text: s.head === null || s.head === undefined ? '–' : s.head }),
      num(s.events, 'stream-events'),
      num(s.consumers.length, 'stream-consumers'),
      num(readers.filter((r) => r.kind === 'group').length, 'stream-groups'),
      num(live, 'stream-live'),
      h('td', { class: lag > 0 ? 'num hot' : 'num zero', testid: 'stream-lag', text: fmtInt(lag) }));
  }

  function viewStream(name) {
    const d = S.data;
    const crumbs = h('div', { class: 'crumbs' }, h('a', { href: '#/streams', text: 'Streams' }), ' / ', name);
    if (!d) return [crumbs, loading()];
    const info = d.info;
    const readers = readersOf(name, info.consumers, d.groups);
    return [
      crumbs,
      h('div', { class: 'head' },
        h('h1', { class: 'mono', text: name }),
        h('span', { class: 'sub' }, 'head ', h('span', { class: 'mono', testid: 'stream-head', text: info.head === null || info.head === undefined ? '–' : info.head })),
        h('span', { class: 'sub' }, 'events ', h('span', { class: 'mono', testid: 'stream-events', text: fmtInt(info.events) })),
        h('span', { class: 'sub' }, 'readers ', h('span', { class: 'mono', testid: 'stream-readers', text: fmtInt(readers.length) }))),
      readersPanel(readers),
      eventsPanel(name, d),
    ];
  }

  function readersPanel(readers) {
    return h('div', { class: 'panel', testid: 'readers' },
      h('div', { class: 'panel-head' }, h('h2', { text: 'Readers' }),
        h('span', { class: 'sub', text: 'consumers with a saved offset, consumer groups, and the processes reading' })),
      readers.length === 0
        ? h('div', { class: 'empty', testid: 'readers-empty', text: 'Nothing reads this stream: no consumer saved an offset and no consumer group reads it.' })
        : table({ testid: 'readers-table' },
          h('thead', null, h('tr', null,
            h('th', { text: 'Reader' }), h('th', { text: 'Kind' }),
            h('th', { class: 'num', text: 'Position', title: 'a consumer\u2019s saved offset; a group\u2019s lowest and highest bucket checkpoint' }),
            h('th', { class: 'num', text: 'Lag' }), h('th', { text: 'Progress' }), h('th', { text: 'Processes' }))),
          h('tbody', null, readers.map((r) => (r.kind === 'group' ? groupReaderRow(r) : consumerRow(r))))));
  }

  function consumerRow(r) {
    const c = r.c;
    return h('tr', { key: `c:${r.name}`, testid: 'consumer-row', 'data-consumer': r.name },
      h('td', { class: 'mono', text: r.name }),
      h('td', null, h('span', { class: 'pill kind consumer', text: 'consumer' })),
      h('td', { class: 'num', testid: 'consumer-offset', text: c ? c.offset : '–' }),
      c ? h('td', { class: c.lag > 0 ? 'num hot' : 'num zero', testid: 'consumer-lag', text: fmtInt(c.lag) })
        : h('td', { class: 'num zero', testid: 'consumer-lag', text: '–' }),
      c ? h('td', { title: iso(c.updated_at) }, 'saved ', fmtTime(c.updated_at), h('span', { class: 'sub', text: ` (${ago(c.updated_at * 1000)})` }))
        : h('td', { class: 'sub', text: 'reading; no offset saved yet' }),
      h('td', { class: 'procs', testid: 'reader-processes' }, procChips(r.procs, [])));
  }

  function groupReaderRow(r) {
    const ok = r.status && !r.status.error;
    const buckets = ok ? r.status.buckets : [];
    const lag = readerLag(r);
    const behind = buckets.filter((b) => b.lag > 0).length;
    const cps = buckets.map((b) => b.checkpoint);
    const lo = Math.min(...cps);
    const hi = Math.max(...cps);
    const owners = Array.from(new Set(buckets.filter((b) => b.owner && !b.expired).map((b) => b.owner))).sort();
    return h('tr', { key: `g:${r.name}`, testid: 'group-reader-row', 'data-group': r.name },
      h('td', null, h('a', { class: 'mono', href: '#/groups', text: r.name })),
      h('td', null, h('span', { class: 'pill kind group', text: 'group' })),
      h('td', { class: 'num', text: cps.length ? (lo === hi ? lo : `${lo}–${hi}`) : '–' }),
      h('td', { class: lag > 0 ? 'num hot' : 'num zero', testid: 'group-lag', text: lag === null ? '–' : fmtInt(lag) }),
      h('td', null, ok
        ? [lagBars(buckets), h('span', { class: 'sub', testid: 'group-behind', text: ` ${fmtInt(behind)} of ${plural(buckets.length, 'bucket', 'buckets')} behind` })]
        : h('span', { class: 'sub', text: `Error: ${r.status && r.status.error ? r.status.error.message : 'no status'}` })),
      h('td', { class: 'procs', testid: 'reader-processes' }, procChips(r.procs, owners)));
  }

  // Lag per bucket as small bars (at most 64: wider groups are binned).
  function lagBars(buckets) {
    const n = Math.min(64, buckets.length);
    const bins = [];
    for (let i = 0; i < n; i++) {
      const part = buckets.slice(Math.floor((i * buckets.length) / n), Math.floor(((i + 1) * buckets.length) / n));
      const lag = part.reduce((m, b) => Math.max(m, b.lag), 0);
      const name = part.length === 1 ? `bucket ${part[0].bucket}` : `buckets ${part[0].bucket}–${part[part.length - 1].bucket}`;
      const owner = part.length === 1 && part[0].owner ? ` · ${part[0].owner}${part[0].expired ? ' (expired)' : ''}` : '';
      bins.push({ key: i, lag, title: `${name}: lag ${fmtInt(lag)}${owner}` });
    }
    const top = bins.reduce((m, b) => Math.max(m, b.lag), 0);
    return h('span', { class: 'lagbars', testid: 'lag-bars', 'aria-label': 'lag per bucket' }, bins.map((b) => h('span', {
      key: b.key, class: b.lag > 0 ? 'hot' : null, title: b.title, 'data-lag': b.lag,
      style: { height: `${top > 0 && b.lag > 0 ? Math.max(3, Math.round((16 * b.lag) / top)) : 2}px` },
    })));
  }

  // The processes doing a reader's reading, live first; a group's bucket
  // owners that no registered process matches are listed by name.
  function procChips(procs, owners) {
    const list = procs.slice().sort(byProcess);
    const extra = owners.filter((o) => !procs.some((p) => p.id === o));
    if (!list.length && !extra.length) return h('span', { class: 'sub', text: 'none registered' });
    return h('span', { class: 'chips' },
      list.map((p) => h('a', {
        key: `p:${p.id}`, class: p.alive ? 'chip' : 'chip gone', href: '#/processes', testid: 'reader-process',
        'data-id': p.id, 'data-alive': String(p.alive),
        title: `${kindOf(p.kind).one} ${p.id} · ${p.host} pid ${p.pid} · ${p.alive ? 'alive' : 'dead'} · heartbeat ${ago(p.heartbeat_at_ms)}`,
      }, h('span', { class: 'dot' }), p.kind === 'group' ? p.id : `${p.host}:${p.pid}`)),
      extra.map((o) => h('span', { key: `o:${o}`, class: 'chip', title: `owns buckets; no registered process ${o}` }, h('span', { class: 'dot' }), o)));
  }

  // The event browser: a page after an offset, paged both ways; a key
  // filter over the page; a click shows a payload in full.
  function eventsPanel(name, d) {
    const ev = S.ev;
    const fresh = d.page.at.after === ev.after && d.page.at.limit === ev.limit;
    const events = fresh ? d.page.events : [];
    const q = ev.key.trim().toLowerCase();
    const shown = q ? events.filter((e) => (e.key === null || e.key === undefined ? '' : e.key).toLowerCase().includes(q)) : events;
    const head = d.info.head;
    const first = events[0];
    const last = events[events.length - 1];
    const atHead = head === null || head === undefined || (last ? last.offset >= head : ev.after >= head);
    const range = !fresh ? 'loading…'
      : events.length ? `offsets ${first.offset}–${last.offset} · ${plural(events.length, 'event', 'events')}`
        : `nothing after offset ${ev.after}`;
    return h('div', { class: 'panel', testid: 'events-panel' },
      h('div', { class: 'panel-head' },
        h('h2', { text: 'Events' }),
        h('span', { class: 'sub', testid: 'events-range', text: range }),
        h('span', { class: 'spacer' }),
        h('span', { class: 'pager' },
          h('button', { testid: 'events-oldest', disabled: ev.seeking || ev.after === 0, onclick: () => evJump(0), text: 'Oldest' }),
          h('button', { testid: 'events-prev', disabled: ev.seeking || ev.after === 0, onclick: () => evPrev(name, first), text: '← Previous' }),
          h('button', { testid: 'events-next', disabled: ev.seeking || !fresh || atHead, onclick: () => evNext(d.page), text: 'Next →' }),
          h('button', {
            testid: 'events-newest', disabled: ev.seeking || !fresh || (atHead && (ev.after === 0 || events.length === ev.limit)),
            onclick: () => evSeek(name, head), text: 'Newest',
          }))),
      h('div', { class: 'toolbar' },
        h('input', {
          key: 'key', type: 'search', class: 'filter', testid: 'events-key', value: ev.key,
          placeholder: 'Filter this page by key', 'aria-label': 'Filter the events on this page by key',
          oninput: (e) => { S.ev.key = e.target.value; render(); },
        }),
        q ? h('span', { class: 'sub', testid: 'events-matched', text: `${fmtInt(shown.length)} of ${fmtInt(events.length)} on this page` }) : null,
        h('span', { class: 'spacer' }),
        h('form', {
          key: 'jump', class: 'inline', testid: 'events-jump',
          onsubmit: (e) => {
            e.preventDefault();
            const v = e.target.elements.from.value.trim();
            if (!/^\d+$/.test(v) || Number(v) < 1) { toast('An offset is a whole number from 1', true); return; }
            evJump(Number(v) - 1);
          },
        },
        h('label', { for: 'events-from', class: 'sub', text: 'From offset' }),
        h('input', { key: 'from', id: 'events-from', name: 'from', type: 'text', inputmode: 'numeric', size: '9', testid: 'events-from', placeholder: String(first ? first.offset : ev.after + 1) }),
        h('button', { type: 'submit', testid: 'events-go', text: 'Go' })),
        h('select', {
          key: 'limit', testid: 'events-limit', selected: String(ev.limit), 'aria-label': 'Events per page',
          onchange: (e) => { S.ev.limit = Number(e.target.value); S.ev.cursor = []; evJump(S.ev.after, true); },
        }, EVENT_PAGES.map((n) => h('option', { key: n, value: String(n), text: `${n} a page` })))),
      !fresh ? h('div', { class: 'empty', text: 'Loading…' })
        : events.length === 0 ? h('div', { class: 'empty', testid: 'events-empty', text: ev.after ? `No events after offset ${ev.after} yet.` : 'No events.' })
          : shown.length === 0 ? h('div', { class: 'empty', testid: 'events-empty', text: `No event on this page has a key holding “${ev.key.trim()}”.` })
            : table({ testid: 'events-table', class: 'events' },
              h('thead', null, h('tr', null, h('th', null), h('th', { class: 'num', text: 'Offset' }), h('th', { text: 'Key' }),
                h('th', { text: 'Published' }), h('th', { text: 'Payload' }))),
              h('tbody', null, shown.map(eventRows))));
  }

  function eventRows(e) {
    const open = S.ev.open.has(e.offset);
    const row = h('tr', {
      key: e.offset, testid: 'event-row', class: open ? 'open' : null, 'data-offset': e.offset,
      'data-event-key': e.key === null || e.key === undefined ? '' : e.key, title: open ? null : 'Click to show the payload',
      onclick: (ev) => {
        // Not when following a link, or ending a text selection in the row.
        const picked = window.getSelection();
        if (ev.target.closest('a')) return;
        if (!ev.target.closest('button') && picked && !picked.isCollapsed && ev.currentTarget.contains(picked.anchorNode)) return;
        if (S.ev.open.has(e.offset)) S.ev.open.delete(e.offset); else S.ev.open.add(e.offset);
        render();
      },
    },
    h('td', { class: 'toggle' }, h('button', {
      class: 'icon', testid: 'event-toggle', 'aria-expanded': String(open),
      'aria-label': open ? 'Hide the payload' : 'Show the payload', text: open ? '▾' : '▸',
    })),
    h('td', { class: 'num', text: e.offset }),
    h('td', { class: 'mono truncate', testid: 'event-key', text: e.key === null || e.key === undefined ? '–' : e.key }),
    h('td', { title: iso(e.created_at), text: fmtTime(e.created_at) }),
    h('td', { class: 'mono truncate wide', testid: 'event-payload', text: preview(e.payload, e.payload_base64) }));
    if (!open) return row;
    return [row, h('tr', { key: `open:${e.offset}`, class: 'detail', testid: 'event-detail', 'data-offset': e.offset },
      h('td', { colspan: '5' }, h('pre', { class: 'json', testid: 'event-json', text: pretty(e.payload, e.payload_base64) })))];
  }

  // Show the page after `after` (a fresh start: no way back but searching).
  function evJump(after, keepOpen) {
    S.ev.cursor = [];
    evGo(after, keepOpen);
  }

  function evGo(after, keepOpen) {
    S.ev.after = Math.max(0, after);
    if (!keepOpen) S.ev.open.clear();
    render();
    tick();
  }

  function evNext(page) {
    S.ev.cursor.push(S.ev.after);
    evGo(page.next_after);
  }

  function evPrev(name, first) {
    if (S.ev.cursor.length) { evGo(S.ev.cursor.pop()); return; }
    evSeek(name, first ? first.offset - 1 : S.ev.after);
  }

  // Show the last page of events up to offset `end`.
  async function evSeek(name, end) {
    const ev = S.ev;
    if (ev.seeking || end === null || end === undefined) return;
    ev.seeking = true;
    render();
    try {
      const after = await afterForLastN(name, end, ev.limit);
      if (S.ev === ev) evJump(after);
    } catch (e) {
      toast(`Failed: ${e.message}`, true);
    } finally {
      ev.seeking = false;
      render();
    }
  }

  // The `after` whose page holds the last `n` events of `stream` up to
  // offset `end`: one read backwards from just past `end` (newest first);
  // its oldest event starts the page.
  async function afterForLastN(stream, end, n) {
    const page = await api('GET', `/api/v1/streams/${enc(stream)}/events` + qs({ before: end + 1, limit: n }));
    const oldest = page.events[page.events.length - 1];
    return page.events.length < n || !oldest ? 0 : oldest.offset - 1;
  }

  // 5. Consumer groups: who owns which bucket.
  function viewGroups() {
    const d = S.data;
    if (!d) return loading();
    return [
      h('div', { class: 'head' }, h('h1', { text: 'Consumer groups' }),
        h('span', { class: 'sub', text: 'bucket leases: owner, epoch, time left, lag; live' })),
      d.length === 0
        ? h('div', { class: 'panel' }, h('div', { class: 'empty', text: 'No consumer groups yet.' }))
        : d.map(groupPanel),
    ];
  }

  function groupPanel({ info, status }) {
    const head = h('div', { class: 'panel-head' },
      h('h2', { class: 'mono', text: info.group }),
      h('span', { class: 'sub' }, 'reads ', h('span', { class: 'mono', text: info.stream })),
      h('span', { class: 'spacer' }),
      h('span', { class: 'sub', text: `${plural(info.buckets, 'bucket', 'buckets')} · ${plural(info.live_owners, 'live owner', 'live owners')} · ${plural(info.live_workers, 'live worker', 'live workers')}` }),
      info.dead > 0 ? h('a', { href: `#/group-dead/${enc(info.group)}`, testid: 'group-dead-link', text: `${plural(info.dead, 'dead letter', 'dead letters')} →` }) : null);
    if (!status || status.error) {
      return h('div', { class: 'panel', key: info.group }, head,
        h('div', { class: 'empty', text: `Error: ${status && status.error ? status.error.message : 'no status'}` }));
    }
    const t = now();
    const owned = new Map();
    let expired = 0;
    let free = 0;
    let lag = 0;
    for (const b of status.buckets) {
      lag += b.lag;
      if (b.owner === null || b.owner === undefined) free++;
      else if (b.expired) expired++;
      else owned.set(b.owner, (owned.get(b.owner) || 0) + 1);
    }
    const owners = Array.from(owned.keys()).sort();
    for (const o of owners) ownerColour(o);
    const recent = recentHandoffs(info.group, t);
    return h('div', { class: 'panel', key: info.group, testid: 'group', 'data-group': info.group },
      head,
      h('div', { class: 'panel-body' },
        h('div', { class: 'owners', testid: 'group-legend' },
          owners.map((o) => h('span', { key: `o:${o}`, testid: 'group-owner', 'data-owner': o },
            h('span', { class: 'sw', style: { '--owner': ownerColour(o) } }),
            h('span', { class: 'mono', text: o }), h('span', { class: 'sub', text: ` · ${plural(owned.get(o), 'bucket', 'buckets')}` }),
            memberOf(info, o))),
          expired ? h('span', { key: 'expired' }, h('span', { class: 'sw expired' }), `${fmtInt(expired)} expired`) : null,
          free ? h('span', { key: 'free' }, h('span', { class: 'sw free' }), `${fmtInt(free)} free`) : null,
          h('span', { key: 'lag', class: 'sub', text: `total lag ${fmtInt(lag)}` })),
        h('div', { style: { height: '12px' } }),
        h('div', { class: 'grid', testid: 'group-grid' }, status.buckets.map((b) => bucketCell(info.group, b, t, recent.get(b.bucket)))),
        handoffsSection(info.group, t)));
  }

  // A group's bucket handoffs: who took each bucket from whom, and why. A
  // lapse is a failover (the owner died or stalled); a rebalance evens out
  // the buckets when members join; a leave is a member letting go.
  const CAUSES = [
    { cause: 'lapse', label: 'failovers', title: 'the owner\u2019s lease lapsed (it died or stalled) and another member took the bucket' },
    { cause: 'rebalance', label: 'rebalances', title: 'handed over to even out the buckets when members joined' },
    { cause: 'leave', label: 'leaves', title: 'let go by a member leaving, then taken' },
    { cause: 'first', label: 'first claims', title: 'taken for the first time' },
  ];
  const CAUSE_LABEL = { lapse: 'failover', rebalance: 'rebalance', leave: 'leave', first: 'first claim' };
  const SPANS = [
    { key: '15m', ms: 900e3, bins: 60, step: '15 seconds' },
    { key: '1h', ms: 3600e3, bins: 60, step: 'a minute' },
    { key: '24h', ms: 86400e3, bins: 48, step: '30 minutes' },
    { key: '7d', ms: 7 * 86400e3, bins: 56, step: '3 hours' },
  ];
  const HANDOFFS_SHOWN = 6;

  // Read each group's handoffs again after HANDOFFS_EVERY_MS (up to a week's).
  async function fetchHandoffs(groups) {
    const t = Date.now();
    await Promise.all(groups.filter((g) => {
      const c = S.handoffs.get(g);
      return !c || t - c.at > HANDOFFS_EVERY_MS;
    }).map((g) => api('GET', `/api/v1/groups/${enc(g)}/handoffs` + qs({ limit: 1000 }))
      .then((r) => S.handoffs.set(g, { at: t, list: r.handoffs, totals: r.totals }))
      .catch((e) => S.handoffs.set(g, { at: t, error: e }))));
  }

  function handoffsSection(group, t) {
    const ho = S.handoffs.get(group);
    if (!ho) return null;
    if (ho.error) {
      return h('div', { class: 'handoffs sub', text: ho.error.status === 404 ? 'This server keeps no handoff history.' : `Handoffs: ${ho.error.message}` });
    }
    const span = SPANS.find((s) => s.key === S.handoffSpan) || SPANS[0];
    return h('div', { class: 'handoffs', testid: 'handoffs', 'data-group': group },
      h('div', { class: 'handoffs-head' },
        h('h3', { text: 'Bucket handoffs' }),
        h('span', { class: 'sub', text: 'kept a week' }),
        CAUSES.map((c) => h('span', {
          key: c.cause, class: `cause ${c.cause}`, testid: `handoffs-${c.cause}`, 'data-count': ho.totals[c.cause], title: c.title,
        }, h('span', { class: 'sw' }), h('b', { text: fmtInt(ho.totals[c.cause]) }), ` ${c.label}`)),
        h('span', { class: 'spacer' }),
        !ho.list.length ? null : h('div', { class: 'tabs small', 'aria-label': 'Span of the chart' }, SPANS.map((s) => h('button', {
          key: s.key, class: s === span ? 'on' : null, text: s.key, onclick: () => { S.handoffSpan = s.key; render(); },
        })))),
      ho.list.length ? handoffChart(ho.list, span, t) : null,
      handoffList(group, ho.list, t));
  }

  // Handoffs per stretch of time, stacked by cause.
  function handoffChart(list, span, t) {
    const w = span.ms / span.bins;
    const t0 = t - span.ms;
    const bins = Array.from({ length: span.bins }, () => ({ lapse: 0, rebalance: 0, leave: 0, first: 0, n: 0 }));
    for (const x of list) {
      const i = Math.floor((x.at_ms - t0) / w);
      if (i < 0 || i >= span.bins) continue;
      if (bins[i][x.cause] !== undefined) bins[i][x.cause]++;
      bins[i].n++;
    }
    const top = bins.reduce((m, b) => Math.max(m, b.n), 0);
    return h('div', { class: 'hchart', testid: 'handoff-chart', title: `handoffs per ${span.step}` },
      h('div', { class: 'bars' }, bins.map((b, i) => h('div', {
        key: i, class: 'bin', 'data-n': b.n,
        title: b.n ? `${fmtTimeMs(t0 + i * w)}–${fmtTimeMs(t0 + (i + 1) * w)}: ` +
          CAUSES.filter((c) => b[c.cause]).map((c) => `${b[c.cause]} ${c.label}`).join(', ') : null,
      }, CAUSES.filter((c) => b[c.cause]).map((c) => h('span', {
        key: c.cause, class: `seg ${c.cause}`, style: { height: `${Math.max(2, Math.round((36 * b[c.cause]) / top))}px` },
      }))))),
      h('div', { class: 'axis' }, h('span', { text: `-${span.key}` }), h('span', { text: 'now' })));
  }

  function handoffList(group, list, t) {
    if (!list.length) return h('div', { class: 'sub', testid: 'handoffs-none', text: 'No handoffs kept.' });
    const more = S.handoffMore.has(group);
    const shown = more ? list : list.slice(0, HANDOFFS_SHOWN);
    return h('div', null,
      table({ class: 'handoff-list', testid: 'handoff-list' },
        h('thead', null, h('tr', null, h('th', { text: 'When' }), h('th', { class: 'num', text: 'Bucket' }), h('th', { class: 'num', text: 'Epoch' }),
          h('th', { text: 'From' }), h('th', { text: 'To' }), h('th', { text: 'Why' }))),
        h('tbody', null, shown.map((x) => h('tr', {
          key: `${x.bucket}:${x.epoch}`, testid: 'handoff-row', 'data-cause': x.cause, 'data-bucket': x.bucket,
          'data-from': x.from_worker === null || x.from_worker === undefined ? '' : x.from_worker, 'data-to': x.to_worker,
        },
        h('td', { class: 'nw', title: isoMs(x.at_ms) }, fmtTimeMs(x.at_ms), h('span', { class: 'sub', text: ` (${ago(x.at_ms)})` })),
        h('td', { class: 'num', text: x.bucket }),
        h('td', { class: 'num', text: x.epoch }),
        h('td', { class: 'mono', text: x.from_worker || '–' }),
        h('td', { class: 'mono', text: x.to_worker }),
        h('td', null, h('span', { class: `pill cause ${x.cause}`, text: CAUSE_LABEL[x.cause] || x.cause })))))),
      list.length > HANDOFFS_SHOWN ? h('button', {
        class: 'link more', testid: 'handoffs-more',
        onclick: () => { if (more) S.handoffMore.delete(group); else S.handoffMore.add(group); render(); },
        text: more ? 'Show fewer' : `Show all ${fmtInt(list.length)}`,
      }) : null);
  }

  // Each bucket's latest handoff, if recent: flagged on its cell.
  function recentHandoffs(group, t) {
    const ho = S.handoffs.get(group);
    const out = new Map();
    if (!ho || !ho.list) return out;
    for (const x of ho.list) {
      if (t - x.at_ms > RECENT_HANDOFF_MS) break;
      if (!out.has(x.bucket)) out.set(x.bucket, x);
    }
    return out;
  }

  // The registered process of a group member: where it runs.
  function memberOf(info, member) {
    const role = `${info.group}/${info.stream}`;
    const p = (S.procs || []).find((x) => x.kind === 'group' && x.id === member && x.roles.includes(role));
    if (!p) return null;
    return h('a', {
      class: 'sub', href: '#/processes', testid: 'group-owner-process',
      title: `${p.alive ? 'alive' : 'dead'} · heartbeat ${ago(p.heartbeat_at_ms)} · alkstore ${p.version}`,
      text: ` · ${p.host}:${p.pid}`,
    });
  }

  function bucketCell(group, b, t, handoff) {
    const hasOwner = b.owner !== null && b.owner !== undefined;
    const cls = !hasOwner ? 'cell free' : b.expired ? 'cell expired' : 'cell';
    const left = b.expires_at_ms === null || b.expires_at_ms === undefined ? null : b.expires_at_ms - t;
    let lease;
    if (!hasOwner) lease = 'no lease';
    else if (b.expired) lease = left !== null ? `expired ${fmtDur(Math.min(0, left))} ago` : 'expired';
    else lease = left !== null ? `lease ${fmtDur(Math.max(0, left))}` : 'lease –';
    return h('div', {
      key: b.bucket, class: cls, testid: 'group-cell',
      'data-group': group, 'data-bucket': b.bucket, 'data-owner': hasOwner ? b.owner : '',
      'data-expired': String(!!b.expired), 'data-epoch': b.epoch,
      style: hasOwner && !b.expired ? { '--owner': ownerColour(b.owner) } : null,
      title: `bucket ${b.bucket} · owner ${hasOwner ? b.owner : 'none'} · epoch ${b.epoch} · checkpoint ${b.checkpoint} · lag ${b.lag}` +
        (b.expires_at_ms ? ` · lease until ${isoMs(b.expires_at_ms)}` : ''),
    },
    h('div', { class: 'b', text: `#${b.bucket}` }),
    b.expired && hasOwner ? h('span', { class: 'flag', text: 'EXPIRED' })
      : handoff && (handoff.cause === 'lapse' || handoff.cause === 'rebalance') && handoff.to_worker === b.owner
        ? h('span', {
          class: `flag ${handoff.cause}`, testid: 'cell-handoff', 'data-cause': handoff.cause,
          title: `${CAUSE_LABEL[handoff.cause]} from ${handoff.from_worker || 'nobody'} ${ago(handoff.at_ms)}`,
          text: handoff.cause === 'lapse' ? 'FAILED OVER' : 'REBALANCED',
        })
        : null,
    h('div', { class: 'o', testid: 'cell-owner', text: hasOwner ? b.owner : 'free' }),
    h('div', { class: 'm' },
      h('div', { text: `epoch ${b.epoch}` }),
      h('div', { testid: 'cell-lease', text: lease }),
      h('div', null, 'lag ', h('span', { class: b.lag > 0 ? 'lag-hot' : null, testid: 'cell-lag', text: fmtInt(b.lag) }))));
  }

  // 6. Schedules: edit, pause, resume, delete; and new ones.
  function viewSchedules() {
    const d = S.data;
    if (!d) return loading();
    const list = d.schedules;
    const e = S.edit;
    return [
      h('div', { class: 'head' }, h('h1', { text: 'Schedules' }),
        h('span', { class: 'sub', text: 'each boundary enqueues one job on its queue, once across every scheduler' }),
        h('span', { class: 'spacer' }),
        h('button', { testid: 'schedule-new', class: 'primary', disabled: !!(e && e.isNew), onclick: () => { S.edit = editState(null); render(); }, text: 'New schedule' })),
      e && e.isNew
        ? h('div', { class: 'panel', key: 'new', testid: 'schedule-new-panel' },
          h('div', { class: 'panel-head' }, h('h2', { text: 'New schedule' })),
          scheduleForm(e, list))
        : null,
      h('div', { class: 'panel' },
        list.length === 0
          ? h('div', { class: 'empty', text: 'No schedules: add one with New schedule, PUT /api/v1/schedules/{name} or alk schedules add.' })
          : table({ testid: 'schedules-table', class: 'schedules' },
            h('thead', null, h('tr', null,
              h('th', { text: 'Name' }), h('th', { text: 'Spec', title: 'cron patterns are read in UTC unless a time zone is shown' }), h('th', { text: 'Queue' }),
              h('th', { text: 'Payload' }), h('th', { text: 'Next fire' }), h('th', { text: 'Last fired' }),
              h('th', { text: 'State' }), h('th', null))),
            h('tbody', null, list.flatMap((s) => scheduleRows(s, list))))),
    ];
  }

  const SCHEDULE_COLS = 8;

  function scheduleRows(s, list) {
    const busy = S.busy.has(`schedule:${s.name}`);
    const verb = s.paused ? 'resume' : 'pause';
    const editing = S.edit && !S.edit.isNew && S.edit.name === s.name;
    const firesOpen = S.firesOpen.has(s.name);
    const row = h('tr', { key: s.name, testid: 'schedule-row', class: editing ? 'selected' : null, 'data-name': s.name, 'data-paused': String(s.paused) },
      h('td', { class: 'mono nw', text: s.name }),
      h('td', { class: 'nw' }, h('div', { class: 'mono', testid: 'schedule-spec', text: s.spec }),
        s.tz ? h('div', { class: 'sub', testid: 'schedule-tz', title: 'the time zone its cron pattern is read in', text: s.tz }) : null),
      h('td', { class: 'nw' }, h('a', { class: 'mono', href: `#/queues/${enc(s.queue)}`, text: s.queue })),
      h('td', { class: 'mono truncate', testid: 'schedule-payload', title: pretty(s.payload, s.payload_base64), text: preview(s.payload, s.payload_base64) }),
      h('td', { title: isoMs(s.next_fire_at_ms), testid: 'schedule-next' }, s.paused ? '–' : [
        fmtTimeMs(s.next_fire_at_ms), h('span', { class: 'sub', text: ` (${countdown(s.next_fire_at_ms)})` })]),
      h('td', { class: 'nw' }, h('button', {
        class: 'link', testid: 'schedule-fires-toggle', 'aria-expanded': String(firesOpen),
        title: firesOpen ? 'Hide its last fires' : 'Show its last fires and their jobs',
        onclick: () => { if (firesOpen) S.firesOpen.delete(s.name); else S.firesOpen.add(s.name); render(); tick(); },
      }, h('span', { title: isoMs(s.last_boundary_ms), text: s.last_boundary_ms ? fmtTimeMs(s.last_boundary_ms) : 'history' }),
      h('span', { class: 'caret', text: firesOpen ? ' ▾' : ' ▸' }))),
      h('td', { class: 'nw' }, pausedPill(s.paused)),
      h('td', { class: 'actions' },
        h('button', { testid: 'schedule-edit', disabled: editing, onclick: () => { S.edit = editState(s); render(); }, text: 'Edit' }),
        h('button', {
          testid: 'schedule-run', disabled: busy, title: `Enqueue one job on ${s.queue} now (the schedule’s own boundaries stay as they are)`,
          onclick: () => act(`schedule:${s.name}`, (r) => `Ran ${s.name} now: job ${r.job_id} on ${r.queue}`,
            () => api('POST', `/api/v1/schedules/${enc(s.name)}/run`)),
          text: 'Run now',
        }),
        h('button', {
          testid: `schedule-${verb}`, disabled: busy, text: s.paused ? 'Resume' : 'Pause',
          onclick: () => act(`schedule:${s.name}`, `${s.paused ? 'Resumed' : 'Paused'} ${s.name}`,
            () => api('POST', `/api/v1/schedules/${enc(s.name)}/${verb}`)),
        }),
        h('button', {
          testid: 'schedule-delete', class: 'danger', disabled: busy, text: 'Delete',
          onclick: () => {
            if (!window.confirm(`Delete schedule ${s.name}? Jobs it already enqueued stay.`)) return;
            if (editing) S.edit = null;
            act(`schedule:${s.name}`, `Deleted ${s.name}`, () => api('DELETE', `/api/v1/schedules/${enc(s.name)}`));
          },
        })));
    const rows = [row];
    if (editing) {
      rows.push(h('tr', { key: `edit:${s.name}`, class: 'editor' },
        h('td', { colspan: String(SCHEDULE_COLS) }, scheduleForm(S.edit, list))));
    }
    if (firesOpen) {
      rows.push(h('tr', { key: `fires:${s.name}`, class: 'editor', testid: 'schedule-fires', 'data-name': s.name },
        h('td', { colspan: String(SCHEDULE_COLS) }, firesList(s))));
    }
    return rows;
  }

  // A schedule's last fires, newest first, each with the job it made.
  function firesList(s) {
    const fires = S.data && S.data.fires ? S.data.fires.get(s.name) : undefined;
    let body;
    if (fires === undefined) body = h('div', { class: 'sub', text: 'Loading…' });
    else if (fires === null) body = h('div', { class: 'sub', text: 'This server keeps no history of fires.' });
    else if (!fires.length) body = h('div', { class: 'sub', testid: 'schedule-fires-none', text: 'No fires yet.' });
    else {
      body = table({ class: 'fires', testid: 'fires-table' },
        h('thead', null, h('tr', null, h('th', { text: 'Fired' }), h('th', { text: 'Boundary' }), h('th', { text: 'How' }),
          h('th', { text: 'Queue' }), h('th', { text: 'Job' }), h('th', { text: 'Job state' }))),
        h('tbody', null, fires.map((f) => {
          const seen = S.jobSeen.get(f.job_id);
          return h('tr', { key: `${f.boundary_ms}:${f.job_id}`, testid: 'fire-row', 'data-job-id': f.job_id, 'data-manual': String(f.manual) },
            h('td', { title: isoMs(f.fired_at_ms) }, fmtTimeMs(f.fired_at_ms), h('span', { class: 'sub', text: ` (${ago(f.fired_at_ms)})` })),
            h('td', { title: isoMs(f.boundary_ms), text: f.manual ? '–' : fmtTimeMs(f.boundary_ms) }),
            h('td', null, f.manual
              ? h('span', { class: 'pill scheduled', title: 'Run now, from the dashboard or the API', text: 'run now' })
              : h('span', { class: 'pill', text: 'on schedule' })),
            h('td', null, h('a', { class: 'mono', href: `#/queues/${enc(f.queue)}`, text: f.queue })),
            h('td', null, h('a', { class: 'mono', href: `#/jobs/${f.job_id}`, testid: 'fire-job', text: f.job_id })),
            h('td', { testid: 'fire-job-state' }, !seen ? '…'
              : seen.state === 'finished'
                ? h('span', { class: 'pill completed', title: 'acked and deleted: its queue keeps no completed jobs', text: 'finished' })
                : statePill(seen.job)));
        })));
    }
    return h('div', { class: 'form' },
      h('div', { class: 'sub', text: `Last fires of ${s.name}, newest first` }), body);
  }

  // The editor's fields as typed (strings), from a schedule or blank.
  function editState(s) {
    if (!s) return { isNew: true, name: '', spec: '', tz: '', queue: '', priority: '0', payload: '', binary: null, maxCatchUp: null, error: null };
    return {
      isNew: false, name: s.name, spec: s.spec, tz: s.tz || '', queue: s.queue, priority: String(s.priority),
      payload: s.payload_base64 ? '' : pretty(s.payload, null), binary: s.payload_base64 || null,
      maxCatchUp: s.max_catch_up, error: null,
    };
  }

  function scheduleForm(e, list) {
    const busy = S.busy.has('schedule:save');
    const field = (label, key, attrs, hint) => h('label', { class: 'field', key: `f:${key}` },
      h('span', { class: 'k', text: label }),
      h('input', Object.assign({
        type: 'text', name: key, value: e[key], testid: `schedule-field-${key}`, spellcheck: 'false',
        oninput: (ev) => { e[key] = ev.target.value; },
      }, attrs)),
      hint ? h('span', { class: 'hint', text: hint }) : null);
    return h('form', {
      class: 'form', testid: 'schedule-form', 'data-name': e.name,
      onsubmit: (ev) => { ev.preventDefault(); saveSchedule(e, list); },
      onkeydown: (ev) => { if (ev.key === 'Escape') { S.edit = null; render(); } },
    },
    h('div', { class: 'fields' },
      e.isNew ? field('Name', 'name', { required: true, maxlength: '200', autofocus: true }) : null,
      field('Spec', 'spec', { required: true, placeholder: '@every 1h' }, '@every 30s / 5m / 1h / 1d, or cron: 0 3 * * * (6 fields: seconds first)'),
      field('Time zone', 'tz', { placeholder: 'UTC' }, 'IANA name, for cron: Europe/Paris'),
      field('Queue', 'queue', { required: true, maxlength: '200' }),
      field('Priority', 'priority', { inputmode: 'numeric', size: '6' })),
    h('label', { class: 'field wide', key: 'f:payload' },
      h('span', { class: 'k', text: 'Payload (JSON)' }),
      h('textarea', {
        name: 'payload', rows: '5', spellcheck: 'false', testid: 'schedule-field-payload', text: e.payload,
        placeholder: e.binary ? `This schedule\u2019s payload is not JSON (${e.binary.length} base64 characters): left empty, it is kept; JSON typed here replaces it` : 'null',
        oninput: (ev) => { e.payload = ev.target.value; },
      })),
    e.error ? h('div', { class: 'form-error', testid: 'schedule-error', role: 'alert', text: e.error }) : null,
    h('div', { class: 'form-actions' },
      h('button', { type: 'submit', class: 'primary', testid: 'schedule-save', disabled: busy, text: e.isNew ? 'Create' : 'Save' }),
      h('button', { type: 'button', testid: 'schedule-cancel', onclick: () => { S.edit = null; render(); }, text: 'Cancel' }),
      e.isNew ? null : h('span', { class: 'sub', text: 'the same spec keeps its next boundary; a paused schedule stays paused' })));
  }

  // PUT the editor's schedule; errors stay in the editor.
  async function saveSchedule(e, list) {
    const fail = (msg) => { e.error = msg; render(); };
    const name = e.name.trim();
    if (!name) return fail('Give the schedule a name.');
    if (e.isNew && list.some((s) => s.name === name)) return fail(`There is a schedule ${name} already: edit it instead.`);
    if (!e.spec.trim()) return fail('Give a spec: @every 1h, or a cron pattern.');
    if (!e.queue.trim()) return fail('Give the queue its jobs go to.');
    if (!/^-?\d+$/.test(e.priority.trim())) return fail('The priority is a whole number.');
    let payload = null;
    if (e.payload.trim()) {
      try { payload = JSON.parse(e.payload); } catch (err) { return fail(`The payload is not JSON: ${err.message}`); }
    }
    const body = { spec: e.spec.trim(), queue: e.queue, tz: e.tz.trim() || null, priority: Number(e.priority.trim()), payload };
    // Left empty, a payload that is not JSON is sent back as it was.
    if (!e.payload.trim() && e.binary) { delete body.payload; body.payload_base64 = e.binary; }
    if (e.maxCatchUp !== null) body.max_catch_up = e.maxCatchUp;
    if (S.busy.has('schedule:save')) return;
    S.busy.add('schedule:save');
    e.error = null;
    render();
    try {
      await api('PUT', `/api/v1/schedules/${enc(name)}`, body);
      if (S.edit === e) S.edit = null;
      toast(`${e.isNew ? 'Created' : 'Saved'} ${name}`);
    } catch (err) {
      e.error = err.message;
    } finally {
      S.busy.delete('schedule:save');
      tick();
    }
  }

  // 7. Locks.
  function viewLocks() {
    const d = S.data;
    if (!d) return loading();
    const list = d.locks;
    const t = now();
    return [
      h('div', { class: 'head' }, h('h1', { text: 'Locks' }),
        h('span', { class: 'sub', text: 'leases with fencing tokens' })),
      h('div', { class: 'panel' },
        list.length === 0
          ? h('div', { class: 'empty', text: 'No locks.' })
          : table({ testid: 'locks-table' },
            h('thead', null, h('tr', null,
              h('th', { text: 'Name' }), h('th', { text: 'Owner' }), h('th', { class: 'num', text: 'Token' }),
              h('th', { text: 'Acquired' }), h('th', { text: 'Expires' }), h('th', { text: 'State' }))),
            h('tbody', null, list.map((l) => {
              const held = l.owner !== null && l.owner !== undefined;
              const live = held && l.expires_at_ms > t;
              return h('tr', { key: l.name, testid: 'lock-row', 'data-name': l.name },
                h('td', { class: 'mono', text: l.name }),
                h('td', { class: 'mono', testid: 'lock-owner', text: held ? l.owner : '–' }),
                h('td', { class: 'num', testid: 'lock-token', text: l.token }),
                h('td', { title: isoMs(l.acquired_at_ms), text: fmtTimeMs(l.acquired_at_ms) }),
                h('td', { title: isoMs(l.expires_at_ms) }, fmtTimeMs(l.expires_at_ms),
                  h('span', { class: 'sub', text: ` (${countdown(l.expires_at_ms)})` })),
                h('td', null, !held
                  ? h('span', { class: 'pill', title: 'released, or lapsed and cleared', text: 'free' })
                  : live ? h('span', { class: 'pill live', text: 'held' }) : h('span', { class: 'pill dead', text: 'expired' })));
            })))),
    ];
  }


  // 8. Processes: every worker, group member, subscriber and scheduler that
  // registered in the store, with its heartbeat, and orders for it.
  const KINDS = [
    { kind: 'worker', label: 'Workers', one: 'worker' },
    { kind: 'group', label: 'Group members', one: 'group member' },
    { kind: 'subscriber', label: 'Subscribers', one: 'subscriber' },
    { kind: 'scheduler', label: 'Schedulers', one: 'scheduler' },
  ];
  const kindOf = (k) => KINDS.find((x) => x.kind === k) || { kind: k, label: k, one: k };
  const KIND_RANK = new Map(KINDS.map((k, i) => [k.kind, i]));

  // What Quiet does, by kind (the API's words).
  const QUIET_DOES = {
    worker: 'It finishes the jobs it runs, claims nothing new and idles until stopped.',
    group: 'It leaves the group (its buckets go to the other members).',
    subscriber: 'It stops reading.',
    scheduler: 'It stops firing schedules (other schedulers go on).',
  };

  // Live ones first, then by kind, host and id.
  function byProcess(a, b) {
    return (b.alive - a.alive) || ((KIND_RANK.get(a.kind) ?? 9) - (KIND_RANK.get(b.kind) ?? 9)) ||
      a.host.localeCompare(b.host) || a.id.localeCompare(b.id);
  }

  function viewProcesses() {
    const all = S.procs;
    if (all === null) {
      if (S.procsError) {
        return h('div', { class: 'panel', testid: 'view-error' }, h('div', {
          class: 'empty', text: `This server lists no processes (${S.procsError.message}): it is older than the process registry.`,
        }));
      }
      return loading();
    }
    const list = all.filter((p) => !S.procKind || p.kind === S.procKind).sort(byProcess);
    const live = all.filter((p) => p.alive);
    const workers = live.filter((p) => p.kind === 'worker');
    const slots = workers.reduce((n, p) => n + p.concurrency, 0);
    const busy = workers.reduce((n, p) => n + p.running, 0);
    const t = now();
    return [
      h('div', { class: 'head' }, h('h1', { text: 'Processes' }),
        h('span', { class: 'sub', text: 'registered in the store by alk worker, group members, subscribers and schedulers; each beats in, and a dead one stays listed for an hour' })),
      h('div', { class: 'tiles' },
        KINDS.map((k) => kindTile(k, all)),
        h('div', { class: 'tile', key: 'busy', testid: 'proc-busy', title: 'jobs running / handler slots of live workers, at their last heartbeat' },
          h('div', { class: 'k', text: 'Worker slots busy' }),
          h('div', { class: 'v' }, fmtInt(busy), h('span', { class: 'of', text: ` / ${fmtInt(slots)}` })),
          meter(busy, slots))),
      h('div', { class: 'panel' },
        h('div', { class: 'panel-head' },
          h('div', { class: 'tabs', testid: 'proc-kinds' }, [{ kind: '', label: 'All' }].concat(KINDS).map((k) => h('button', {
            key: k.kind || 'all', class: S.procKind === k.kind ? 'on' : null, 'data-kind': k.kind,
            text: `${k.label} ${fmtInt(k.kind ? all.filter((p) => p.kind === k.kind).length : all.length)}`,
            onclick: () => { S.procKind = k.kind; render(); },
          }))),
          h('span', { class: 'spacer' }),
          h('span', { class: 'sub', text: 'Quiet and Stop are carried out at the process\u2019s next heartbeat' })),
        list.length === 0
          ? h('div', { class: 'empty', testid: 'processes-empty', text: all.length
            ? 'None of this kind.'
            : 'No process has registered: start one with alk worker --queue Q --exec CMD, or alk schedules run.' })
          : table({ testid: 'processes-table', class: 'processes' },
            h('thead', null, h('tr', null,
              h('th', { text: 'Process' }), h('th', { text: 'Kind' }), h('th', { text: 'Host' }), h('th', { class: 'num', text: 'Pid' }),
              h('th', { text: 'Version' }), h('th', { text: 'Works' }),
              h('th', { class: 'num', text: 'Running', title: 'jobs running / handler slots (workers), buckets held / wanted (group members), at the last heartbeat' }),
              h('th', { text: 'Up' }), h('th', { text: 'Heartbeat' }), h('th', { text: 'State' }), h('th', null))),
            h('tbody', null, list.map((p) => processRow(p, t))))),
    ];
  }

  function kindTile(k, all) {
    const of = all.filter((p) => p.kind === k.kind);
    const alive = of.filter((p) => p.alive).length;
    const dead = of.length - alive;
    return h('div', {
      class: S.procKind === k.kind ? 'tile pick on' : 'tile pick', key: k.kind, testid: `proc-count-${k.kind}`,
      'data-alive': alive, 'data-dead': dead, title: `Show only ${k.label.toLowerCase()}`,
      onclick: () => { S.procKind = S.procKind === k.kind ? '' : k.kind; render(); },
    },
    h('div', { class: 'k', text: k.label }),
    h('div', { class: 'v' }, fmtInt(alive), dead ? h('span', { class: 'of dead', text: ` +${fmtInt(dead)} dead` }) : null));
  }

  // A bar for used of total.
  function meter(used, total) {
    const pct = total > 0 ? Math.min(100, Math.round((100 * used) / total)) : 0;
    return h('span', { class: 'meter', title: `${fmtInt(used)} of ${fmtInt(total)}` },
      h('span', { style: { width: `${pct}%` } }));
  }

  function processRow(p, t) {
    const busy = S.busy.has(`proc:${p.id}`);
    const k = kindOf(p.kind);
    // Late: most of its expiry window gone without a beat (and more than a
    // poll or two: group members beat many times a second).
    const late = p.alive && t - p.heartbeat_at_ms > Math.max(0.75 * (p.expires_at_ms - p.heartbeat_at_ms), 3000);
    return h('tr', {
      key: p.id, testid: 'process-row', class: p.alive ? null : 'gone',
      'data-id': p.id, 'data-kind': p.kind, 'data-pid': p.pid, 'data-alive': String(p.alive), 'data-order': p.order,
    },
    h('td', { class: 'mono truncate', testid: 'process-id', title: p.id, text: p.id }),
    h('td', null, h('span', { class: `pill kind ${p.kind}`, testid: 'process-kind', text: k.one })),
    h('td', { class: 'mono', text: p.host }),
    h('td', { class: 'num', text: p.pid }),
    h('td', { class: 'mono', text: p.version }),
    h('td', { class: 'roles', testid: 'process-roles' }, rolesOf(p)),
    h('td', { class: 'num', testid: 'process-running', 'data-running': p.running, 'data-concurrency': p.concurrency },
      `${fmtInt(p.running)} / ${fmtInt(p.concurrency)}`, p.alive ? meter(p.running, p.concurrency) : null),
    h('td', {
      title: `started ${isoMs(p.started_at_ms)}${p.alive ? '' : '; ran until its last heartbeat'}`,
      text: fmtAge(((p.alive ? t : p.heartbeat_at_ms) - p.started_at_ms) / 1000),
    }),
    h('td', {
      testid: 'process-heartbeat', class: late ? 'late' : null,
      title: `last heartbeat ${isoMs(p.heartbeat_at_ms)}; ${p.alive ? 'taken for dead' : 'dead'} from ${isoMs(p.expires_at_ms)}`,
      text: ago(p.heartbeat_at_ms),
    }),
    h('td', { class: 'state' },
      p.alive
        ? h('span', { class: 'pill live', testid: 'process-state', 'data-state': 'alive', text: 'alive' })
        : h('span', { class: 'pill dead', testid: 'process-state', 'data-state': 'dead', title: 'no heartbeat within its expiry', text: 'dead' }),
      orderPill(p)),
    h('td', { class: 'actions' },
      h('button', {
        testid: 'process-quiet', disabled: busy || !p.alive || p.order !== 'run',
        title: QUIET_DOES[p.kind] || null, onclick: () => orderProcess(p, 'quiet'), text: 'Quiet',
      }),
      h('button', {
        testid: 'process-stop', class: 'danger', disabled: busy || !p.alive || p.order === 'stop',
        title: 'shut down gracefully', onclick: () => orderProcess(p, 'stop'), text: 'Stop',
      })));
  }

  function orderPill(p) {
    if (p.order === 'run') return null;
    const label = p.order === 'stop' ? (p.alive ? 'stopping' : 'stop ordered') : 'quiet';
    return h('span', {
      class: 'pill paused', testid: 'process-order', 'data-order': p.order,
      title: p.order === 'stop' ? 'ordered to stop' : 'ordered to claim nothing new', text: label,
    });
  }

  function orderProcess(p, verb) {
    const k = kindOf(p.kind).one;
    const who = `${k} ${p.id} on ${p.host} (pid ${p.pid})`;
    const question = verb === 'quiet'
      ? `Quiet ${who}? ${QUIET_DOES[p.kind] || ''}`
      : `Stop ${who}? It shuts down gracefully${p.kind === 'worker' ? ', after the jobs it runs' : ''}.`;
    if (!window.confirm(question)) return;
    return act(`proc:${p.id}`, `${verb === 'quiet' ? 'Quiet' : 'Stop'} ordered for ${p.id}: carried out at its next heartbeat`,
      () => api('POST', `/api/v1/processes/${enc(p.id)}/${verb}`));
  }

  // What a process works, as links: queues; group and stream; stream and
  // consumer; a scheduler fires every schedule.
  function rolesOf(p) {
    if (p.kind === 'scheduler') return h('a', { href: '#/schedules', text: 'every schedule' });
    if (!p.roles.length) return '–';
    return p.roles.map((r) => h('div', { key: `r:${r}`, class: 'role' }, roleLinks(p.kind, r)));
  }

  function roleLinks(kind, role) {
    if (kind === 'worker') return h('a', { class: 'mono', href: `#/queues/${enc(role)}`, text: role });
    if (kind === 'group') {
      const [g, st] = splitGroupRole(role);
      return [h('a', { class: 'mono', href: '#/groups', text: g }), h('span', { class: 'sub', text: ' reads ' }),
        h('a', { class: 'mono', href: `#/streams/${enc(st)}`, text: st })];
    }
    if (kind === 'subscriber') {
      const [st, c] = splitAt(role, knownStreams());
      return [h('a', { class: 'mono', href: `#/streams/${enc(st)}`, text: st }), h('span', { class: 'sub', text: ' as ' }),
        h('span', { class: 'mono', text: c })];
    }
    return h('span', { class: 'mono', text: role });
  }

  // `group/stream`: names may hold a slash, so known groups decide.
  function splitGroupRole(role) {
    const g = (S.groups || []).find((x) => `${x.group}/${x.stream}` === role);
    return g ? [g.group, g.stream] : splitAt(role, []);
  }

  // `prefix/rest`, the longest known prefix first, else at the first slash.
  function splitAt(role, prefixes) {
    const known = prefixes.filter((p) => role.startsWith(`${p}/`)).sort((a, b) => b.length - a.length)[0];
    if (known !== undefined) return [known, role.slice(known.length + 1)];
    const i = role.indexOf('/');
    return i < 0 ? [role, ''] : [role.slice(0, i), role.slice(i + 1)];
  }

  function knownStreams() {
    const names = new Set((S.groups || []).map((g) => g.stream));
    if (S.route.view === 'stream') names.add(S.route.s);
    if (S.route.view === 'streams' && S.data && S.data.streams) for (const x of S.data.streams) names.add(x.stream);
    return Array.from(names);
  }

  // 9. Jobs of every queue by state, filtered by queue and by a payload
  // field, with bulk retry, run now, cancel and delete.
  const JOB_STATES = [
    { state: '', label: 'All live', title: 'every live job: waiting and running' },
    { state: 'pending', label: 'Pending', title: 'waiting and due now' },
    { state: 'scheduled', label: 'Scheduled', title: 'waiting for a first run due later' },
    { state: 'retryable', label: 'Retryable', title: 'waiting out a retry\u2019s backoff' },
    { state: 'running', label: 'Running', title: 'claimed by a worker (lapsed claims included)' },
    { state: 'dead', label: 'Dead', title: 'dead letters, the cancelled ones included' },
    { state: 'cancelled', label: 'Cancelled', title: 'dead letters that were cancelled' },
    { state: 'completed', label: 'Completed', title: 'acked and kept by a queue that keeps completed jobs' },
  ];

  // What each bulk action does, and the shown states it applies to.
  const BULK = [
    { action: 'retry', label: 'Retry', done: 'Retried', states: ['dead', 'pending', 'scheduled', 'retryable'],
      title: 'dead letters run again as fresh jobs; waiting jobs run now' },
    { action: 'run_now', label: 'Run now', done: 'Ran now', states: ['scheduled', 'retryable'],
      title: 'scheduled and retryable jobs run now' },
    { action: 'cancel', label: 'Cancel', done: 'Cancelled', states: ['pending', 'scheduled', 'retryable', 'processing'], danger: true,
      title: 'waiting jobs go to the dead letters as cancelled; running ones are asked to stop' },
    { action: 'delete', label: 'Delete', done: 'Deleted', states: ['pending', 'scheduled', 'retryable', 'dead'], danger: true,
      title: 'waiting jobs and dead letters are deleted for good' },
  ];

  function jobsHash(f) {
    return `#/jobs${qs({ state: f.state, queue: f.queue, tag: f.tag, where: f.where })}`;
  }

  // Which jobs a tag's link lists: those in the same kind of state (every
  // waiting or live job for the waiting ones).
  const TAG_STATE = { processing: 'running', dead: 'dead', completed: 'completed' };

  // A job's tags, each a link to the jobs carrying it.
  function tagChips(tags, state) {
    return h('span', { class: 'tags', testid: 'job-tags' }, tags.map((t) => h('a', {
      key: t, class: 'tag', testid: 'job-tag', href: jobsHash({ state: TAG_STATE[state] || '', tag: t }),
      title: `Jobs tagged ${t}`, text: t,
    })));
  }

  function countOf(counts, state) {
    if (!counts) return null;
    if (state === '') return counts.pending + counts.scheduled + counts.retryable + counts.running;
    return counts[state];
  }

  function viewJobs() {
    const f = S.route;
    const d = S.data;
    const counts = d && d.counts;
    return [
      h('div', { class: 'head' }, h('h1', { text: 'Jobs' }),
        h('span', { class: 'sub', text: f.queue ? `of queue ${f.queue}` : 'of every queue' }),
        counts && counts.expired ? h('span', { class: 'pill dead', title: 'past their expiry: the next sweep makes them dead letters', text: `${fmtInt(counts.expired)} expired` }) : null),
      h('div', { class: 'statebar', testid: 'job-states', role: 'tablist' }, JOB_STATES.map((s) => {
        const n = countOf(counts, s.state);
        return h('a', {
          key: s.state || 'all', href: jobsHash(Object.assign({}, f, { state: s.state })), role: 'tab',
          class: f.state === s.state ? 'state on' : 'state', 'aria-selected': String(f.state === s.state),
          testid: `job-state-${s.state || 'all'}`, 'data-count': n === null ? '' : n, title: s.title,
        },
        h('span', { class: 'k', text: s.label }),
        h('span', { class: n ? `v ${s.state}` : 'v zero', text: n === null ? '…' : fmtInt(n) }));
      })),
      jobFilters(f),
      jobsPanel(f, d),
    ];
  }

  function jobFilters(f) {
    const names = (S.queues || []).map((q) => q.queue);
    if (f.queue && !names.includes(f.queue)) names.push(f.queue);
    return h('form', {
      class: 'toolbar filters', key: `filters:${S.routeKey}`, testid: 'job-filters',
      onsubmit: (ev) => {
        ev.preventDefault();
        const el = ev.target.elements;
        location.hash = jobsHash({ state: f.state, queue: el.queue.value, tag: el.tag.value.trim(), where: el.where.value.trim() });
      },
    },
    h('label', { class: 'sub', for: 'jobs-queue', text: 'Queue' }),
    h('select', {
      id: 'jobs-queue', name: 'queue', testid: 'jobs-queue', selected: f.queue,
      onchange: (ev) => { location.hash = jobsHash(Object.assign({}, f, { queue: ev.target.value })); },
    }, h('option', { key: '', value: '', text: 'every queue' }), names.map((n) => h('option', { key: n, value: n, text: n }))),
    h('label', { class: 'sub', for: 'jobs-tag', text: 'Tag' }),
    h('input', {
      id: 'jobs-tag', name: 'tag', type: 'search', class: 'tag-filter mono', testid: 'jobs-tag', value: f.tag,
      placeholder: 'billing', spellcheck: 'false', 'aria-label': 'Only jobs carrying this tag',
    }),
    h('label', { class: 'sub', for: 'jobs-where', text: 'Payload' }),
    h('input', {
      id: 'jobs-where', name: 'where', type: 'search', class: 'where mono', testid: 'jobs-where', value: f.where,
      placeholder: '$.customer_id = 42', spellcheck: 'false',
      'aria-label': 'Only jobs whose payload has this value at this path: $.field = JSON value',
    }),
    h('button', { type: 'submit', testid: 'jobs-apply', text: 'Filter' }),
    f.queue || f.tag || f.where ? h('a', { href: jobsHash({ state: f.state }), testid: 'jobs-clear', text: 'Clear' }) : null,
    h('span', { class: 'hint sub', text: 'a payload field equal to a JSON value: $.order.kind = "refund", $.items[0] = 3' }));
  }

  // The row state a filter's jobs are in ('' when any).
  const ROW_STATE = { running: 'processing', cancelled: 'dead' };

  function jobsPanel(f, d) {
    const jobs = d && d.jobs;
    const sel = S.sel;
    // Every matching job chosen: so is every row a poll brings onto the page.
    if (S.selAll && jobs) for (const j of jobs) sel.add(j.id);
    const chosen = jobs ? jobs.filter((j) => sel.has(j.id)) : [];
    const all = jobs && jobs.length > 0 && chosen.length === jobs.length;
    if (!all) S.selAll = false;
    // How many match, when the counts say (no tag or payload filter).
    const total = !f.tag && !f.where ? countOf(d && d.counts, f.state) : null;
    const more = all && (d.next_after_id != null || S.after != null || (total !== null && total > jobs.length));
    const rowState = ROW_STATE[f.state] || f.state;
    return h('div', { class: 'panel' },
      h('div', { class: 'panel-head' },
        h('label', { class: 'check', title: 'Select every job on this page' },
          h('input', {
            type: 'checkbox', testid: 'jobs-select-all', disabled: !jobs || !jobs.length, checked: all,
            onchange: (ev) => { for (const j of jobs || []) { if (ev.target.checked) sel.add(j.id); else sel.delete(j.id); } if (!ev.target.checked) S.selAll = false; render(); },
          })),
        h('span', { class: 'sub', testid: 'jobs-selected', text: S.selAll
          ? `every matching job selected${total !== null ? ` (${fmtInt(total)})` : ''}`
          : chosen.length ? `${plural(chosen.length, 'job', 'jobs')} selected` : 'select jobs for a bulk action' }),
        more ? h('button', {
          class: 'link', testid: 'jobs-select-matching', 'aria-pressed': String(S.selAll),
          onclick: () => { S.selAll = !S.selAll; render(); },
          text: S.selAll ? 'Only this page' : `Select all ${total !== null ? fmtInt(total) + ' ' : ''}matching`,
        }) : null,
        h('span', { class: 'bulk' }, BULK.map((b) => {
          if (S.selAll) {
            return h('button', {
              key: b.action, testid: `jobs-bulk-${b.action}`, class: b.danger ? 'danger' : null, title: `every matching job: ${b.title}`,
              disabled: (rowState !== '' && !b.states.includes(rowState)) || S.busy.has('jobs:bulk'),
              onclick: () => bulkMatching(b, f, total), text: `${b.label} all`,
            });
          }
          const n = chosen.filter((j) => b.states.includes(j.state)).length;
          return h('button', {
            key: b.action, testid: `jobs-bulk-${b.action}`, class: b.danger ? 'danger' : null, title: b.title,
            disabled: n === 0 || S.busy.has('jobs:bulk'), onclick: () => bulkJobs(b, chosen),
            text: n ? `${b.label} ${fmtInt(n)}` : b.label,
          });
        })),
        h('span', { class: 'spacer' }),
        h('span', { class: 'sub', text: 'lowest ids first' }),
        pager()),
      d && d.listError ? h('div', { class: 'empty error', testid: 'jobs-error', text: d.listError.message })
        : jobs === undefined || jobs === null ? loading()
          : jobs.length === 0 ? h('div', { class: 'empty', testid: 'jobs-empty', text: d.next_after_id
            ? 'None in the 10,000 jobs read: Next → reads on.' : 'No jobs match.' })
            : table({ testid: 'all-jobs-table', class: 'jobs' },
              h('thead', null, h('tr', null,
                h('th', { class: 'check' }), h('th', { text: 'Id', title: ID_NOTE }), h('th', { text: 'Queue' }), h('th', { text: 'State' }),
                h('th', { class: 'num', text: 'Attempts' }), h('th', { text: 'Run at' }), h('th', { text: 'Created' }),
                h('th', { text: 'Worker' }), h('th', { text: 'Payload' }), h('th', { text: 'Last error' }))),
              h('tbody', null, jobs.map((j) => h('tr', {
                key: j.id, testid: 'jobs-row', 'data-job-id': j.id, 'data-state': j.state, class: sel.has(j.id) ? 'selected' : null,
              },
              h('td', { class: 'check' }, h('input', {
                type: 'checkbox', testid: 'job-select', checked: sel.has(j.id), 'aria-label': `Select job ${j.id}`,
                onchange: (ev) => { if (ev.target.checked) sel.add(j.id); else { sel.delete(j.id); S.selAll = false; } render(); },
              })),
              h('td', null, h('a', { class: 'mono', href: `#/jobs/${j.id}`, text: j.id })),
              h('td', null, h('a', { class: 'mono', href: `#/queues/${enc(j.queue)}`, text: j.queue })),
              h('td', { class: 'nw' }, statePill(j)),
              h('td', { class: 'num', text: `${j.attempts}/${j.max_attempts}` }),
              h('td', { class: 'nw', title: iso(j.run_at), text: fmtTime(j.run_at) }),
              h('td', { class: 'nw', title: iso(j.created_at), text: fmtTime(j.created_at) }),
              h('td', { class: 'mono', text: j.worker || '–' }),
              h('td', { class: 'truncate' }, j.tags && j.tags.length ? tagChips(j.tags, j.state) : null,
                h('span', { class: 'mono', testid: 'jobs-payload', title: pretty(j.payload, j.payload_base64), text: preview(j.payload, j.payload_base64) })),
              h('td', { class: 'truncate', title: j.last_error, text: j.last_error || '' }))))));
  }

  // Act on every job the filters match, a page of ids per request, until
  // the server says it read them all.
  function bulkMatching(b, f, total) {
    const how = total !== null ? plural(total, 'job', 'jobs') : 'every job';
    if (!window.confirm(`${b.label} ${how} matching these filters? ${b.title[0].toUpperCase()}${b.title.slice(1)}.`)) return;
    return act('jobs:bulk', (r) => `${b.done} ${plural(r.changed, 'job', 'jobs')} of ${fmtInt(r.matched)} matching` +
      (r.requested ? `; ${plural(r.requested, 'running job', 'running jobs')} asked to stop` : ''), async () => {
      const sum = { changed: 0, requested: 0, matched: 0 };
      const matching = { state: f.state || undefined, queue: f.queue || undefined, tag: f.tag || undefined, where: f.where || undefined, after_id: 0 };
      for (let i = 0; i < 10000; i++) {
        const r = await api('POST', '/api/v1/jobs/bulk', { action: b.action, matching });
        sum.changed += r.changed;
        sum.requested += r.requested;
        sum.matched += r.matched || 0;
        if (r.next_after_id == null) break;
        matching.after_id = r.next_after_id;
      }
      S.sel.clear();
      S.selAll = false;
      return sum;
    });
  }

  function bulkJobs(b, chosen) {
    const ids = chosen.filter((j) => b.states.includes(j.state)).map((j) => j.id);
    if (!ids.length) return;
    if (b.danger && !window.confirm(`${b.label} ${plural(ids.length, 'job', 'jobs')}? ${b.title[0].toUpperCase()}${b.title.slice(1)}.`)) return;
    return act('jobs:bulk', (r) => {
      const left = ids.length - r.changed - r.requested;
      return `${b.done} ${plural(r.changed, 'job', 'jobs')}` +
        (r.requested ? `; ${plural(r.requested, 'running job', 'running jobs')} asked to stop` : '') +
        (left > 0 ? `; ${fmtInt(left)} had moved on and were left alone` : '');
    }, async () => {
      const r = await api('POST', '/api/v1/jobs/bulk', { action: b.action, ids });
      S.sel.clear();
      return r;
    });
  }

  // -------------------------------------------------------------- start

  // For the browser test: the parts with no server-side twin.
  window.alkDashboard = Object.freeze({ rates, ratesOver, niceAxis });

  window.addEventListener('hashchange', onRoute);
  window.addEventListener('resize', () => render());
  // Countdowns move between polls.
  setInterval(() => {
    if (['groups', 'schedules', 'locks', 'job', 'processes', 'stream'].includes(S.route.view)) render();
  }, 250);
  onRoute();
})();
