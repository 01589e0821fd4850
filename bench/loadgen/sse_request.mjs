// One streamed OpenAI-style POST /v1/completions request, timed chunk by chunk. Never throws:
// a failure comes back as { ok: false, error } so one bad request does not end a run.
import http from 'node:http';
import https from 'node:https';
import { performance } from 'node:perf_hooks';

// The token counts a server reports in its final chunk. sparrowd (and OpenAI) give
// usage.prompt_tokens_details.cached_tokens; llama-server gives timings.prompt_n, the prompt
// tokens it actually computed, so the rest came from its cache.
function readUsage(m, acc) {
  const u = m.usage;
  if (u && typeof u.completion_tokens === 'number') acc.completion = u.completion_tokens;
  if (u && typeof u.prompt_tokens === 'number') acc.prompt = u.prompt_tokens;
  if (u?.prompt_tokens_details && typeof u.prompt_tokens_details.cached_tokens === 'number') {
    acc.cached = u.prompt_tokens_details.cached_tokens;
  }
  if (m.timings && typeof m.timings.prompt_n === 'number') acc.computed = m.timings.prompt_n;
}

// body: the JSON request body. idleTimeoutMs: longest silence on the socket before giving up.
export function streamCompletion(baseUrl, body, { apiKey = '', idleTimeoutMs = 300000 } = {}) {
  const url = new URL('/v1/completions', baseUrl);
  const lib = url.protocol === 'https:' ? https : http;
  const payload = JSON.stringify(body);
  const headers = {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(payload),
    Accept: 'text/event-stream',
    // A fresh connection per request: llama-server (cpp-httplib) closes kept-alive sockets
    // after a few requests, and a pooled client then fails with "other side closed" on reuse.
    Connection: 'close',
  };
  if (apiKey) headers.Authorization = `Bearer ${apiKey}`;

  return new Promise((resolve) => {
    const start = performance.now();
    let first = 0;
    let last = 0;
    let chunks = 0;
    let buf = '';
    let settled = false;
    const gaps = [];
    const usage = { completion: -1, prompt: 0, cached: -1, computed: -1 };
    const finish = (error) => {
      if (settled) return;
      settled = true;
      if (error) return resolve({ ok: false, error });
      if (chunks === 0 && usage.completion <= 0) {
        return resolve({ ok: false, error: 'stream ended without any generated text' });
      }
      const tokens = usage.completion >= 0 ? usage.completion : chunks;
      let cached = usage.cached;
      if (cached < 0) cached = usage.computed >= 0 ? Math.max(0, usage.prompt - usage.computed) : 0;
      // A chunk may carry several tokens (or a held-back partial character); spread each gap
      // over the tokens it stands for so TBT is per token on every server.
      const perChunk = chunks > 1 ? Math.max(1, (tokens - 1) / (chunks - 1)) : 1;
      resolve({
        ok: true,
        ttftMs: first - start,
        gapsMs: gaps.map((g) => g / perChunk),
        tokens,
        promptTokens: usage.prompt,
        cachedTokens: cached,
      });
    };

    const onEvent = (event) => {
      for (const line of event.split('\n')) {
        if (!line.startsWith('data:')) continue;
        const data = line.slice(5).trim();
        if (data === '[DONE]' || data.length === 0) continue;
        let m;
        try {
          m = JSON.parse(data);
        } catch {
          return finish(`unparsable SSE data: ${data.slice(0, 80)}`);
        }
        if (m.error) return finish(`server error in stream: ${JSON.stringify(m.error)}`);
        readUsage(m, usage);
        const text = m.choices?.[0]?.text ?? m.content ?? '';
        if (text.length === 0) continue;
        const now = performance.now();
        if (first === 0) first = now;
        else gaps.push(now - last);
        last = now;
        chunks++;
      }
    };

    const req = lib.request(url, { method: 'POST', headers, agent: false }, (res) => {
      res.setEncoding('utf8');
      if (res.statusCode !== 200) {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => finish(`HTTP ${res.statusCode}: ${text.slice(0, 200)}`));
        return;
      }
      res.on('data', (d) => {
        buf += d.replace(/\r\n/g, '\n');
        let end;
        while ((end = buf.indexOf('\n\n')) >= 0) {
          onEvent(buf.slice(0, end));
          buf = buf.slice(end + 2);
        }
      });
      res.on('end', () => {
        if (buf.trim().length > 0) onEvent(buf);
        finish(null);
      });
      res.on('error', (e) => finish(`response: ${e.message}`));
    });
    req.setTimeout(idleTimeoutMs, () => req.destroy(new Error(`silent for ${idleTimeoutMs} ms`)));
    req.on('error', (e) => finish(`request: ${e.message}`));
    req.end(payload);
  });
}
