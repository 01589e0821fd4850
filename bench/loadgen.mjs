#!/usr/bin/env node
// Load generator for OpenAI-compatible completion servers (sparrowd, llama.cpp's llama-server).
// N concurrent clients each send R streaming POST /v1/completions requests back to back and
// time every streamed chunk. Prints aggregate generated tokens/s, time to first token (TTFT)
// and time between tokens (TBT), p50 and p99, as a table or as JSON (--json).
//
//   node bench/loadgen.mjs --url http://127.0.0.1:8080 --clients 8 --requests 4 \
//        --prompt-words 200 --max-tokens 64 [--shared-prefix 0.8] [--seed 1] [--json]
//
// --shared-prefix F: the first F of each prompt's words are the same in every request (a long
// system prompt), the rest differ per request, so a prefix cache can skip that part.
// Node 18+ only (built-in fetch); no packages needed.
import { performance } from 'node:perf_hooks';

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const v = process.argv[i + 1];
  return v === undefined || v.startsWith('--') ? true : v;
}

const opts = {
  url: arg('url', 'http://127.0.0.1:8080'),
  clients: Number(arg('clients', 4)),
  requests: Number(arg('requests', 4)),
  promptWords: Number(arg('prompt-words', 200)),
  maxTokens: Number(arg('max-tokens', 64)),
  sharedPrefix: Number(arg('shared-prefix', 0)),
  seed: Number(arg('seed', 1)),
  model: arg('model', ''),
  json: arg('json', false) === true,
};
for (const k of ['clients', 'requests', 'promptWords', 'maxTokens']) {
  if (!Number.isInteger(opts[k]) || opts[k] < 1) {
    console.error(`loadgen: --${k} must be a positive integer, got '${opts[k]}'`);
    process.exit(2);
  }
}
if (!(opts.sharedPrefix >= 0 && opts.sharedPrefix <= 1)) {
  console.error(`loadgen: --shared-prefix must be between 0 and 1, got '${opts.sharedPrefix}'`);
  process.exit(2);
}

// A small deterministic generator, so both servers get the same prompts.
function rng(seed) {
  let s = (seed >>> 0) || 1;
  return () => {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    return s / 4294967296;
  };
}
const WORDS = ('the a little girl boy dog cat tree park ball red big small happy sad ran saw ' +
  'played jumped found went home day sun sky bird friend mom dad house garden flower water ' +
  'river hill toy box book cake apple blue green yellow fast slow kind brave funny quiet loud')
  .split(' ');
const random = rng(opts.seed);
const pick = () => WORDS[Math.floor(random() * WORDS.length)];
const sharedWords = Math.round(opts.promptWords * opts.sharedPrefix);
const prefix = Array.from({ length: sharedWords }, pick).join(' ');
function makePrompt() {
  const rest = Array.from({ length: opts.promptWords - sharedWords }, pick).join(' ');
  return [prefix, rest].filter((x) => x.length > 0).join(' ');
}

const percentile = (xs, p) => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

// One streamed completion: returns { ttft, gaps, tokens } in milliseconds and token counts.
async function oneRequest(prompt) {
  const body = { prompt, max_tokens: opts.maxTokens, temperature: 0, stream: true,
                 stream_options: { include_usage: true },
                 // llama-server: generate max_tokens even past an end-of-text token; also
                 // keeps its prompt cache on, as sparrowd's prefix cache is.
                 ignore_eos: true, cache_prompt: true };
  if (opts.model) body.model = opts.model;
  const start = performance.now();
  const res = await fetch(`${opts.url}/v1/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  const decoder = new TextDecoder();
  let buf = '';
  let first = 0;
  let last = 0;
  const gaps = [];
  let chunks = 0;
  let usageTokens = -1;
  for await (const part of res.body) {
    buf += decoder.decode(part, { stream: true });
    let nl;
    while ((nl = buf.indexOf('\n\n')) >= 0) {
      const event = buf.slice(0, nl);
      buf = buf.slice(nl + 2);
      const line = event.split('\n').find((l) => l.startsWith('data: '));
      if (!line || line === 'data: [DONE]') continue;
      const m = JSON.parse(line.slice(6));
      if (m.usage && m.usage.completion_tokens !== undefined) {
        usageTokens = m.usage.completion_tokens;
      }
      const text = m.choices?.[0]?.text ?? m.content ?? '';
      if (text.length === 0) continue;
      const now = performance.now();
      if (first === 0) first = now;
      else gaps.push(now - last);
      last = now;
      chunks++;
    }
  }
  const tokens = usageTokens >= 0 ? usageTokens : chunks;
  // When a server packs several tokens into one chunk, spread the gap over them.
  const perChunk = chunks > 0 ? tokens / chunks : 1;
  return { ttft: first - start, gaps: gaps.map((g) => g / perChunk), tokens };
}

async function client() {
  const out = [];
  for (let r = 0; r < opts.requests; r++) out.push(await oneRequest(makePrompt()));
  return out;
}

const t0 = performance.now();
const results = (await Promise.all(Array.from({ length: opts.clients }, client))).flat();
const wall = (performance.now() - t0) / 1000;
const tokens = results.reduce((a, r) => a + r.tokens, 0);
const ttft = results.map((r) => r.ttft);
const tbt = results.flatMap((r) => r.gaps);
const summary = {
  url: opts.url, clients: opts.clients, requests: results.length,
  prompt_words: opts.promptWords, shared_prefix: opts.sharedPrefix, max_tokens: opts.maxTokens,
  generated_tokens: tokens, wall_s: wall, tokens_per_s: tokens / wall,
  ttft_ms_p50: percentile(ttft, 50), ttft_ms_p99: percentile(ttft, 99),
  tbt_ms_p50: percentile(tbt, 50), tbt_ms_p99: percentile(tbt, 99),
};
if (opts.json) {
  console.log(JSON.stringify(summary));
} else {
  const f = (x) => x.toFixed(1);
  console.log(`${summary.clients} clients x ${opts.requests} requests, ${opts.promptWords} ` +
    `prompt words (${Math.round(opts.sharedPrefix * 100)}% shared), ${opts.maxTokens} tokens`);
  console.log(`aggregate ${f(summary.tokens_per_s)} tok/s (${tokens} tokens in ${f(wall)} s)`);
  console.log(`TTFT p50 ${f(summary.ttft_ms_p50)} ms, p99 ${f(summary.ttft_ms_p99)} ms; ` +
    `TBT p50 ${f(summary.tbt_ms_p50)} ms, p99 ${f(summary.tbt_ms_p99)} ms`);
}
