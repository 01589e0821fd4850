// Starts one sparrowd on free loopback ports and checks its embeddings with the official OpenAI
// Node client (/v1/embeddings; its default asks for base64) and the @grpc/grpc-js client
// (Embed), both against llama.cpp's llama-embedding vectors (tests/golden/embeddings): every
// pooling, lists of texts and of token ids, dimensions, embeddings batched beside a
// generation, and the errors.
// Usage: node embeddings_client_test.mjs --sparrowd <path> --model <gguf> --proto <proto>
//        --golden <tests/golden/embeddings/stories260K.json>
// Exit code 0: all passed; 1: a check failed; 77: skipped (the npm packages are missing).
import { readFileSync } from 'node:fs';
import assert from 'node:assert/strict';
import { arg, importOrSkip, loadSparrowProto, runChecks, startServer } from './harness.mjs';

const { default: OpenAI } = await importOrSkip('openai');
const sparrowd = arg('sparrowd', process.env.SPARROWD);
const model = arg('model');
const protoPath = arg('proto');
const goldenPath = arg('golden');
assert.ok(sparrowd && model && protoPath && goldenPath,
          'pass --sparrowd, --model, --proto and --golden');
const { grpc, pkg } = await loadSparrowProto(protoPath);
const golden = JSON.parse(readFileSync(goldenPath, 'utf8'));
const kTolerance = 1e-4;  // per component, as the golden test's
const name = 'stories260K';

const unary = (client, method, req) => new Promise((resolve, reject) =>
  client[method](req, (err, res) => (err ? reject(err) : resolve(res))));
const want = (pooling, i = 0) => golden.cases.filter((c) => c.pooling === pooling)[i];
function assertClose(got, expected, tol = kTolerance) {
  assert.equal(got.length, expected.length);
  let worst = 0;
  for (let k = 0; k < got.length; k++) worst = Math.max(worst, Math.abs(got[k] - expected[k]));
  assert.ok(worst <= tol, `max |difference| ${worst} > ${tol}`);
}
const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

const tests = [];
const test = (n, fn) => tests.push({ name: n, fn });

test('default request (base64) is llama.cpp\'s last-pooled vector', async ({ c }) => {
  const g = want('last');
  const r = await c.embeddings.create({ model: name, input: g.text });
  assert.equal(r.object, 'list');
  assert.equal(r.model, name);
  assertClose(r.data[0].embedding, g.embedding);  // the client asked base64 and decoded it
  // The same bytes asked for by hand: little-endian float32 in base64.
  const raw = await (await fetch(`${c.baseURL}/embeddings`, { method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ input: g.text, encoding_format: 'base64' }) })).json();
  const bytes = Buffer.from(raw.data[0].embedding, 'base64');
  assertClose(Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4)),
              g.embedding);
  assert.ok(r.usage.prompt_tokens > 0);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens);
});

test('a list of texts as floats, mean and cls pooling, in order', async ({ c }) => {
  for (const pooling of ['mean', 'cls']) {
    const cases = golden.cases.filter((x) => x.pooling === pooling);
    const r = await c.embeddings.create({ model: name, input: cases.map((x) => x.text),
                                          encoding_format: 'float', pooling });
    assert.deepEqual(r.data.map((d) => d.index), cases.map((_, i) => i));
    cases.forEach((x, i) => assertClose(r.data[i].embedding, x.embedding));
  }
});

test('a list longer than the scheduler\'s window comes back whole and in order', async ({ c }) => {
  const cases = golden.cases.filter((x) => x.pooling === 'last');
  const input = Array.from({ length: 40 }, (_, i) => cases[i % cases.length].text);
  const r = await c.embeddings.create({ model: name, input });
  assert.equal(r.data.length, 40);
  r.data.forEach((d, i) => {
    assert.equal(d.index, i);
    assertClose(d.embedding, cases[i % cases.length].embedding);
  });
});

test('token ids give the text\'s vector', async ({ c, g }) => {
  const text = want('last').text;
  const ids = (await unary(g, 'Tokenize', { text })).tokens;
  const one = await c.embeddings.create({ model: name, input: ids, encoding_format: 'float' });
  const two = await c.embeddings.create({ model: name, input: [ids, ids.slice(0, 2)],
                                          encoding_format: 'float' });
  assertClose(one.data[0].embedding, want('last').embedding);
  assertClose(two.data[0].embedding, want('last').embedding);
  assert.equal(two.data.length, 2);
  assert.equal(one.usage.prompt_tokens, ids.length);
});

