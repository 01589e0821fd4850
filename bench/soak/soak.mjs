#!/usr/bin/env node
// Soak client for sparrowd: C concurrent workers for D seconds, each looping over a mix of
// request kinds sent over raw sockets (node:net), so it can misbehave as real clients do:
//   stream     streaming completion read to [DONE]
//   full       non-streaming completion
//   cancel     streaming completion abandoned after its first event
//   slow       large streaming completion read 1 KiB at a time with pauses (a slow reader:
//              the server may finish it or drop it at its write timeout / buffer cap)
//   malformed  bad JSON, 1e400, wrong types, huge or broken headers, unknown routes, HTTP/1.0
// Every outcome is classified as expected (including the 4xx a malformed request must get, and
// the server dropping a slow reader) or unexpected (no status line, a 5xx, a stream without
// [DONE], a connection reset before any answer). Every 10 s it prints one line: elapsed time,
// requests by kind, unexpected errors, p99 latency of completed streams and full requests, and
// the server's RSS (from /proc/PID/status). At the end: a JSON summary with the RSS series,
// and exit status 1 if anything unexpected happened or RSS grew after the first minute.
//
//   node bench/soak/soak.mjs --port 8080 --pid 1234 [--clients 64] [--seconds 600]
//        [--out summary.json]
// Node 18+ only; no packages.
import net from 'node:net';
import { readFileSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 || process.argv[i + 1] === undefined ? fallback : process.argv[i + 1];
}
const port = Number(arg('port', 8080));
const pid = Number(arg('pid', 0));
const clients = Number(arg('clients', 64));
const seconds = Number(arg('seconds', 600));
const out = arg('out', '');
if (!(port > 0) || !(clients > 0) || !(seconds > 0)) {
  console.error('soak: --port, --clients and --seconds must be positive');
  process.exit(2);
}

const WORDS = 'once upon a time there was a little girl named lily who loved to play in the park'
  .split(' ');
function prompt(rand) {
  const n = 8 + Math.floor(rand() * 24);
  const w = [];
  for (let i = 0; i < n; i++) w.push(WORDS[Math.floor(rand() * WORDS.length)]);
  return w.join(' ');
}
function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 4294967296;
  };
}

function post(path, body, { http10 = false, extra = '' } = {}) {
  const b = typeof body === 'string' ? body : JSON.stringify(body);
  return `POST ${path} HTTP/${http10 ? '1.0' : '1.1'}\r\nHost: x\r\nConnection: close\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(b)}\r\n${extra}\r\n${b}`;
}

// The malformed requests and the statuses each may get.
const MALFORMED = [
  ['bad json', () => post('/v1/completions', '{"prompt": "x",'), [400]],
  ['1e400', () => post('/v1/completions', '{"prompt": "x", "temperature": 1e400}'), [400]],
  ['part type', () => post('/v1/chat/completions',
    { messages: [{ role: 'user', content: [{ type: 5 }] }] }), [400]],
  ['wrong type', () => post('/v1/completions', { prompt: 'x', max_tokens: 'many' }), [400]],
  ['huge header', () => `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(100000)}\r\n\r\n`,
    [431]],
  ['negative length', () => 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n',
    [400]],
  ['garbage', () => 'HELLO\r\n\r\n', [400]],
  ['unknown route', () => 'GET /v2/nothing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', [404]],
  ['too long', () => post('/v1/completions', { prompt: 'x', max_tokens: 1 << 22 }), [400]],
  ['http/1.0 stream', () => post('/v1/completions', { prompt: 'once', max_tokens: 8, stream: true },
    { http10: true }), [200]],
];

// One exchange over a fresh connection. `onData(buf, socket)` may close the socket early.
function exchange(request, { onData, timeoutMs = 120000, rcvbuf = 0 } = {}) {
  return new Promise((resolve) => {
    const start = performance.now();
    let raw = Buffer.alloc(0);
    let firstByte = 0;
    let done = false;
    const socket = net.connect({ port, host: '127.0.0.1' });
    const finish = (err) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ raw: raw.toString('latin1'), err, ms: performance.now() - start, firstByte });
    };
    const timer = setTimeout(() => finish('client timeout'), timeoutMs);
    socket.on('connect', () => {
      if (rcvbuf) socket.setRecvBufferSize?.(rcvbuf);
      socket.write(request);
    });
    socket.on('data', (d) => {
      if (!firstByte) firstByte = performance.now() - start;
      raw = Buffer.concat([raw, d]);
      if (onData && onData(raw, socket) === 'stop') finish('');
    });
    socket.on('error', (e) => finish(e.code || String(e)));
    socket.on('close', () => finish(''));
  });
}

function statusOf(raw) {
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(raw);
  return m ? Number(m[1]) : 0;
}

