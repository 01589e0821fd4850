// Deterministic prompt text for the load generator: the same seed gives both servers the same
// prompts. Pure functions, no shared state beyond the generator a caller owns.

// xorshift32: tiny, seedable, and identical on every Node version.
export function makeRng(seed) {
  // Scramble the seed: xorshift's first outputs from small seeds are small too.
  let s = Math.imul((seed ^ 0x9e3779b9) >>> 0, 0x85ebca6b) >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 4294967296;
  };
}

// Common words tokenize to about one token each in most vocabularies, so the word count is a
// stable proxy for prompt tokens; the servers' usage.prompt_tokens reports the real count.
const WORDS = (
  'the a little girl boy dog cat tree park ball red big small happy sad ran saw played jumped ' +
  'found went home day sun sky bird friend mom dad house garden flower water river hill toy ' +
  'box book cake apple blue green yellow fast slow kind brave funny quiet loud'
).split(' ');

function words(random, n) {
  return Array.from({ length: n }, () => WORDS[Math.floor(random() * WORDS.length)]).join(' ');
}

// Returns a function that yields the next prompt. With sharedFraction F, the first
// round(words * F) words are one fixed "system prompt" common to every request; the rest are
// drawn fresh per request, so only that leading part can be served from a prefix cache.
// The shared and the per-request words come from separate streams, so the unshared prompts of
// one seed never start with that seed's shared prefix.
export function makePromptSource({ seed, promptWords, sharedFraction }) {
  const sharedWords = Math.round(promptWords * sharedFraction);
  const prefix = words(makeRng(seed * 2 + 1), sharedWords);
  const random = makeRng(seed * 2);
  return () => {
    const rest = words(random, promptWords - sharedWords);
    return [prefix, rest].filter((x) => x.length > 0).join(' ');
  };
}
