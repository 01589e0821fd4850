// The web dashboard in a real headless Chromium (Debian's, driven by playwright-core) against a
// real sparrowd generating text: it logs in with the admin key, shows the live status, cancels a
// request from its table, drains and resumes; a screenshot is saved.
// Usage: node dashboard_test.mjs --sparrowd <path> --model <gguf> [--chromium /usr/bin/chromium]
//                                [--screenshot out.png]
// Exit code 0: all passed; 1: a check failed; 77: skipped (no playwright-core or no Chromium).
import { existsSync } from 'node:fs';
import assert from 'node:assert/strict';
import { arg, runChecks, startServer } from './harness.mjs';

let chromium;
try {
  ({ chromium } = await import('playwright-core'));
} catch {
  console.log('SKIP: playwright-core is not installed (run "npm ci" in tests/clients)');
  process.exit(77);
}
const executablePath = arg('chromium', '/usr/bin/chromium');
if (!existsSync(executablePath)) {
  console.log(`SKIP: no Chromium at ${executablePath} (Debian package chromium)`);
  process.exit(77);
}

const ADMIN_KEY = 'dashboard-test-admin-key-0123456789';
const sparrowd = arg('sparrowd', process.env.SPARROWD);
const model = arg('model', '../shared/models/stories260K.gguf');
const screenshot = arg('screenshot', 'dashboard.png');
assert.ok(sparrowd, 'pass --sparrowd <path of the sparrowd binary>');

// One request at a time, so that the later ones wait in the queue where the table shows them.
const server = await startServer(sparrowd, model,
                                 { args: ['--admin-key', ADMIN_KEY, '--max-running', '1'] });
const base = `http://127.0.0.1:${server.port}`;
const browser = await chromium.launch({
  executablePath, headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
const consoleErrors = [];
page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
page.on('pageerror', (e) => consoleErrors.push(String(e)));

// Starts a streamed completion; resolves with its request id (from the response head, sent
// before the first token) and a promise of the whole body.
async function startStream(maxTokens) {
  const res = await fetch(`${base}/v1/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ prompt: 'Once upon a time', max_tokens: maxTokens, stream: true }),
  });
  assert.equal(res.status, 200);
  return { id: res.headers.get('x-request-id'), body: res.text() };
}

const tests = [];
const test = (name, fn) => tests.push({ name, fn });

test('the page is served with a strict content security policy', async () => {
  const res = await fetch(`${base}/dashboard/`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-security-policy'), /default-src 'self'/);
  assert.equal((await fetch(`${base}/dashboard/nothing.js`)).status, 404);
  const redirect = await fetch(`${base}/dashboard`, { redirect: 'manual' });
  assert.equal(redirect.status, 301);
});

test('a wrong key is refused and the login stays', async () => {
  await page.goto(`${base}/dashboard/`);
  await page.fill('#key', 'not-the-admin-key-at-all');
  await page.click('#connect');
  await page.waitForFunction(() => document.querySelector('#login-error').textContent !== '');
  assert.match(await page.textContent('#login-error'), /Refused/);
  assert.equal(await page.isVisible('#main'), false);
});

test('the admin key logs in and the live status shows the model', async () => {
  await page.fill('#key', ADMIN_KEY);
  await page.click('#connect');
  await page.waitForSelector('#main', { state: 'visible' });
  await page.waitForFunction(() => document.querySelector('#link').textContent === 'live');
  assert.match(await page.textContent('#model-id'), /stories260K/);
  assert.equal(await page.textContent('#state'), 'serving');
  // Where the layers are: all on this device (a coordinator lists its workers' links too).
  await page.waitForFunction(() => /one device computes every layer/.test(
    document.querySelector('#shards-note').textContent));
  assert.match(await page.textContent('#shards tbody'), /this device/);
  assert.match(await page.textContent('#shards tbody'), /0\.\.4 \(5\)/);
  // Kept in this tab's session storage only.
  assert.equal(await page.evaluate(() => sessionStorage.getItem('sparrow-admin-key')), ADMIN_KEY);
  assert.equal(await page.evaluate(() => localStorage.length), 0);
});

test('requests appear in the table and one is cancelled from it', async () => {
  const streams = [];
  for (let i = 0; i < 5; i++) streams.push(await startStream(1900));
  const target = streams[streams.length - 1];  // last in the queue: still there to cancel
  const row = `#requests tr[data-id="${target.id}"]`;
  await page.waitForSelector(row, { timeout: 20000 });
  await page.click(`${row} button.cancel`);
  const body = await target.body;
  assert.match(body, /"finish_reason":"cancelled"/);
  await page.waitForFunction(() => document.querySelector('#action-log').textContent.includes('cancel'));
  assert.match(await page.textContent('#control-msg'), /cancel req-\d+: done/);
  // The live numbers moved while the others generated.
  await page.waitForFunction(() => Number(document.querySelector('#tokens-per-s').textContent) > 0,
                             null, { timeout: 20000 });
  await page.screenshot({ path: screenshot, fullPage: true });
  for (const s of streams) await s.body;
});

test('drain and resume from the buttons', async () => {
  await page.click('#drain');
  await page.waitForFunction(() => /drain/.test(document.querySelector('#state').textContent));
  const refused = await fetch(`${base}/v1/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ prompt: 'Once', max_tokens: 2 }),
  });
  assert.equal(refused.status, 503);
  await page.click('#resume');
  await page.waitForFunction(() => document.querySelector('#state').textContent === 'serving');
});

test('no script errors or CSP violations in the browser console', async () => {
  // The refused key (401) and the model list without --model-dir (403) are answers, not errors.
  const unexpected = consoleErrors.filter((e) => !/^Failed to load resource: .* (401|403)/.test(e));
  assert.deepEqual(unexpected, []);
});

// Last, so that runChecks (which exits the process) finds no browser left running.
test('the browser closes', async () => { await browser.close(); });

await runChecks(tests, [], server);
