// The web dashboard in a real headless Chromium (Debian's, driven by playwright-core) against a
// real sparrowd generating text: it logs in with a whole line of an admin key file (name and
// key), shows the live status, cancels a request from its table, drains and resumes; a
// screenshot is saved. Against a second sparrowd
// serving a PowerInfer model on flash (converted with `sparrow convert`, --cache-mb 2) it shows
// the neuron cache and sets, refuses and clears the memory budget (its screenshot beside the
// first, -flash.png); against a third without memory control (memory_pressure 0) the budget
// control is disabled, saying why.
// Usage: node dashboard_test.mjs --sparrowd <path> --model <gguf> [--chromium /usr/bin/chromium]
//                                [--screenshot out.png] [--sparrow <path> --flash-model <pwri gguf>]
// Exit code 0: all passed; 1: a check failed; 77: skipped (no playwright-core or no Chromium).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import { arg, runChecks, startServer, stopServer } from './harness.mjs';

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
const sparrowCli = arg('sparrow', undefined);
const flashModel = arg('flash-model', undefined);
assert.ok(sparrowd, 'pass --sparrowd <path of the sparrowd binary>');
const MiB = 1 << 20;

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

test('a whole admin_key_file line logs in and the live status shows the model', async () => {
  // The login says what to paste; a line "name key" is taken for its key.
  assert.match(await page.textContent('#login-form'), /the key itself/);
  await page.fill('#key', `  laptop\t${ADMIN_KEY}  `);
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
  // The key alone, kept in this tab's session storage only.
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

test('a model in memory has no neuron cache row, and the budget control is on', async () => {
  await page.waitForFunction(() => document.querySelector('#budget-bounds').dataset.ceiling);
  assert.equal(await page.isVisible('#neuron-cache'), false);
  assert.equal(await page.isEnabled('#budget-set'), true);
  assert.match(await page.textContent('#budget-bounds'), /in force, the device's \(ceiling/);
});

// Another sparrowd on its own page (another origin: another port), logged in with the key.
async function dashboardOf(other) {
  const p = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  p.on('pageerror', (e) => consoleErrors.push(String(e)));
  await p.goto(`http://127.0.0.1:${other.port}/dashboard/`);
  await p.fill('#key', ADMIN_KEY);
  await p.click('#connect');
  await p.waitForSelector('#main', { state: 'visible' });
  return p;
}

const extraServers = new Set();  // stopped by their test, or killed when the process exits
process.on('exit', () => { for (const s of extraServers) s.child.kill('SIGKILL'); });
async function stop(other) {
  extraServers.delete(other);
  assert.equal(await stopServer(other), 0, other.stderr());
}

test('without memory control the budget control is disabled and says why', async () => {
  const off = await startServer(sparrowd, model,
                                { args: ['--admin-key', ADMIN_KEY], memoryPressure: 0 });
  extraServers.add(off);
  const p = await dashboardOf(off);
  await p.waitForFunction(() => /memory budget control is off \(memory_pressure 0\)/.test(
    document.querySelector('#budget-msg').textContent));
  assert.equal(await p.isDisabled('#budget-set'), true);
  assert.equal(await p.isDisabled('#budget-clear'), true);
  assert.equal(await p.isDisabled('#budget-size'), true);
  assert.equal(await p.textContent('#budget'), 'no budget set');
  await p.close();
  await stop(off);
});

if (sparrowCli && flashModel && existsSync(flashModel)) {
  test('a model on flash shows its neuron cache; the budget is set, refused and cleared', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'sparrow-dashboard-'));
    const converted = path.join(dir, 'bundles.gguf');
    const conv = spawnSync(sparrowCli, ['convert', '-m', flashModel, '-o', converted],
                           { encoding: 'utf8' });
    assert.equal(conv.status, 0, conv.stderr);
    const flash = await startServer(sparrowd, converted,
                                    { args: ['--admin-key', ADMIN_KEY, '--cache-mb', '2'] });
    extraServers.add(flash);
    try {
      const fbase = `http://127.0.0.1:${flash.port}`;
      const admin = async (method, route) => (await fetch(`${fbase}${route}`, {
        method, headers: { Authorization: `Bearer ${ADMIN_KEY}` } })).json();
      const done = await fetch(`${fbase}/v1/completions`, {
        method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ prompt: 'Once upon a time', max_tokens: 16, temperature: 0 }),
      });
      assert.equal(done.status, 200);
      const p = await dashboardOf(flash);

      // The cache row: what it holds of its 2 MiB, and the hit rate over the bundles looked up,
      // the numbers of the status (nothing runs now, so they hold still).
      const cache = (await admin('GET', '/admin/v1/status')).sparse.neuron_cache;
      assert.ok(cache.lookups > 0 && cache.hits > 0, JSON.stringify(cache));
      await p.waitForFunction((n) => document.querySelector('#nc-lookups').textContent === n,
                              String(cache.lookups));
      assert.equal(await p.isVisible('#neuron-cache'), true);
      assert.match(await p.textContent('#nc-text'), / of 2\.0 MiB$/);
      assert.equal(await p.textContent('#nc-hit-rate'), `${(100 * cache.hit_rate).toFixed(1)}%`);
      const width = await p.evaluate(() => document.querySelector('#nc-used').style.width);
      assert.equal(width, `${Math.min(100, (100 * cache.resident_bytes) / cache.capacity_bytes)}%`);

      await p.screenshot({ path: screenshot.replace(/(\.png)?$/, '-flash.png'), fullPage: true });

      // A budget typed in MiB above the floor is set and shown.
      const memory = await admin('GET', '/admin/v1/memory');
      const floor = memory.floor_bytes;
      const mib = Math.ceil(floor / MiB) + 1;
      assert.ok(mib * MiB < memory.ceiling_bytes, JSON.stringify(memory));
      await p.fill('#budget-size', `${mib}M`);
      await p.click('#budget-set');
      await p.waitForFunction((n) => document.querySelector('#budget-bounds').dataset.operator === n,
                              String(mib * MiB));
      assert.match(await p.textContent('#budget-msg'), new RegExp(`budget ${mib}M: done`));
      assert.match(await p.textContent('#budget-bounds'), /in force, the operator's/);
      assert.equal((await admin('GET', '/admin/v1/memory')).operator_budget_bytes, mib * MiB);
      // The status tile follows with the next snapshot, beside what the consumers hold.
      await p.waitForFunction((n) => document.querySelector('#budget').textContent.endsWith(n),
                              `, budget ${(mib).toFixed(1)} MiB`);
      assert.match(await p.textContent('#budget'), /^held [0-9.]+ [KMG]?i?B, budget/);

      // A byte under the floor (plain bytes): the server's refusal, naming the floor, and the
      // budget stays.
      await p.fill('#budget-size', String(floor - 1));
      await p.click('#budget-set');
      await p.waitForFunction(() => document.querySelector('#budget-msg').className === 'error');
      assert.match(await p.textContent('#budget-msg'),
                   new RegExp(`budget ${floor - 1}: .*under this model's floor of ${floor} bytes`));
      assert.equal((await admin('GET', '/admin/v1/memory')).operator_budget_bytes, mib * MiB);
      // Text that is no size is refused in the page.
      await p.fill('#budget-size', 'lots');
      await p.click('#budget-set');
      await p.waitForFunction(() => /'lots' is not a size/.test(
        document.querySelector('#budget-msg').textContent));

      // Clear: back to the device's budget, the ceiling (nothing presses here).
      await p.click('#budget-clear');
      await p.waitForFunction(() => document.querySelector('#budget-bounds').dataset.operator === '');
      assert.match(await p.textContent('#budget-bounds'), /in force, the device's/);
      const bounds = await p.evaluate(() => ({ ...document.querySelector('#budget-bounds').dataset }));
      assert.equal(bounds.budget, bounds.ceiling);
      assert.equal(Number(bounds.ceiling), memory.ceiling_bytes);
      assert.equal((await admin('GET', '/admin/v1/memory')).operator_budget_bytes, null);
      await p.close();
    } finally {
      await stop(flash);
      rmSync(dir, { recursive: true, force: true });
    }
  });
} else {
  console.log('SKIP the neuron cache checks: pass --sparrow <path> --flash-model <pwri gguf>');
}

test('no script errors or CSP violations in the browser console', async () => {
  // The refused key (401) and the model list without --model-dir (403) are answers, not errors.
  const unexpected = consoleErrors.filter((e) => !/^Failed to load resource: .* (401|403)/.test(e));
  assert.deepEqual(unexpected, []);
});

// Last, so that runChecks (which exits the process) finds no browser left running.
test('the browser closes', async () => { await browser.close(); });

await runChecks(tests, [], server);
