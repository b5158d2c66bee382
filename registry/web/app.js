// The DDE registry dashboard: renders the snapshots of the live feed (WebSocket /dashboard/live)
// and drives the REST API (/registry/...). No framework, no external files: it works offline.
'use strict';

// A bearer token, if the registry asks for one (it answers 401): given once as ?token=... or typed
// into the prompt, kept in sessionStorage for this tab and sent on every request and the live feed.
const token = (() => {
  const params = new URLSearchParams(location.search);
  const t = params.get('token');
  if (t) {
    sessionStorage.setItem('dde-token', t);
    // Out of the address bar and the history.
    params.delete('token');
    const rest = params.toString();
    history.replaceState(null, '', location.pathname + (rest ? '?' + rest : '') + location.hash);
  }
  return sessionStorage.getItem('dde-token') || '';
})();

let askedForToken = false;
/** Asks once per page for a token after a 401, then reloads with it. */
function askForToken(wrong) {
  if (askedForToken) return;
  askedForToken = true;
  const t = window.prompt(wrong ? 'The token was refused. Registry token:' : 'This registry needs a token:');
  if (t === null || t.trim() === '') return;
  sessionStorage.setItem('dde-token', t.trim());
  location.reload();
}

const $ = (sel, root = document) => root.querySelector(sel);

/** Creates an element with attributes and children (strings become text: nothing is parsed as HTML). */
function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat(Infinity)) if (c !== null && c !== undefined) e.append(c instanceof Node ? c : String(c));
  return e;
}

