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
  for (const c of children.flat()) if (c !== null && c !== undefined) e.append(c instanceof Node ? c : String(c));
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

function poolsOf(snap) {
  const out = [];
  for (const node of snap.nodes || [])
    for (const system of node.systems || [])
      for (const pool of system.pools || []) out.push({ node, system, pool, key: `${node.bootstrapperId}/${pool.id}` });
  return out;
}

const fmt = (v, digits = 0) => (v === undefined || v === null ? '–' : Number(v).toFixed(digits));

function renderNodes(snap) {
  const box = $('#nodes');
  box.replaceChildren();
  if (!snap.nodes || snap.nodes.length === 0) {
    box.append(el('p', { class: 'empty' }, 'No node has registered.'));
    return;
  }
  for (const node of snap.nodes) {
    const healthy = node.health === 'ok';
    const systems = el('ul');
    for (const s of node.systems || []) {
      systems.append(el('li', { 'data-system': s.name },
        el('strong', {}, s.name), ' ',
        el('span', { class: 'badge ' + (s.state === 'running' ? 'ok' : 'warn') }, s.state || '?'),
        s.pid ? el('span', { class: 'addr' }, ` pid ${s.pid}`) : null,
        s.restarts ? el('span', { class: 'addr' }, ` process restarts ${s.restarts}`) : null, ' ',
        el('button', { class: 'danger shutdown-system', onclick: () => shutdown(node, s.name) }, 'Shut down')));
    }
    if (!node.systems || node.systems.length === 0) systems.append(el('li', { class: 'empty' }, 'no isolate system'));
    box.append(el('div', { class: 'node', 'data-id': node.bootstrapperId, 'data-name': node.name || '' },
      el('h3', {}, node.name || node.bootstrapperId,
        el('span', { class: 'badge ' + (healthy ? 'ok' : 'bad'), title: node.error || '' }, healthy ? 'healthy' : node.health)),
      el('div', { class: 'addr' }, `id ${node.bootstrapperId} · ${node.ip}:${node.port}`),
      node.activator ? el('div', { class: 'addr' }, node.activator) : null,
      node.error ? el('div', { class: 'error' }, node.error) : null,
      systems));
  }
}

function poolRow(key) {
  let row = poolRows.get(key);
  if (row) return row;
  row = el('tr', { 'data-key': key });
  const names = ['pool', 'node', 'router', 'workers', 'delivery', 'plugin', 'state', 'in', 'out', 'inflight',
                 'queue', 'redelivered', 'dead', 'chart', 'actions'];
  const numeric = new Set(['in', 'out', 'inflight', 'queue', 'redelivered', 'dead']);
  for (const n of names) row.append(el('td', { class: (numeric.has(n) ? 'num ' : '') + 'c-' + n }));
  row.querySelector('.c-chart').append(el('canvas', { class: 'chart', width: 180, height: 40 }));
  poolRows.set(key, row);
  return row;
}

function cell(row, name, ...content) {
  row.querySelector('.c-' + name).replaceChildren(...content.filter((c) => c !== null && c !== undefined));
}

function renderPools(snap) {
  const tbody = $('#pools tbody');
  const seen = new Set();
  for (const { node, system, pool, key } of poolsOf(snap)) {
    seen.add(key);
    const row = poolRow(key);
    const live = pool.live || {};
    row.dataset.pool = pool.id;
    row.dataset.node = node.bootstrapperId;
    const hot = pool.hotDeploy;
    const hotText = pool.hotDeployment ? (hot ? hot.state : 'on') : 'off';
    cell(row, 'pool', el('strong', {}, pool.id), el('span', { class: 'sub' }, `queue ${pool.topic}`));
    cell(row, 'node', node.name || node.bootstrapperId);
    cell(row, 'router', pool.routerType);
    cell(row, 'workers', String(pool.workersCount),
      el('span', { class: 'sub' }, (pool.workersPaths || []).join(', ')));
    cell(row, 'delivery', pool.deliveryMode || '');
    cell(row, 'plugin', el('code', { title: pool.pluginMd5 || '' }, (pool.pluginMd5 || '').slice(0, 8) || '–'),
      el('span', { class: 'sub', title: (hot && (hot.error || hot.fetchError)) || '' },
        `hot deploy: ${hotText}` + (hot && hot.swaps ? ` (${hot.swaps} swaps)` : '')),
      hot && hot.error ? el('span', { class: 'sub error' }, hot.error) : null);
    const state = pool.poolState || system.state || '';
    cell(row, 'state', el('span', { class: 'badge ' + (state === 'running' ? 'ok' : 'warn') }, state),
      pool.lastError ? el('span', { class: 'sub error', title: pool.lastError }, pool.lastError.slice(0, 120)) : null);
    cell(row, 'in', fmt(live.in, 1));
    cell(row, 'out', fmt(live.out, 1));
    cell(row, 'inflight', fmt(live.inFlight));
    cell(row, 'queue', fmt(live.queueDepth));
    cell(row, 'redelivered', fmt(live.redelivered));
    cell(row, 'dead', fmt(live.deadLetterDepth ?? live.deadLettered));
    cell(row, 'actions', el('button', { class: 'danger shutdown-pool',
      onclick: () => shutdown(node, system.name, pool.id.split('/')[1]) }, 'Shut down'));
    drawChart(row.querySelector('canvas'), live.history || { t: [], in: [], out: [] });
    tbody.append(row);  // keeps snapshot order
  }
  for (const [key, row] of poolRows) if (!seen.has(key)) { row.remove(); poolRows.delete(key); }
  $('#no-pools').hidden = seen.size > 0;
}

/** Messages out (solid) and in (dashed) per second over the history, scaled to the largest value. */
function drawChart(canvas, h) {
  const ctx = canvas.getContext('2d');
  const w = canvas.width, ht = canvas.height;
  ctx.clearRect(0, 0, w, ht);
  ctx.fillStyle = '#f8fafc';
  ctx.fillRect(0, 0, w, ht);
  const n = h.t.length;
  if (n < 2) return;
  const max = Math.max(1, ...h.in, ...h.out);
  const t0 = h.t[0], span = Math.max(1, h.t[n - 1] - t0);
  const line = (values, color, dash) => {
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
  line(h.out, '#2563eb', []);
  ctx.setLineDash([]);
  ctx.fillStyle = '#6b7280';
  ctx.font = '10px system-ui, sans-serif';
  ctx.fillText(`max ${max.toFixed(0)}/s · ${Math.round(span)} s`, 2, ht - 2);
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
  renderForms(snap);
  const pools = poolsOf(snap).length;
  $('#summary').textContent = `${(snap.nodes || []).length} node(s), ${pools} pool(s)`;
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
