// Starts sparrowd on free loopback ports and checks its gRPC service with the @grpc/grpc-js
// Node client, loading the .proto at run time: streamed Generate against llama.cpp's text,
// Chat, Tokenize/Detokenize, ListModels, the health service, cancellation and errors.
// Usage: node grpc_client_test.mjs --sparrowd <path> --model <gguf> --proto <sparrow.proto>
//        [--golden <json>]
// Exit code 0: all passed; 1: a check failed; 77: skipped (the npm packages are missing).
import { readFileSync } from 'node:fs';
import assert from 'node:assert/strict';
import { arg, collect, loadSparrowProto, runChecks, startServer } from './harness.mjs';

const sparrowd = arg('sparrowd', process.env.SPARROWD);
const model = arg('model', '../shared/models/stories260K.gguf');
const protoPath = arg('proto');
const goldenPath = arg('golden');
assert.ok(sparrowd, 'pass --sparrowd <path of the sparrowd binary>');
assert.ok(protoPath, 'pass --proto <path of api/proto/sparrow/v1/sparrow.proto>');

const { grpc, protoLoader, pkg } = await loadSparrowProto(protoPath);

const unary = (client, method, req) => new Promise((resolve, reject) =>
  client[method](req, (err, res) => (err ? reject(err) : resolve(res))));

const tests = [];
const test = (name, fn) => tests.push({ name, fn });

test('Generate streams llama.cpp\'s greedy text', async (c, golden) => {
  const r = await collect(c.Generate({ prompt: 'Once upon a time',
    options: { max_tokens: 48, sampling: { temperature: 0 } } }));
  assert.equal(r.error, null);
  assert.ok(r.messages.length >= 2, 'several messages: the text is streamed');
  const text = r.messages.map((m) => m.text).join('');
  if (golden) assert.equal(text, golden);
  const last = r.messages.at(-1);
  assert.equal(last.finish_reason, 'FINISH_REASON_LENGTH');
  assert.equal(last.usage.completion_tokens, 48);
  assert.equal(last.usage.prompt_tokens, 5);
  const ids = r.messages.flatMap((m) => m.token_ids);
  assert.equal(ids.length, 48);
});

test('Chat streams a reply', async (c) => {
  const r = await collect(c.Chat({ messages: [{ role: 'user', content: 'Tell me a story.' }],
    options: { max_tokens: 12, sampling: { temperature: 0 } } }));
  assert.equal(r.error, null);
  assert.ok(r.messages.at(-1).finish_reason !== 'FINISH_REASON_UNSPECIFIED');
  assert.ok(r.messages.map((m) => m.text).join('').length > 0);
});

test('Tokenize and Detokenize round-trip', async (c) => {
  const t = await unary(c, 'Tokenize', { text: 'Once upon a time' });
  assert.deepEqual(t.tokens, [1, 403, 407, 261, 378]);
  const d = await unary(c, 'Detokenize', { tokens: t.tokens, remove_special: true });
  assert.equal(d.text.trim(), 'Once upon a time');
});

test('ListModels names the served model', async (c) => {
  const r = await unary(c, 'ListModels', {});
  assert.equal(r.models[0].id, 'stories260K');
  assert.equal(r.models[0].architecture, 'llama');
});

test('a bad temperature is INVALID_ARGUMENT naming the field', async (c) => {
  const r = await collect(c.Generate({ prompt: 'x', options: { sampling: { temperature: -1 } } }));
  assert.ok(r.error, 'the call fails');
  assert.equal(r.error.code, grpc.status.INVALID_ARGUMENT);
  assert.match(r.error.details, /options\.sampling\.temperature/);
});

test('an unknown model is NOT_FOUND', async (c) => {
  const r = await collect(c.Generate({ model: 'gpt-nope', prompt: 'x' }));
  assert.equal(r.error?.code, grpc.status.NOT_FOUND);
});

test('cancelling the stream frees the request\'s KV blocks', async (c, _golden, server) => {
  const metrics = async () =>
    (await fetch(`http://127.0.0.1:${server.port}/metrics`)).text();
  const cancelled = (m) =>
    Number(m.match(/\nsparrow_requests_total\{status="cancelled"\} (\d+)/)?.[1] ?? 0);
  const before = cancelled(await metrics());
  const call = c.Generate({ prompt: 'Once upon a time',
    options: { max_tokens: 1500, sampling: { temperature: 1, seed: 3 } } });
  await new Promise((resolve) => call.once('data', resolve));
  call.cancel();
  await collect(call);
  // The scheduler frees the blocks at its next step; /metrics shows the pool state.
  let used = -1;
  for (let i = 0; i < 100 && used !== 0; i++) {
    const m = await metrics();
    used = Number(m.match(/\nsparrow_kv_blocks_used (\d+)/)[1]);
    if (used !== 0) await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(used, 0);
  assert.equal(cancelled(await metrics()), before + 1, 'counted as cancelled in /metrics');
});

test('the health service says SERVING', async (c, _golden, server) => {
  const hdef = protoLoader.fromJSON({ nested: { grpc: { nested: { health: { nested: { v1: {
    nested: {
      HealthCheckRequest: { fields: { service: { type: 'string', id: 1 } } },
      HealthCheckResponse: { fields: { status: { type: 'ServingStatus', id: 1 } },
        nested: { ServingStatus: { values: { UNKNOWN: 0, SERVING: 1, NOT_SERVING: 2,
                                             SERVICE_UNKNOWN: 3 } } } },
      Health: { methods: { Check: { requestType: 'HealthCheckRequest',
                                    responseType: 'HealthCheckResponse' } } },
    } } } } } } } }, { enums: String });
  const Health = grpc.loadPackageDefinition(hdef).grpc.health.v1.Health;
  const h = new Health(`127.0.0.1:${server.grpcPort}`, grpc.credentials.createInsecure());
  const r = await unary(h, 'Check', { service: 'sparrow.v1.Sparrow' });
  assert.equal(r.status, 'SERVING');
  h.close();
});

const golden = goldenPath
  ? JSON.parse(readFileSync(goldenPath, 'utf8')).prompts[0].generated_text : undefined;
const server = await startServer(sparrowd, model, { grpc: true });
const client = new pkg.sparrow.v1.Sparrow(`127.0.0.1:${server.grpcPort}`,
                                          grpc.credentials.createInsecure());
await runChecks(tests, [client, golden, server], server);