/** Calls the REST API; resolves with the JSON answer, rejects with the API's own error text. */
async function api(method, path, body) {
  const headers = {};
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (token) headers['Authorization'] = 'Bearer ' + token;
  let res;
  try {
    res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (e) {
    throw new Error('the registry cannot be reached: ' + e.message);
  }
  if (res.status === 401) askForToken(Boolean(token));
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch (_) { /* not JSON */ }
  if (!res.ok) throw new Error((json && json.error) || `HTTP ${res.status}: ${text.slice(0, 200)}`);
  return json;
}

function show(target, ok, text) {
  target.hidden = false;
  target.className = (target.id === 'message' ? '' : 'result ') + (ok ? 'ok' : 'bad');
  target.textContent = text;
}

// ---- state rendered from the feed ----

let snapshot = { nodes: [] };
const poolRows = new Map();  // key "node/system/isolate" -> row
let selectedKey = null;      // the pool whose details are shown

function poolsOf(snap) {
  const out = [];
  for (const node of snap.nodes || [])
    for (const system of node.systems || [])
      for (const pool of system.pools || []) out.push({ node, system, pool, key: `${node.bootstrapperId}/${pool.id}` });
  return out;
}

const missing = (v) => v === undefined || v === null;
const fmt = (v, digits = 0) => (missing(v) ? '-' : Number(v).toFixed(digits));
const count = (v) => (missing(v) ? '-' : Number(v).toLocaleString('en-US'));
/** A name that may wrap after its '/' and '.' rather than inside a word. */
const breakable = (name) => String(name).split(/(?<=[/.])/).flatMap((part, i) => (i ? [el('wbr'), part] : [part]));
const compact = new Intl.NumberFormat('en-US', { notation: 'compact', maximumFractionDigits: 1 });

// ---- health: a pool's state, and the worst of its pools for its system and its node ----

const rank = { ok: 0, warn: 1, bad: 2 };
const worst = (a, b) => (rank[b] > rank[a] ? b : a);
const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** ok: running; bad: stopped (by supervision), not connected (to its MQS), not answering (its isolate system
 * did not describe itself) or failed; warn: the rest. */
function severityOf(state) {
  if (state === 'running') return 'ok';
  if (/^(stopped|not connected|not answering|failed)/.test(state || '')) return 'bad';
  return 'warn';
}

const poolStateOf = (pool, system) => pool.poolState || system.state || '';

/** The words of a state before its reason ("stopped", "not connected"): what a badge shows. */
function stateWord(state) {
  const colon = state.indexOf(':');
  return colon < 0 ? state : state.slice(0, colon);
}

/** What is wrong in a system: its process, then its pools by state ("2 pools stopped"). */
function systemHealth(system) {
  let severity = system.state && system.state !== 'running' ? severityOf(system.state) : 'ok';
  const words = new Map();
  for (const pool of system.pools || []) {
    const state = poolStateOf(pool, system);
    const s = severityOf(state);
    if (s === 'ok') continue;
    severity = worst(severity, s);
    words.set(stateWord(state), (words.get(stateWord(state)) || 0) + 1);
  }
  const problems = [...words].map(([word, n]) => `${plural(n, 'pool')} ${word}`);
  return { severity, problems };
}

/** A node's badge: unreachable, the problems of its systems, or healthy. */
function nodeHealth(node) {
  if (node.health !== 'ok') return { severity: 'bad', text: node.health || 'unknown' };
  let severity = 'ok';
  const problems = [];
  for (const s of node.systems || []) {
    const h = systemHealth(s);
    severity = worst(severity, h.severity);
    if (s.state && s.state !== 'running') problems.push(`${s.name} ${s.state}`);
    problems.push(...h.problems);
  }
  return { severity, text: problems.length ? problems.join(', ') : 'healthy' };
}

function renderNodes(snap) {
  const box = $('#nodes');
  box.replaceChildren();
  if (!snap.nodes || snap.nodes.length === 0) {
    box.append(el('p', { class: 'empty' }, 'No node has registered.'));
    return;
  }
  for (const node of snap.nodes) {
    const health = nodeHealth(node);
    const systems = el('ul');
    for (const s of node.systems || []) {
      const h = systemHealth(s);
      systems.append(el('li', { class: 'sev-' + h.severity, 'data-system': s.name, 'data-severity': h.severity },
        el('strong', {}, s.name), ' ',
        el('span', { class: 'badge ' + (s.state ? severityOf(s.state) : 'warn'), title: s.lastExit || '' }, s.state || '?'),
        h.problems.length ? [' ', el('span', { class: 'badge problem ' + h.severity }, h.problems.join(', '))] : null,
        s.pid ? el('span', { class: 'addr' }, ` pid ${s.pid}`) : null,
        s.restarts ? el('span', { class: 'addr' }, ` process restarts ${s.restarts}`) : null, ' ',
        el('button', { class: 'danger shutdown-system', onclick: () => shutdown(node, s.name) }, 'Shut down')));
    }
    if (!node.systems || node.systems.length === 0) systems.append(el('li', { class: 'empty' }, 'no isolate system'));
    box.append(el('div', { class: 'node sev-' + health.severity, 'data-id': node.bootstrapperId,
                           'data-name': node.name || '', 'data-severity': health.severity },
      el('h3', {}, node.name || node.bootstrapperId,
        el('span', { class: 'badge status ' + health.severity, title: node.error || '' }, health.text)),
      el('div', { class: 'addr' }, `id ${node.bootstrapperId} · ${node.ip}:${node.port}`),
      node.activator ? el('div', { class: 'addr' }, node.activator) : null,
      node.error ? el('div', { class: 'error' }, node.error) : null,
      systems));
  }
}

// ---- the pool table ----

const columns = ['pool', 'setup', 'state', 'in', 'out', 'sent', 'inflight', 'queue', 'redelivered', 'dead', 'chart', 'actions'];
const numeric = new Set(['in', 'out', 'sent', 'inflight', 'queue', 'redelivered', 'dead']);

function poolRow(key) {
  let row = poolRows.get(key);
  if (row) return row;
  row = el('tr', { 'data-key': key, tabindex: 0 });
  for (const n of columns) row.append(el('td', { class: (numeric.has(n) ? 'num ' : '') + 'c-' + n }));
  row.querySelector('.c-chart').append(el('canvas', { class: 'chart', width: 160, height: 40 }));
  const toggle = (ev) => {
    if (ev.target.closest('button')) return;  // Shut down
    select(selectedKey === key ? null : key);
  };
  row.addEventListener('click', toggle);
  row.addEventListener('keydown', (ev) => { if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); toggle(ev); } });
  poolRows.set(key, row);
  return row;
}

