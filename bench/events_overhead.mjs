// What watching the server costs its throughput: tokens/s of a steady streaming load with
// nobody watching, against the same load with W event-stream watchers (/admin/v1/events, what
// the dashboard and `sparrowctl watch` read) and, with --chromium, a real dashboard in headless
// Chromium. Phases alternate (off, on, off, on, ...) so that machine noise hits both alike;
// prints each phase, the medians and their ratio.
// Usage: node bench/events_overhead.mjs --sparrowd build/bin/sparrowd --model M.gguf
//          [--clients 4] [--watchers 4] [--seconds 10] [--rounds 3] [--threads 2]
//          [--max-tokens 256] [--chromium /usr/bin/chromium]
// Run from the repository root (playwright-core is taken from tests/clients/node_modules).
import { spawn } from 'node:child_process';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
};
const KEY = 'events-overhead-bench-admin-key';
const sparrowd = arg('sparrowd', 'build/bin/sparrowd');
const model = arg('model', '../shared/models/stories260K.gguf');
const clients = Number(arg('clients', 4));
const watchers = Number(arg('watchers', 4));
const seconds = Number(arg('seconds', 10));
const rounds = Number(arg('rounds', 3));
const maxTokens = Number(arg('max-tokens', 256));
const chromiumPath = arg('chromium', '');

const server = spawn(sparrowd, ['--model', model, '--port', '0', '--grpc-port', '-1',
                                '--threads', arg('threads', '2'), '--admin-key', KEY,
                                '--max-running', String(clients)],
                     { stdio: ['ignore', 'pipe', 'inherit'] });
const port = await new Promise((resolve, reject) => {
  let out = '';
  server.stdout.on('data', (d) => {
    out += d;
    const m = out.match(/HTTP listening on http:\/\/[^:]+:(\d+)/);
    if (m) resolve(Number(m[1]));
  });
  server.on('exit', (c) => reject(new Error(`sparrowd exited with ${c}`)));
});
const base = `http://127.0.0.1:${port}`;
const auth = { Authorization: `Bearer ${KEY}` };

let running = true;
async function client() {
  while (running) {
    const res = await fetch(`${base}/v1/completions`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ prompt: 'Once upon a time', max_tokens: maxTokens, stream: true,
                             temperature: 0.8 }),
    });
    const text = await res.text();
    if (!res.ok) {
      console.error(`a load request failed: ${res.status} ${text}`);
      process.exit(1);
    }
  }
}

async function generated() {
  const s = await (await fetch(`${base}/admin/v1/status`, { headers: auth })).json();
  return s.throughput.generated_tokens;
}

// W readers of the event stream, consuming everything, until aborted.
function attachWatchers(n) {
  const ctl = new AbortController();
  for (let i = 0; i < n; i++) {
    fetch(`${base}/admin/v1/events`, { headers: auth, signal: ctl.signal })
      .then(async (res) => { for await (const _ of res.body) { /* read and drop */ } })
      .catch(() => {});
  }
  return ctl;
}

let browser = null, page = null;
if (chromiumPath) {
  const { chromium } = await import('../tests/clients/node_modules/playwright-core/index.mjs');
  browser = await chromium.launch({ executablePath: chromiumPath, headless: true,
                                    args: ['--no-sandbox', '--disable-gpu',
                                           '--disable-background-networking'] });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const load = Array.from({ length: clients }, client);
await sleep(3000);  // warm up
const results = { off: [], on: [] };
for (let r = 0; r < rounds; r++) {
  for (const phase of ['off', 'on']) {
    let ctl = null;
    if (phase === 'on') {
      ctl = attachWatchers(watchers);
      if (browser) {
        page = await browser.newPage();
        await page.goto(`${base}/dashboard/`);
        await page.fill('#key', KEY);
        await page.click('#connect');
        await page.waitForSelector('#main', { state: 'visible' });
      }
      await sleep(1000);
    }
    const t0 = performance.now(), g0 = await generated();
    await sleep(seconds * 1000);
    const g1 = await generated(), t1 = performance.now();
    const tps = (g1 - g0) / ((t1 - t0) / 1000);
    results[phase].push(tps);
    console.log(`round ${r + 1} ${phase.padEnd(3)} ${tps.toFixed(1)} tokens/s`);
    if (ctl) ctl.abort();
    if (page) { await page.close(); page = null; }
    await sleep(500);
  }
}
running = false;
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
const off = median(results.off), on = median(results.on);
console.log(`median without watchers: ${off.toFixed(1)} tokens/s`);
console.log(`median with ${watchers} event streams${browser ? ' and a dashboard' : ''}: ` +
            `${on.toFixed(1)} tokens/s`);
console.log(`ratio (with / without): ${(on / off).toFixed(3)}`);
if (browser) await browser.close();
server.kill('SIGTERM');
await Promise.race([Promise.all(load), sleep(3000)]);
process.exit(0);
