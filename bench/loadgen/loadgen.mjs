#!/usr/bin/env node
// Load generator for OpenAI-compatible completion servers (sparrowd, llama.cpp's llama-server).
// N concurrent clients each send R streaming POST /v1/completions requests back to back and
// time every streamed chunk. Prints aggregate generated tokens/s, time to first token (TTFT)
// and time between tokens (TBT), p50 and p99, as a table, or as one JSON line with --json.
//
//   node bench/loadgen/loadgen.mjs --url http://127.0.0.1:8080 --clients 8 --requests 4 \
//        --prompt-words 200 --max-tokens 64 [--shared-prefix 0.8] [--seed 1] [--warmup 1] \
//        [--model ID] [--api-key KEY] [--json] [--out summary.json]
//
// --shared-prefix F: the first F of each prompt's words are the same in every request (a long
// system prompt), the rest differ per request, so a prefix cache can skip that part.
// --warmup K: K untimed requests (one at a time, prompts from another seed) before the run, so
// page faults on the freshly mapped model are not charged to the first clients.
// Exit status: 0, or 1 when any request failed (the summary still prints), 2 on bad flags.
// Node 18+ only; no packages.
import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { makePromptSource } from './prompts.mjs';
import { streamCompletion } from './sse_request.mjs';
import { summarize } from './stats.mjs';

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const v = process.argv[i + 1];
  return v === undefined || v.startsWith('--') ? true : v;
}

function fail(msg) {
  console.error(`loadgen: ${msg}`);
  process.exit(2);
}

const opts = {
  url: String(arg('url', 'http://127.0.0.1:8080')),
  clients: Number(arg('clients', 4)),
  requests: Number(arg('requests', 4)),
  promptWords: Number(arg('prompt-words', 200)),
  maxTokens: Number(arg('max-tokens', 64)),
  sharedPrefix: Number(arg('shared-prefix', 0)),
  seed: Number(arg('seed', 1)),
  warmup: Number(arg('warmup', 1)),
  model: arg('model', ''),
  apiKey: arg('api-key', process.env.SPARROW_API_KEY ?? ''),
  json: arg('json', false) === true,
  out: arg('out', ''),
};
for (const k of ['clients', 'requests', 'promptWords', 'maxTokens', 'seed']) {
  if (!Number.isInteger(opts[k]) || opts[k] < 1) fail(`--${k} must be a positive integer`);
}
if (!Number.isInteger(opts.warmup) || opts.warmup < 0) fail('--warmup must be 0 or more');
if (!(opts.sharedPrefix >= 0 && opts.sharedPrefix <= 1)) {
  fail(`--shared-prefix must be between 0 and 1, got '${arg('shared-prefix')}'`);
}
try {
  new URL(opts.url);
} catch {
  fail(`--url '${opts.url}' is not a URL`);
}

function requestBody(prompt) {
  const body = {
    prompt,
    max_tokens: opts.maxTokens,
    temperature: 0,
    stream: true,
    stream_options: { include_usage: true },
    // llama-server: generate max_tokens even past an end-of-text token, and keep its prompt
    // cache on (sparrowd's prefix cache is always on). sparrowd ignores unknown fields.
    ignore_eos: true,
    cache_prompt: true,
  };
  if (opts.model) body.model = opts.model;
  return body;
}
const send = (prompt) => streamCompletion(opts.url, requestBody(prompt), { apiKey: opts.apiKey });

const warmPrompts = makePromptSource({
  seed: opts.seed + 7919,
  promptWords: opts.promptWords,
  sharedFraction: 0,
});
for (let i = 0; i < opts.warmup; i++) {
  const r = await send(warmPrompts());
  if (!r.ok) {
    console.error(`loadgen: warm-up request to ${opts.url} failed: ${r.error}`);
    process.exit(1);
  }
}

// One prompt source shared by all clients: the set of prompts is fixed by the seed, whichever
// client happens to take each one.
const nextPrompt = makePromptSource({
  seed: opts.seed,
  promptWords: opts.promptWords,
  sharedFraction: opts.sharedPrefix,
});
async function client() {
  const out = [];
  for (let r = 0; r < opts.requests; r++) out.push(await send(nextPrompt()));
  return out;
}

const t0 = performance.now();
const results = (await Promise.all(Array.from({ length: opts.clients }, client))).flat();
const wall = (performance.now() - t0) / 1000;
const summary = {
  url: opts.url,
  clients: opts.clients,
  requests_per_client: opts.requests,
  prompt_words: opts.promptWords,
  shared_prefix: opts.sharedPrefix,
  max_tokens: opts.maxTokens,
  ...summarize(results, wall),
};

if (opts.out) writeFileSync(opts.out, JSON.stringify(summary, null, 2) + '\n');
if (opts.json) {
  console.log(JSON.stringify(summary));
} else {
  const f = (x) => (Number.isFinite(x) ? x.toFixed(1) : '-');
  const s = summary;
  console.log(
    `${s.clients} clients x ${s.requests_per_client} requests against ${s.url}: ` +
      `${s.prompt_words} prompt words (${Math.round(s.shared_prefix * 100)}% shared), ` +
      `${s.max_tokens} tokens each`,
  );
  console.log('| metric | value |\n| --- | ---: |');
  console.log(`| aggregate generated tok/s | ${f(s.tokens_per_s)} |`);
  console.log(`| generated tokens / wall s | ${s.generated_tokens} / ${f(s.wall_s)} |`);
  console.log(`| prompt tokens (cached) | ${s.prompt_tokens} (${s.cached_prompt_tokens}) |`);
  console.log(`| TTFT p50 / p99 / max ms | ${f(s.ttft_ms_p50)} / ${f(s.ttft_ms_p99)} / ${f(s.ttft_ms_max)} |`);
  console.log(`| TBT p50 / p99 / max ms | ${f(s.tbt_ms_p50)} / ${f(s.tbt_ms_p99)} / ${f(s.tbt_ms_max)} |`);
  console.log(`| failed requests | ${s.errors} of ${s.requests} |`);
  for (const e of s.first_errors) console.log(`error: ${e}`);
}
process.exit(summary.errors > 0 ? 1 : 0);