function cell(row, name, ...content) {
  row.querySelector('.c-' + name).replaceChildren(...content.flat().filter((c) => c !== null && c !== undefined));
}

/** A state as a badge (its first words) and its reason beneath, cut to three lines (whole in the details). */
function stateCell(state, lastError) {
  const word = stateWord(state);
  const reason = state.slice(word.length).replace(/^:\s*/, '');
  return [el('span', { class: 'badge ' + severityOf(state) }, word || '?'),
    reason ? el('span', { class: 'sub clamp', title: state }, reason) : null,
    lastError && !state.includes(lastError) ? el('span', { class: 'sub clamp error', title: lastError }, lastError) : null];
}

/** Dead letters: how many the pool dead-lettered, and how many wait in dde.dead.<queue>; red when not 0. */
function deadCell(td, live) {
  const dead = live.deadLettered, depth = live.deadLetterDepth;
  const hot = (dead || 0) > 0 || (depth || 0) > 0;
  td.classList.toggle('hot', hot);
  return [el('span', { class: 'dead-count', title: 'messages the pool dead-lettered' }, count(dead)),
    el('span', { class: 'sub dlq', title: 'messages in the dead-letter queue' }, 'DLQ ' + count(depth))];
}

function renderPools(snap) {
  const tbody = $('#pools tbody');
  const seen = new Set();
  for (const { node, system, pool, key } of poolsOf(snap)) {
    seen.add(key);
    const row = poolRow(key);
    const live = pool.live || {}, stats = pool.stats || {};
    row.dataset.pool = pool.id;
    row.dataset.node = node.bootstrapperId;
    row.classList.toggle('selected', key === selectedKey);
    const state = poolStateOf(pool, system);
    row.dataset.severity = severityOf(state);
    const hot = pool.hotDeploy;
    const hotText = pool.hotDeployment ? (hot ? hot.state : 'on') : 'off';
    cell(row, 'pool', el('strong', { class: 'pool-name' }, breakable(pool.id)),
      el('span', { class: 'sub' }, 'on ', el('span', { class: 'c-node' }, node.name || node.bootstrapperId)),
      el('span', { class: 'sub' }, 'queue ', breakable(pool.topic)));
    cell(row, 'setup',
      el('span', { class: 'c-workers', title: (pool.workersPaths || []).join(', ') }, plural(pool.workersCount, 'worker')),
      ' · ', el('span', { class: 'c-router' }, pool.routerType),
      el('span', { class: 'sub c-delivery' }, pool.deliveryMode || ''),
      el('span', { class: 'sub c-plugin', title: (hot && (hot.error || hot.fetchError)) || pool.pluginMd5 || '' },
        el('code', {}, (pool.pluginMd5 || '').slice(0, 8) || '-'), ` hot deploy ${hotText}` + (hot && hot.swaps ? ` (${hot.swaps})` : '')),
      hot && hot.error ? el('span', { class: 'sub clamp error' }, hot.error) : null);
    cell(row, 'state', stateCell(state, pool.lastError));
    cell(row, 'in', fmt(live.in, 1));
    cell(row, 'out', fmt(live.out, 1));
    cell(row, 'sent', el('span', { class: 'rate' }, fmt(live.sent, 1)),
      el('span', { class: 'sub', title: 'messages the workers sent' }, missing(stats.sent) ? '' : compact.format(stats.sent)));
    cell(row, 'inflight', fmt(live.inFlight));
    cell(row, 'queue', fmt(live.queueDepth));
    cell(row, 'redelivered', fmt(live.redelivered));
    const dead = row.querySelector('.c-dead');
    cell(row, 'dead', deadCell(dead, live));
    cell(row, 'actions', el('button', { class: 'danger shutdown-pool',
      onclick: () => shutdown(node, system.name, pool.id.split('/')[1]) }, 'Shut down'));
    drawChart(row.querySelector('canvas'), live.history);
    tbody.append(row);  // keeps snapshot order
  }
  for (const [key, row] of poolRows) if (!seen.has(key)) { row.remove(); poolRows.delete(key); }
  $('#no-pools').hidden = seen.size > 0;
}