test('dimensions keep the first components, unit length again', async ({ c }) => {
  const g = want('last');
  const r = await c.embeddings.create({ model: name, input: g.text, dimensions: 16 });
  const v = r.data[0].embedding;
  assert.equal(v.length, 16);
  assert.ok(Math.abs(norm(v) - 1) < 1e-5);
  const head = g.embedding.slice(0, 16);
  const n = norm(head);
  assertClose(v, head.map((x) => x / n), 1e-3);
});

test('embeddings batched beside a stream change neither', async ({ c }) => {
  const prompt = { model: name, prompt: 'Once upon a time', max_tokens: 40, temperature: 0 };
  const alone = (await c.completions.create(prompt)).choices[0].text;
  const stream = c.completions.create({ ...prompt, stream: true });
  const g = want('mean');
  const embeds = Array.from({ length: 6 }, () => c.embeddings.create(
    { model: name, input: g.text, encoding_format: 'float', pooling: 'mean' }));
  let text = '';
  for await (const chunk of await stream) text += chunk.choices[0]?.text ?? '';
  for (const r of await Promise.all(embeds)) assertClose(r.data[0].embedding, g.embedding);
  assert.equal(text, alone);
});

test('bad requests are 400s naming the field', async ({ c }) => {
  const bad = async (body, param, pattern, code) => {
    await assert.rejects(c.embeddings.create({ model: name, ...body }), (e) => {
      assert.ok(e instanceof OpenAI.BadRequestError, `${e}`);
      assert.equal(e.param, param);
      assert.match(e.message, pattern);
      if (code) assert.equal(e.code, code);
      return true;
    });
  };
  await bad({ input: [] }, 'input', /'input' is empty/);
  await bad({ input: 'word '.repeat(3000) }, 'input', /maximum context length/,
            'context_length_exceeded');
  await bad({ input: 'x', pooling: 'none' }, 'pooling', /one vector per token/);
  await bad({ input: 'x', dimensions: 100000 }, 'dimensions', /dimensions/);
  await bad({ input: 'x', encoding_format: 'int8' }, 'encoding_format', /float or base64/);
  await bad({ input: [[1, 2], 'x'] }, 'input', /input\[1\]/);
  await bad({ input: [[1, 999999]] }, 'input', /outside the vocabulary/);
  await assert.rejects(c.embeddings.create({ model: 'nope', input: 'x' }),
                       (e) => e instanceof OpenAI.NotFoundError && e.status === 404);
});

test('gRPC Embed gives llama.cpp\'s vectors and refuses bad requests', async ({ g }) => {
  const cls = golden.cases.filter((x) => x.pooling === 'cls');
  const r = await unary(g, 'Embed', { texts: cls.map((x) => x.text), pooling: 'cls' });
  assert.equal(r.model, name);
  assert.equal(r.pooling, 'cls');
  assert.equal(r.embeddings.length, cls.length);
  cls.forEach((x, i) => assertClose(r.embeddings[i].values, x.embedding));
  assert.ok(r.prompt_tokens > 0);
  const ids = (await unary(g, 'Tokenize', { text: want('last').text })).tokens;
  const t = await unary(g, 'Embed', { token_lists: [{ tokens: ids }] });
  assert.equal(t.pooling, 'last');
  assertClose(t.embeddings[0].values, want('last').embedding);
  const refused = async (req, pattern) => {
    await assert.rejects(unary(g, 'Embed', req), (e) => {
      assert.equal(e.code, grpc.status.INVALID_ARGUMENT);
      assert.match(e.details, pattern);
      return true;
    });
  };
  await refused({}, /'texts' is empty|'token_lists' is empty/);
  await refused({ texts: ['x'], pooling: 'max' }, /pooling/);
  await refused({ texts: ['x'], token_lists: [{ tokens: [1] }] }, /texts and token_lists/);
  await refused({ texts: ['a', 'word '.repeat(3000)] }, /'texts\[1\]' has \d+ tokens/);
  await refused({ texts: ['x'], dimensions: 100000 }, /'dimensions'/);
});

// The references' KV cache type (tests/golden/embeddings/README.md): F32, so that neither engine
// rounds attention to F16.
const server = await startServer(sparrowd, model, {
  grpc: true, args: ['--cache-type-k', golden.cache_type, '--cache-type-v', golden.cache_type] });
const c = new OpenAI({ baseURL: `http://127.0.0.1:${server.port}/v1`, apiKey: 'unused',
                       maxRetries: 0 });
const g = new pkg.sparrow.v1.Sparrow(`127.0.0.1:${server.grpcPort}`,
                                     grpc.credentials.createInsecure());
await runChecks(tests, [{ c, g }], server);
