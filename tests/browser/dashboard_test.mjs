// The dashboard in Debian's headless Chromium, driven by playwright-core, against a real local
// cluster started by dashboard_browsertest (which passes its addresses in the environment):
// the page lists the node and the test's pool, the pool's rate rises while a producer runs and the
// producer's sends show, the deploy form deploys a pool that appears, a stopped pool and a pool
// without its MQS turn their system and node red, dead letters are counted per pool, a pool's
// details open on a click, the page fits 1024 px, a bad form shows the API's own error, and
// shutdown removes a pool. Saves screenshots to $DDE_SCREENSHOT (1600 px) and its -1024.png twin.
import { chromium } from 'playwright-core';

const env = process.env;
const registry = env.DDE_REGISTRY_URL;
const system = env.DDE_SYSTEM;
const nodeName = env.DDE_NODE_NAME;
const timeout = 30000;

function check(condition, what) {
  if (!condition) throw new Error('check failed: ' + what);
  console.log('ok -', what);
}

const browser = await chromium.launch({
  executablePath: env.DDE_CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync'],
});
const problems = [];
let page;
try {
  page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  // Script errors count; the browser's own line for an HTTP error status does not (the bad form gets a 400).
  page.on('console', (m) => {
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) problems.push('console error: ' + m.text());
  });
  page.on('dialog', (d) => d.accept());  // the shutdown confirmation
  // The snapshots the page received, to compare what it shows with what the registry sent.
  let lastFrame = null;
  page.on('websocket', (ws) => ws.on('framereceived', (f) => {
    try { lastFrame = JSON.parse(f.payload); } catch (_) { /* not a snapshot */ }
  }));
  await page.goto(registry + '/');

  // The node and the pool the driver deployed.
  const node = page.locator(`.node[data-name="${nodeName}"]`);
  await node.waitFor({ timeout });
  check(await node.locator('.badge').first().textContent() === 'healthy', `node ${nodeName} is listed as healthy`);
  const nodeId = await node.getAttribute('data-id');
  check(/^[0-9]+$/.test(nodeId), `node ${nodeName} shows its bootstrapperId ${nodeId}`);
  check((await node.textContent()).includes(system), `node ${nodeName} lists isolate system ${system}`);
  const consumer = page.locator(`#pools tr[data-pool="${system}/consumer"]`);
  await consumer.waitFor({ timeout });
  check((await consumer.locator('.c-router').textContent()) === 'roundRobin', 'the pool shows its router type');
  check((await consumer.locator('.c-workers').textContent()).startsWith('2'), 'the pool shows its 2 workers');
  check((await consumer.locator('.c-delivery').textContent()) === 'at-least-once', 'the pool shows its delivery mode');
  check(/^[0-9a-f]{8}$/.test(await consumer.locator('.c-plugin code').textContent()), 'the pool shows its plugin md5');
  const outRate = async () => parseFloat(await consumer.locator('.c-out').textContent()) || 0;
  check(await outRate() === 0, 'the consumer pool is idle before the producer runs');
  check(await node.getAttribute('data-severity') === 'ok', `node ${nodeName} is green while its pools run`);

  // Deploy a producer through the form.
  const form = page.locator('#deploy-form');
  await form.locator('[name=bootstrapperId]').selectOption(nodeId);
  await form.locator('[name=messageQueuingSystemServer]').fill(env.DDE_MQS_URL);
  await form.locator('[name=isolateSystemName]').fill(system);
  await form.locator('[name=isolateName]').fill('producer');
  await form.locator('[name=uri]').fill(env.DDE_PRODUCER_URI);
  await form.locator('[name=workersPaths]').fill('localhost');
  await form.locator('[name=args]').fill(JSON.stringify({ to: `${system}/consumer`, count: 1000000, rate: 400 }));
  await form.locator('button[type=submit]').click();
  const message = page.locator('#deploy-message');
  await page.waitForFunction(() => !document.querySelector('#deploy-message').textContent.startsWith('Deploying'),
    null, { timeout });
  check((await message.getAttribute('class')).includes('ok'), 'the deploy form reports success: ' + await message.textContent());
  const producer = page.locator(`#pools tr[data-pool="${system}/producer"]`);
  await producer.waitFor({ timeout });
  check(true, 'the deployed producer pool appears');

  // The consumer's rate rises while the producer runs, the producer's sends show, and the chart has data.
  const consumerRow = `#pools tr[data-pool="${system}/consumer"]`, producerRow = `#pools tr[data-pool="${system}/producer"]`;
  // Waits until the number shown at `sel` reaches `least` and gives the number that did (the page
  // redraws every snapshot: a second read could see the next round's), or the last one shown.
  const reaches = (sel, least) => page.waitForFunction(([s, n]) => {
    const v = parseFloat((document.querySelector(s)?.textContent || '').replace(/,/g, '')) || 0;
    return v >= n ? v : false;
  }, [sel, least], { timeout }).then((h) => h.jsonValue(),
    () => page.locator(sel).textContent().then((t) => parseFloat(t.replace(/,/g, '')) || 0, () => 0));
  const rate = await reaches(consumerRow + ' .c-out', 50);
  check(rate >= 50, `the consumer pool's out rate rose to ${rate}/s while the producer runs`);
  const sendRate = await reaches(producerRow + ' .c-sent .rate', 50);
  const sentTotal = await producer.locator('.c-sent .sub').textContent();
  check(sendRate >= 50 && /^[0-9.]+[KM]?$/.test(sentTotal),
    `the producer pool shows its send rate ${sendRate}/s and its ${sentTotal} messages sent`);

  // Two more isolate systems: one with a pool that stops at its first failure (supervision
  // maxRestarts 0) and a pool that dead-letters a message that failed twice (maxFailures 2); one
  // whose MQS goes away.
  const sysF = system + 'f', sysX = system + 'x';
  const deploy = async (sys, isolate, uri, args, extra = {}) => {
    const res = await fetch(registry + '/registry/deploy', { method: 'POST', body: JSON.stringify({
      bootstrapperId: nodeId, action: 'action.addIsolate', messageQueuingSystemServer: env.DDE_MQS_URL,
      isolateSystemName: sys, isolateName: isolate, uri, workersPaths: ['localhost'], routerType: 'roundRobin',
      hotDeployment: false, args, ...extra }) });
    if (res.status !== 200) throw new Error(`deploying ${sys}/${isolate} failed: ${res.status} ${await res.text()}`);
  };
  const throwOnAll = Array.from({ length: 20 }, (_, i) => i);
  await deploy(sysF, 'crashloop', env.DDE_FAULTY_URI, { throw_on: throwOnAll },
    { supervision: { strategy: 'restart', maxRestarts: 0 } });
  await deploy(sysF, 'poison', env.DDE_FAULTY_URI, { throw_on: [3] },
    { supervision: { strategy: 'resume', maxFailures: 2 } });
  await deploy(sysF, 'feedcrash', env.DDE_PRODUCER_URI, { to: `${sysF}/crashloop`, count: 20 });
  await deploy(sysF, 'feedpoison', env.DDE_PRODUCER_URI, { to: `${sysF}/poison`, count: 20 });
  await deploy(sysX, 'offline', env.DDE_CONSUMER_URI, {}, { messageQueuingSystemServer: env.DDE_SPARE_MQS_URL });
  await page.locator(`#pools tr[data-pool="${sysX}/offline"]`).waitFor({ timeout });
  process.kill(Number(env.DDE_SPARE_MQS_PID), 'SIGTERM');
  const crashloop = page.locator(`#pools tr[data-pool="${sysF}/crashloop"]`);
  await page.waitForFunction((sel) => document.querySelector(sel)?.textContent.startsWith('stopped'),
    `#pools tr[data-pool="${sysF}/crashloop"] .c-state .badge`, { timeout });
  check(true, `the crash-looping pool shows "stopped": ${(await crashloop.locator('.c-state').innerText()).replace(/\n/g, ' / ')}`);
  await page.waitForFunction((sel) => document.querySelector(sel)?.textContent === 'not connected',
    `#pools tr[data-pool="${sysX}/offline"] .c-state .badge`, { timeout });
  check(true, 'the pool whose MQS went away shows "not connected"');
  // The node tree is drawn from its own poll, not the pools table's, and redrawn on each: a snapshot
  // taken while a system's describe timed out says "not answering" for a moment. So each check waits
  // until the element shows all it should in one frame (severity, border and badge read together)
  // and, failing that, prints what it showed last.
  const red = 'rgb(185, 28, 28)', green = 'rgb(21, 128, 61)';
  // One reader, defined in the page, for the wait and for the report.
  await page.evaluate(() => {
    window.ddeTestState = (e, badgeSel) => {
      const badge = e.querySelector(badgeSel);
      return { severity: e.getAttribute('data-severity'), border: getComputedStyle(e).borderLeftColor,
               badge: badge?.className ?? '', text: badge?.textContent ?? '' };
    };
  });
  // want: { severity, border, badgeSel, badge (regexp source on its class), text: [regexp sources] }.
  const shows = async (selector, want, what) => {
    const ok = await page.waitForFunction(([sel, w]) => {
      const e = document.querySelector(sel);
      if (!e) return false;
      const s = window.ddeTestState(e, w.badgeSel);
      return s.severity === w.severity && s.border === w.border && new RegExp(w.badge ?? '').test(s.badge) &&
        (w.text ?? []).every((re) => new RegExp(re).test(s.text));
    }, [selector, want], { timeout }).then(() => true, () => false);
    const last = await page.locator(selector).evaluate((e, b) => window.ddeTestState(e, b), want.badgeSel)
      .catch((e) => 'unreadable: ' + e.message);
    check(ok, `${what}: ${JSON.stringify(last)}`);
  };
  const system_ = (name) => node.locator(`li[data-system="${name}"]`);
  const systemSel = (name) => `.node[data-name="${nodeName}"] li[data-system="${name}"]`;
  await shows(systemSel(sysF), { severity: 'bad', border: red, badgeSel: '.badge.problem', text: ['1 pool stopped'] },
    `isolate system ${sysF} is red and says "1 pool stopped"`);
  await shows(systemSel(sysX), { severity: 'bad', border: red, badgeSel: '.badge.problem', text: ['1 pool not connected'] },
    `isolate system ${sysX} is red and says "1 pool not connected"`);
  await shows(systemSel(system), { severity: 'ok', border: green, badgeSel: '.badge.problem' },
    `isolate system ${system}, whose pools run, stays green`);
  await shows(`.node[data-name="${nodeName}"]`, { severity: 'bad', border: red, badgeSel: '.badge.status', badge: 'bad',
    text: ['stopped', 'not connected'] },
    `node ${nodeName} turns red`);

  // Dead letters per pool, highlighted where there are some.
  const poison = `#pools tr[data-pool="${sysF}/poison"]`;
  await page.waitForFunction((sel) => document.querySelector(sel + ' .dead-count')?.textContent === '1' &&
    document.querySelector(sel + ' .dlq')?.textContent === 'DLQ 1', poison, { timeout });
  check(await page.locator(poison + ' .c-dead').evaluate((e) => e.classList.contains('hot') &&
    getComputedStyle(e).backgroundColor !== getComputedStyle(e.parentElement).backgroundColor),
    'the poison pool shows 1 dead-lettered and 1 in its DLQ, highlighted');
  check(!(await consumer.locator('.c-dead').getAttribute('class')).includes('hot') &&
    (await consumer.locator('.dead-count').textContent()) === '0',
    'the consumer pool shows 0 dead letters, not highlighted');

  // A pool's details: a click on its row.
  await consumer.locator('.c-pool').click();
  const detail = page.locator(`#pool-detail[data-pool="${system}/consumer"]`);
  await detail.waitFor({ timeout });
  const figureText = (name) => detail.locator(`[data-figure="${name}"] .value`).textContent();
  for (const name of ['in', 'out', 'sent', 'acked', 'redelivered', 'deadLettered', 'failed', 'inFlight', 'queueDepth',
                      'deadLetterDepth']) {
    const text = await figureText(name);
    check(/^[0-9][0-9,.]*(\/s)?$/.test(text), `the consumer's details show ${name}: ${text}`);
  }
  await page.waitForFunction((sel) => (parseFloat(document.querySelector(sel)?.textContent.replace(/,/g, '')) || 0) > 0,
    `#pool-detail [data-figure="acked"] .value`, { timeout });
  // The out rate of a round in which the pool (still fed by the producer) finished something: a
  // loaded machine can leave a round without one, so wait for it rather than read the next one.
  const detailOut = '#pool-detail [data-figure="out"] .value';
  const shownOut = await page.waitForFunction((sel) => {
    const t = document.querySelector(sel)?.textContent || '';
    return /\/s$/.test(t) && parseFloat(t.replace(/,/g, '')) > 0 ? t : false;
  }, detailOut, { timeout }).then((h) => h.jsonValue(), () => page.locator(detailOut).textContent().catch(() => ''));
  check(/\/s$/.test(shownOut) && parseFloat(shownOut.replace(/,/g, '')) > 0, `the details show the out rate: ${shownOut}`);
  const workerStates = await detail.locator('table.workers tbody tr td:nth-child(3)').allTextContents();
  check(workerStates.length === 2 && workerStates.every((s) => s === 'running'),
    `the details list the 2 workers with their state: ${workerStates.join(', ')}`);
  const framePool = (lastFrame?.nodes || []).flatMap((n) => n.systems).flatMap((s) => s.pools)
    .find((p) => p.id === `${system}/consumer`);
  for (const [row, key] of [['handling', 'handlingMs'], ['queue', 'queueMs']]) {
    const cells = await detail.locator(`tr[data-latency="${row}"] td`).allTextContents();
    const given = framePool?.latency?.[key];
    check(cells.length === 4 && (given ? cells.slice(0, 3).every((c) => /^[0-9.]+$/.test(c)) : cells.every((c) => c === '-')),
      `the details show ${row} latency ${given ? 'percentiles' : '"-" (the pool gives none)'}: ${cells.join(' ')}`);
  }

  // Wait for a few points on the chart, then the screenshots: 1600 px, then 1024 px without
  // horizontal scrolling and without text running out of its box.
  await page.waitForFunction((sel) => Number(document.querySelector(sel)?.dataset.points) >= 8,
    consumerRow + ' canvas', { timeout });
  await page.screenshot({ path: env.DDE_SCREENSHOT, fullPage: true });
  check(true, 'screenshot saved to ' + env.DDE_SCREENSHOT);
  await page.setViewportSize({ width: 1024, height: 768 });
  await page.waitForFunction(() => document.documentElement.clientWidth === 1024, null, { timeout });
  const scrollWidth = await page.evaluate(() => document.documentElement.scrollWidth);
  check(scrollWidth <= 1024, `at 1024 px the page needs no horizontal scrolling (scrollWidth ${scrollWidth})`);
  const overflowing = await page.evaluate(() => [...document.querySelectorAll(
    '#pools th, #pools td, .node, .node li, .figure, #pool-detail td, .facts dd, form label')]
    .filter((e) => e.offsetParent && e.scrollWidth > e.clientWidth + 1)
    .map((e) => `${e.tagName}.${e.className}: ${e.textContent.slice(0, 40)}`));
  check(overflowing.length === 0, 'at 1024 px no text runs out of its cell or box: ' + overflowing.join('; '));
  const narrow = env.DDE_SCREENSHOT.replace(/\.png$/, '-1024.png');
  await page.screenshot({ path: narrow, fullPage: true });
  check(true, 'screenshot saved to ' + narrow);
  await page.setViewportSize({ width: 1600, height: 1000 });

  // Change the consumer's rate, then migrate it to one worker, from the "Manage a pool" form.
  const poolOf = async (isolate) => ((await (await fetch(`${registry}/registry/system/${nodeId}`)).json())[system] || [])
    .find((p) => p.id === `${system}/${isolate}`);
  const manage = page.locator('#manage-form');
  const manageMessage = page.locator('#manage-message');
  await manage.locator('[name=pool]').selectOption(`${nodeId}/${system}/consumer`);
  await manage.locator('[name=messages]').fill('200');
  await manage.locator('[name=perMs]').fill('1000');
  await manage.locator('#rate-button').click();
  await page.waitForFunction(() => document.querySelector('#manage-message').className.includes('ok'), null, { timeout });
  const rated = await poolOf('consumer');
  check(rated.rate && rated.rate.messages === 200 && rated.rate.perMs === 1000,
    `the rate form set the consumer's rate: ${JSON.stringify(rated.rate)}`);
  await manage.locator('[name=migrateWorkers]').fill('localhost');
  await manage.locator('#migrate-button').click();
  await page.waitForFunction(() => /Migrated/.test(document.querySelector('#manage-message').textContent), null, { timeout });
  // The row is drawn again as the pool moves: it may be missing for a moment.
  await page.waitForFunction((sel) => document.querySelector(sel + ' .c-workers')?.textContent.startsWith('1'),
    `#pools tr[data-pool="${system}/consumer"]`, { timeout });
  check((await poolOf('consumer')).workersCount === 1, 'the migrate form moved the consumer to one worker: ' + await manageMessage.textContent());

  // A bad form shows the API's own error, word for word.
  await form.locator('[name=isolateName]').fill('bad name!');
  await form.locator('button[type=submit]').click();
  await page.waitForFunction(() => document.querySelector('#deploy-message').className.includes('bad'), null, { timeout });
  const shown = await message.textContent();
  const body = {
    bootstrapperId: nodeId, action: 'action.addIsolate', messageQueuingSystemServer: env.DDE_MQS_URL,
    isolateSystemName: system, isolateName: 'bad name!', uri: env.DDE_PRODUCER_URI, workersPaths: ['localhost'],
    routerType: 'roundRobin', hotDeployment: true, deliveryMode: 'at-least-once',
    args: { to: `${system}/consumer`, count: 1000000, rate: 400 },
  };
  const api = await fetch(registry + '/registry/deploy', { method: 'POST', body: JSON.stringify(body) });
  const apiError = (await api.json()).error;
  check(api.status === 400 && shown === apiError, `a bad form shows the API's error: "${shown}"`);

  // Shutting the producer down from its row removes it.
  await producer.locator('button.shutdown-pool').click();
  await producer.waitFor({ state: 'detached', timeout });
  check(true, 'shutdown removed the producer pool from the page');
  const show = await (await fetch(`${registry}/registry/system/${nodeId}`)).json();
  check(!(show[system] || []).some((p) => p.id === `${system}/producer`), 'the registry no longer lists the producer pool');

  // Shutting down the failing isolate systems from the node card turns the node green again.
  for (const name of [sysF, sysX]) {
    await system_(name).locator('button.shutdown-system').click();
    await system_(name).waitFor({ state: 'detached', timeout });
  }
  await page.waitForFunction((sel) => document.querySelector(sel)?.dataset.severity === 'ok', `.node[data-name="${nodeName}"]`,
    { timeout });
  const healthy = await node.evaluate((e) => e.querySelector('.badge.status')?.textContent);
  check(healthy === 'healthy', `with ${sysF} and ${sysX} shut down, node ${nodeName} is healthy again: "${healthy}"`);

  // Latency as the isolate systems give it (one key may be missing): the last snapshot again, with
  // the consumer's latency set, on a page whose live feed is that snapshot.
  const fixture = structuredClone(lastFrame);
  const fixturePool = fixture.nodes.flatMap((n) => n.systems).flatMap((s) => s.pools).find((p) => p.id === `${system}/consumer`);
  fixturePool.latency = { handlingMs: { p50: 1.2, p90: 3.4, p99: 42.5, count: 1234 } };
  const still = await browser.newPage({ viewport: { width: 1024, height: 768 } });
  still.on('pageerror', (e) => problems.push('page error: ' + e.message));
  await still.routeWebSocket(/\/dashboard\/live/, (ws) => ws.send(JSON.stringify(fixture)));
  await still.goto(registry + '/');
  await still.locator(`#pools tr[data-pool="${system}/consumer"] .c-pool`).click();
  const handling = await still.locator('#pool-detail tr[data-latency="handling"] td').allTextContents();
  const queue = await still.locator('#pool-detail tr[data-latency="queue"] td').allTextContents();
  check(handling.join(' ') === '1.20 3.40 42.5 1,234' && queue.join(' ') === '- - - -',
    `latency percentiles show in ms, and "-" where a key is missing: ${handling.join(' ')} / ${queue.join(' ')}`);
  await still.close();
  check(problems.length === 0, 'no page errors: ' + problems.join('; '));
  await browser.close();
} catch (e) {
  console.error('FAILED:', e.message);
  if (problems.length) console.error(problems.join('\n'));
  if (page) await page.screenshot({ path: env.DDE_SCREENSHOT.replace(/\.png$/, '-failure.png'), fullPage: true }).catch(() => {});
  await browser.close();
  process.exit(1);
}
