// Summary statistics over per-request measurements. Pure functions.

// Nearest-rank percentile (p in 0..100); NaN for an empty list.
export function percentile(xs, p) {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * s.length);
  return s[Math.min(s.length - 1, Math.max(0, rank - 1))];
}

// results: [{ ok, ttftMs, gapsMs, tokens, promptTokens, cachedTokens, error }]
export function summarize(results, wallS) {
  const ok = results.filter((r) => r.ok);
  const tokens = ok.reduce((a, r) => a + r.tokens, 0);
  const prompt = ok.reduce((a, r) => a + r.promptTokens, 0);
  const cached = ok.reduce((a, r) => a + r.cachedTokens, 0);
  const ttft = ok.map((r) => r.ttftMs);
  const tbt = ok.flatMap((r) => r.gapsMs);
  const errors = results.filter((r) => !r.ok).map((r) => r.error);
  return {
    requests: results.length,
    errors: errors.length,
    first_errors: [...new Set(errors)].slice(0, 3),
    generated_tokens: tokens,
    prompt_tokens: prompt,
    cached_prompt_tokens: cached,
    wall_s: wallS,
    tokens_per_s: tokens / wallS,
    ttft_ms_p50: percentile(ttft, 50),
    ttft_ms_p99: percentile(ttft, 99),
    ttft_ms_max: ttft.length ? Math.max(...ttft) : NaN,
    tbt_ms_p50: percentile(tbt, 50),
    tbt_ms_p99: percentile(tbt, 99),
    tbt_ms_max: tbt.length ? Math.max(...tbt) : NaN,
  };
}
