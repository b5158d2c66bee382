// The dashboard in Debian's headless Chromium, driven by playwright-core, against a real local
// cluster started by dashboard_browsertest (which passes its addresses in the environment):
// the page lists the node and the test's pool, the pool's rate rises while a producer runs, the
// deploy form deploys a pool that appears, a bad form shows the API's own error, and shutdown
// removes the pool. Saves a screenshot to $DDE_SCREENSHOT.
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

  // The consumer's rate rises while the producer runs, and the chart has data.
  const started = Date.now();
  let rate = 0;
  while ((rate = await outRate()) < 50 && Date.now() - started < timeout) await page.waitForTimeout(250);
  check(rate >= 50, `the consumer pool's out rate rose to ${rate}/s while the producer runs`);
  await page.waitForTimeout(6000);  // a few more points on the chart for the screenshot
  await page.screenshot({ path: env.DDE_SCREENSHOT, fullPage: true });
  check(true, 'screenshot saved to ' + env.DDE_SCREENSHOT);

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
  check(problems.length === 0, 'no page errors: ' + problems.join('; '));
  await browser.close();
} catch (e) {
  console.error('FAILED:', e.message);
  if (problems.length) console.error(problems.join('\n'));
  if (page) await page.screenshot({ path: env.DDE_SCREENSHOT.replace(/\.png$/, '-failure.png'), fullPage: true }).catch(() => {});
  await browser.close();
  process.exit(1);
}