/** Messages out (solid), in (dashed) and sent (dotted) per second over the history, scaled to the largest. */
function drawChart(canvas, history) {
  const h = history || { t: [], in: [], out: [] };
  const sent = h.sent || [];
  canvas.dataset.points = h.t.length;
  const ctx = canvas.getContext('2d');
  const w = canvas.width, ht = canvas.height;
  ctx.clearRect(0, 0, w, ht);
  ctx.fillStyle = '#f8fafc';
  ctx.fillRect(0, 0, w, ht);
  const n = h.t.length;
  if (n < 2) return;
  const max = Math.max(1, ...h.in, ...h.out, ...sent);
  const t0 = h.t[0], span = Math.max(1, h.t[n - 1] - t0);
  const line = (values, color, dash) => {
    if (values.length !== n) return;
    ctx.beginPath();
    ctx.setLineDash(dash);
    ctx.strokeStyle = color;
    ctx.lineWidth = 1.5;
    values.forEach((v, i) => {
      const x = ((h.t[i] - t0) / span) * (w - 2) + 1, y = ht - 12 - (v / max) * (ht - 16);
      if (i === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
    });
    ctx.stroke();
  };
  line(h.in, '#94a3b8', [3, 2]);
  line(sent, '#15803d', [1, 2]);
  line(h.out, '#2563eb', []);
  ctx.setLineDash([]);
  ctx.fillStyle = '#6b7280';
  ctx.font = '10px system-ui, sans-serif';
  ctx.fillText(`max ${max.toFixed(0)}/s · ${Math.round(span)} s`, 2, ht - 2);
}

// ---- one pool's details ----

/** Shows the details of the pool `key` (null: none). */
function select(key) {
  selectedKey = key;
  for (const [k, row] of poolRows) row.classList.toggle('selected', k === key);
  renderDetail(snapshot);
  if (key) $('#pool-detail').scrollIntoView({ block: 'nearest', behavior: 'smooth' });
}

function figure(name, label, value, sub, hot) {
  return el('div', { class: 'figure' + (hot ? ' hot' : ''), 'data-figure': name },
    el('span', { class: 'label' }, label), el('span', { class: 'value' }, value),
    sub ? el('span', { class: 'sub' }, sub) : null);
}

/** The rows of the latency table: p50, p90, p99 in ms and the count, or "-" where the pool gave none. */
function latencyRow(name, label, l) {
  const ms = (v) => (missing(v) ? '-' : Number(v).toFixed(Number(v) < 10 ? 2 : 1));
  return el('tr', { 'data-latency': name }, el('th', {}, label),
    el('td', { class: 'num' }, ms(l && l.p50)), el('td', { class: 'num' }, ms(l && l.p90)),
    el('td', { class: 'num' }, ms(l && l.p99)), el('td', { class: 'num' }, count(l && l.count)));
}

function workerState(state) {
  if (state === 'running') return 'ok';
  return state === 'down' || state === 'killed' ? 'bad' : 'warn';
}

function renderDetail(snap) {
  const box = $('#pool-detail');
  const found = selectedKey && poolsOf(snap).find((p) => p.key === selectedKey);
  if (!found) {
    box.hidden = true;
    box.replaceChildren();
    return;
  }
  const { node, system, pool } = found;
  const live = pool.live || {}, stats = pool.stats || {}, gov = pool.governance || {};
  const latency = pool.latency || {};
  const state = poolStateOf(pool, system);
  const rate = (v) => (missing(v) ? '-' : `${fmt(v, 1)}/s`);
  const nonZero = (v) => (v || 0) > 0;
  const dead = gov.deadLettered ?? live.deadLettered;
  box.dataset.key = selectedKey;
  box.dataset.pool = pool.id;
  box.hidden = false;
  const link = pool.mqsLink;
  const facts = [
    ['state', state],
    ['last error', pool.lastError],
    ['router', `${pool.routerType}, ${pool.deliveryMode || ''}`],
    ['workers paths', (pool.workersPaths || []).join(', ')],
    ['rate', pool.rate ? `${pool.rate.messages} per ${pool.rate.perMs} ms` : 'no limit'],
    ['max in flight', pool.maxInFlight || 'no limit'],
    ['governance', `${count(gov.retries)} retries, ${count(gov.rateLimited)} rate limited, ${count(gov.pauses)} pauses`],
    ['paused', gov.pausedForMs ? `${gov.pausedForMs} ms more: ${gov.lastPauseReason || ''}` : null],
    ['MQS', `${pool.messageQueuingSystemServer || '-'}` + (link ? (link.linked ? ' (linked)' : ` (not linked: ${link.error || '?'})`) : '')],
    ['plugin', pool.pluginMd5 ? `md5 ${pool.pluginMd5}` : null],
    ['hot deploy', pool.hotDeploy ? [pool.hotDeploy.state, pool.hotDeploy.error].filter(Boolean).join(': ') : null],
  ].filter(([, v]) => !missing(v) && v !== '');
  const workers = el('tbody');
  for (const w of pool.workers || []) {
    workers.append(el('tr', { 'data-worker': w.id },
      el('td', {}, el('code', { title: w.id }, String(w.id).slice(0, 8))), el('td', { class: 'wrap' }, w.path || ''),
      el('td', {}, el('span', { class: 'badge ' + workerState(w.state) }, w.state || '?')),
      el('td', { class: 'num' }, count(w.inFlight)), el('td', { class: 'num' }, count(w.done)),
      el('td', { class: 'wrap error' }, w.error || '')));
  }
  const chart = el('canvas', { class: 'chart wide', width: 640, height: 110 });
  box.replaceChildren(
    el('div', { class: 'detail-head' },
      el('h3', {}, pool.id, ' ', el('span', { class: 'badge ' + severityOf(state) }, stateWord(state) || '?')),
      el('span', { class: 'addr' }, `on ${node.name || node.bootstrapperId} · queue ${pool.topic}`),
      el('button', { class: 'close', title: 'close the details', onclick: () => select(null) }, 'Close')),
    el('div', { class: 'figures' },
      figure('in', 'in', rate(live.in), `${count(stats.delivered)} received`),
      figure('out', 'out', rate(live.out), `${count(stats.done)} done`),
      figure('sent', 'sent', rate(live.sent), `${count(stats.sent)} sent`),
      figure('acked', 'acked', count(stats.acked)),
      figure('redelivered', 'redelivered', count(stats.redelivered),
        missing(live.redelivered) ? null : `broker flag: ${count(live.redelivered)}`),
      figure('deadLettered', 'dead-lettered', count(dead), null, nonZero(dead)),
      figure('failed', 'failed', count(stats.failed), null, nonZero(stats.failed)),
      figure('inFlight', 'in flight', count(live.inFlight)),
      figure('queueDepth', 'queue depth', count(live.queueDepth)),
      figure('deadLetterDepth', 'DLQ depth', count(live.deadLetterDepth), null, nonZero(live.deadLetterDepth)),
      figure('restarts', 'worker restarts', count(stats.restarts), null, nonZero(stats.restarts))),
    el('div', { class: 'detail-grid' },
      el('div', {},
        el('h4', {}, 'Latency (ms)'),
        el('table', { class: 'latency' },
          el('thead', {}, el('tr', {}, el('th', {}), el('th', { class: 'num' }, 'p50'), el('th', { class: 'num' }, 'p90'),
            el('th', { class: 'num' }, 'p99'), el('th', { class: 'num' }, 'count'))),
          el('tbody', {}, latencyRow('handling', 'handling', latency.handlingMs),
            latencyRow('queue', 'time in queue', latency.queueMs)))),
      el('div', {},
        el('h4', {}, 'Throughput (5 min)'), chart,
        el('p', { class: 'legend' }, el('span', { class: 'out' }, 'out'), el('span', { class: 'in' }, 'in'),
          el('span', { class: 'sent' }, 'sent')))),
    el('h4', {}, 'Workers'),
    el('table', { class: 'workers' },
      el('thead', {}, el('tr', {}, el('th', {}, 'id'), el('th', {}, 'path'), el('th', {}, 'state'),
        el('th', { class: 'num' }, 'in flight'), el('th', { class: 'num' }, 'done'), el('th', {}, 'error'))),
      workers),
    el('dl', { class: 'facts' }, facts.map(([k, v]) => [el('dt', {}, k), el('dd', {}, String(v))])));
  drawChart(chart, live.history);
}

function fillSelect(select, options, keepFirst = 0) {
  const previous = select.value;
  while (select.options.length > keepFirst) select.remove(keepFirst);
  for (const [value, label] of options) select.append(el('option', { value }, label));
  if ([...select.options].some((o) => o.value === previous)) select.value = previous;
}

function renderForms(snap) {
  const nodes = (snap.nodes || []).map((n) => [n.bootstrapperId, `${n.name || n.bootstrapperId} (${n.bootstrapperId})`]);
  fillSelect($('#deploy-form [name=bootstrapperId]'), nodes);
  fillSelect($('#manage-form [name=toBootstrapperId]'), nodes, 1);
  fillSelect($('#manage-form [name=pool]'), poolsOf(snap).map(({ node, pool, key }) => [key, `${pool.id} on ${node.name || node.bootstrapperId}`]));
  const mqs = $('#deploy-form [name=messageQueuingSystemServer]');
  if (!mqs.value) {
    const first = poolsOf(snap).find((p) => p.pool.messageQueuingSystemServer);
    if (first) mqs.value = first.pool.messageQueuingSystemServer;
  }
}

function render(snap) {
  snapshot = snap;
  renderNodes(snap);
  renderPools(snap);
  renderDetail(snap);
  renderForms(snap);
  const pools = poolsOf(snap);
  const failing = pools.filter(({ pool, system }) => severityOf(poolStateOf(pool, system)) !== 'ok').length;
  $('#summary').textContent = `${(snap.nodes || []).length} node(s), ${pools.length} pool(s)` +
    (failing ? ` · ${failing} not running` : '');
  const err = $('#mqs-error');
  err.hidden = !snap.mqsError;
  err.textContent = snap.mqsError ? 'MQS figures unavailable: ' + snap.mqsError : '';
}

// ---- live feed ----

function connect(delay = 500) {
  const url = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/dashboard/live' +
    (token ? '?token=' + encodeURIComponent(token) : '');
  const ws = new WebSocket(url);
  const state = $('#feed-state');
  let opened = false;
  ws.onopen = () => { opened = true; state.textContent = 'live'; state.className = 'badge on'; delay = 500; };
  ws.onmessage = (e) => { try { render(JSON.parse(e.data)); } catch (err) { console.error(err); } };
  ws.onclose = () => {
    state.textContent = 'disconnected'; state.className = 'badge off';
    // A refused upgrade says nothing to the page: a GET tells whether a token is missing.
    if (!opened) api('GET', '/registry/health').catch(() => {});
    setTimeout(() => connect(Math.min(delay * 2, 10000)), delay);
  };
}

// ---- actions ----

async function shutdown(node, system, isolate) {
  const what = isolate ? `pool ${system}/${isolate}` : `isolate system ${system}`;
  if (!confirm(`Shut down ${what} on ${node.name || node.bootstrapperId}?`)) return;
  const body = { bootstrapperId: node.bootstrapperId, isolateSystemName: system };
  if (isolate) body.isolateName = isolate;
  try {
    await api('POST', '/registry/system/shutdown', body);
    show($('#message'), true, `Shut down ${what}.`);
  } catch (e) {
    show($('#message'), false, `Shutdown of ${what} failed: ${e.message}`);
  }
}

$('#deploy-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const f = ev.target, out = $('#deploy-message');
  const body = {
    bootstrapperId: f.bootstrapperId.value,
    action: 'action.addIsolate',
    messageQueuingSystemServer: f.messageQueuingSystemServer.value.trim(),
    isolateSystemName: f.isolateSystemName.value.trim(),
    isolateName: f.isolateName.value.trim(),
    uri: f.uri.value.trim(),
    workersPaths: f.workersPaths.value.split(',').map((s) => s.trim()).filter((s) => s),
    routerType: f.routerType.value,
    hotDeployment: f.hotDeployment.checked,
    deliveryMode: f.deliveryMode.value,
  };
  if (f.credits.value) body.credits = Number(f.credits.value);
  if (f.args.value.trim()) {
    try { body.args = JSON.parse(f.args.value); } catch (e) { return show(out, false, 'args is not valid JSON: ' + e.message); }
  }
  const button = f.querySelector('button[type=submit]');
  button.disabled = true;
  show(out, true, 'Deploying…');
  try {
    await api('POST', '/registry/deploy', body);
    show(out, true, `Deployed ${body.isolateSystemName}/${body.isolateName}.`);
  } catch (e) {
    show(out, false, e.message);
  } finally {
    button.disabled = false;
  }
});