const stats = {
  started: performance.now(),
  byKind: {},
  unexpected: [],
  latency: { stream: [], full: [] },
  rss: [],
};
function record(kind, outcome, detail) {
  const k = (stats.byKind[kind] ??= { ok: 0, expected_error: 0, unexpected: 0 });
  k[outcome]++;
  if (outcome === 'unexpected') {
    stats.unexpected.push({ kind, detail, at_s: Math.round((performance.now() - stats.started) / 1000) });
  }
}

async function oneRequest(rand) {
  const r = rand();
  if (r < 0.55) {
    const res = await exchange(post('/v1/completions', { prompt: prompt(rand), max_tokens: 64, stream: true }));
    const s = statusOf(res.raw);
    if (s === 200 && res.raw.includes('data: [DONE]')) {
      record('stream', 'ok');
      stats.latency.stream.push(res.ms);
    } else if (s === 429) {
      record('stream', 'expected_error');
    } else {
      record('stream', 'unexpected', `status ${s} ${res.err} ${res.raw.slice(-120)}`);
    }
  } else if (r < 0.65) {
    const res = await exchange(post('/v1/chat/completions',
      { messages: [{ role: 'user', content: prompt(rand) }], max_tokens: 32 }));
    const s = statusOf(res.raw);
    if (s === 200 && res.raw.includes('"choices"')) {
      record('full', 'ok');
      stats.latency.full.push(res.ms);
    } else if (s === 429) {
      record('full', 'expected_error');
    } else {
      record('full', 'unexpected', `status ${s} ${res.err} ${res.raw.slice(0, 160)}`);
    }
  } else if (r < 0.75) {
    const res = await exchange(post('/v1/completions', { prompt: prompt(rand), max_tokens: 200, stream: true }),
      { onData: (raw) => (raw.includes('data: ') ? 'stop' : undefined) });
    const s = statusOf(res.raw);
    record('cancel', s === 200 || s === 429 ? 'ok' : 'unexpected', `status ${s} ${res.err}`);
  } else if (r < 0.85) {
    // Reads 1 KiB, then nothing for 600 ms, and so on.
    const res = await exchange(
      post('/v1/completions', { prompt: prompt(rand), max_tokens: 400, n: 4, logprobs: 5, stream: true }),
      {
        rcvbuf: 4096,
        onData: (_raw, socket) => {
          socket.pause();
          setTimeout(() => socket.resume(), 600);
        },
      });
    const s = statusOf(res.raw);
    // Finished, or dropped by the server (write timeout or buffer cap): both are the contract.
    if (s === 200 || s === 429) record('slow', 'ok');
    else record('slow', 'unexpected', `status ${s} ${res.err}`);
  } else {
    const [name, make, statuses] = MALFORMED[Math.floor(rand() * MALFORMED.length)];
    const res = await exchange(make());
    const s = statusOf(res.raw);
    if (statuses.includes(s)) record('malformed', 'expected_error');
    else record('malformed', 'unexpected', `${name}: status ${s} ${res.err} ${res.raw.slice(0, 120)}`);
  }
}

function p99(xs) {
  if (!xs.length) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(0.99 * s.length))];
}
function rssMb() {
  if (!pid) return 0;
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}
function line() {
  const t = (performance.now() - stats.started) / 1000;
  const rss = rssMb();
  stats.rss.push({ t: Math.round(t), mb: Number(rss.toFixed(1)) });
  const kinds = Object.entries(stats.byKind)
    .map(([k, v]) => `${k}=${v.ok + v.expected_error + v.unexpected}`).join(' ');
  console.log(`t=${t.toFixed(0)}s ${kinds} unexpected=${stats.unexpected.length} ` +
    `p99_stream=${p99(stats.latency.stream).toFixed(0)}ms p99_full=${p99(stats.latency.full).toFixed(0)}ms ` +
    `rss=${rss.toFixed(1)}MB`);
  // Latencies per window: p99 is of the last 10 s.
  stats.latency.stream = [];
  stats.latency.full = [];
}

const deadline = stats.started + seconds * 1000;
const timer = setInterval(line, 10000);
const workers = [];
for (let c = 0; c < clients; c++) {
  const rand = rng(c + 1);
  workers.push((async () => {
    while (performance.now() < deadline) await oneRequest(rand);
  })());
}
await Promise.all(workers);
clearInterval(timer);
line();

// RSS after the first minute must not trend upward: compare the first sample after 60 s with
// the largest of the last three.
const after = stats.rss.filter((s) => s.t >= 60);
let growth = 0;
if (after.length >= 4) {
  const base = after[0].mb;
  const tail = Math.max(...after.slice(-3).map((s) => s.mb));
  growth = (tail - base) / base;
}
const summary = {
  seconds, clients, by_kind: stats.byKind, unexpected: stats.unexpected.slice(0, 50),
  unexpected_total: stats.unexpected.length, rss: stats.rss,
  rss_growth_after_1min: Number(growth.toFixed(4)),
};
console.log(JSON.stringify(summary));
if (out) writeFileSync(out, JSON.stringify(summary, null, 2));
process.exit(stats.unexpected.length === 0 && growth <= 0.05 ? 0 : 1);
