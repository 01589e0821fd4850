// Embedding load: CLIENTS concurrent clients each send REQUESTS POST /v1/embeddings of BATCH
// distinct texts of WORDS words (encoding_format float, as both servers answer it), and it
// prints one JSON line: texts embedded, seconds, texts/s, failed requests.
// Usage: node embed_load.mjs --url http://127.0.0.1:PORT [--clients 4] [--requests 8]
//        [--batch 8] [--words 64] [--pooling mean]
const arg = (n, d) => { const i = process.argv.indexOf(`--${n}`); return i >= 0 ? process.argv[i + 1] : d; };
const url = arg('url');
if (!url) { console.error('embed_load: pass --url'); process.exit(2); }
const clients = Number(arg('clients', 4)), requests = Number(arg('requests', 8));
const batch = Number(arg('batch', 8)), words = Number(arg('words', 64));
const vocab = ['the', 'little', 'dog', 'ran', 'to', 'a', 'park', 'and', 'saw', 'big', 'red',
               'ball', 'she', 'was', 'happy', 'with', 'her', 'friend', 'tree', 'sun'];
let seed = 1;
const rand = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed; };
const text = () => Array.from({ length: words }, () => vocab[rand() % vocab.length]).join(' ');

let failed = 0, texts = 0;
async function client() {
  for (let r = 0; r < requests; r++) {
    const input = Array.from({ length: batch }, text);
    const res = await fetch(`${url}/v1/embeddings`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input, encoding_format: 'float' }) });
    const body = await res.json().catch(() => null);
    if (!res.ok || !body?.data || body.data.length !== batch) { failed++; continue; }
    texts += batch;
  }
}
const t0 = performance.now();
await Promise.all(Array.from({ length: clients }, client));
const seconds = (performance.now() - t0) / 1000;
console.log(JSON.stringify({ texts, seconds, texts_per_s: texts / seconds, errors: failed }));