function selectedPool() {
  const key = $('#manage-form [name=pool]').value;
  return poolsOf(snapshot).find((p) => p.key === key);
}

$('#rate-button').addEventListener('click', async () => {
  const f = $('#manage-form'), out = $('#manage-message'), p = selectedPool();
  if (!p) return show(out, false, 'choose a pool');
  const [system, isolate] = p.pool.id.split('/');
  const body = { bootstrapperId: p.node.bootstrapperId, isolateSystemName: system, isolateName: isolate };
  if (f.messages.value) body.rate = { messages: Number(f.messages.value), perMs: Number(f.perMs.value || 1000) };
  if (f.maxInFlight.value) body.maxInFlight = Number(f.maxInFlight.value);
  try {
    await api('POST', '/registry/system/rate', body);
    show(out, true, body.rate || body.maxInFlight ? `Rate of ${p.pool.id} set.` : `Rate limit of ${p.pool.id} removed.`);
  } catch (e) {
    show(out, false, e.message);
  }
});

$('#migrate-button').addEventListener('click', async () => {
  const f = $('#manage-form'), out = $('#manage-message'), p = selectedPool();
  if (!p) return show(out, false, 'choose a pool');
  const [system, isolate] = p.pool.id.split('/');
  const body = { bootstrapperId: p.node.bootstrapperId, isolateSystemName: system, isolateName: isolate };
  if (f.toBootstrapperId.value) body.toBootstrapperId = f.toBootstrapperId.value;
  const paths = f.migrateWorkers.value.split(',').map((s) => s.trim()).filter((s) => s);
  if (paths.length) body.workersPaths = paths;
  try {
    await api('POST', '/registry/migrate', body);
    show(out, true, `Migrated ${p.pool.id}.`);
  } catch (e) {
    show(out, false, e.message);
  }
});

connect();
