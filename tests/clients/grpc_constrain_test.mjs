// Constrained output over gRPC (sparrow.v1.Sparrow Generate and Chat) with @grpc/grpc-js
// against a real sparrowd serving a random-weight model at temperature 1: options.json_schema,
// options.grammar and strict tools with tool_choice "required", and INVALID_ARGUMENT for an
// unsupported keyword, a malformed grammar and a schema nested too deep.
// Usage: node grpc_constrain_test.mjs --sparrowd <path> --model <gguf> --proto <sparrow.proto>
// Exit code 0: all passed; 1: a check failed; 77: skipped (the npm packages are missing).
import assert from 'node:assert/strict';
import { arg, collect, loadSparrowProto, runChecks, startServer } from './harness.mjs';

const sparrowd = arg('sparrowd', process.env.SPARROWD);
const model = arg('model', '../shared/models/llama-2-tiny-random.gguf');
const protoPath = arg('proto');
assert.ok(sparrowd, 'pass --sparrowd <path of the sparrowd binary>');
assert.ok(protoPath, 'pass --proto <path of api/proto/sparrow/v1/sparrow.proto>');
const { grpc, pkg } = await loadSparrowProto(protoPath);

const point = { type: 'object', properties: { x: { type: 'integer', minimum: -5, maximum: 5 },
                                              y: { type: 'integer', minimum: -5, maximum: 5 } },
                required: ['x', 'y'], additionalProperties: false };
const checkPoint = (doc) => {
  assert.deepEqual(Object.keys(doc), ['x', 'y']);
  for (const v of [doc.x, doc.y]) assert.ok(Number.isInteger(v) && v >= -5 && v <= 5, String(v));
};
const sampling = (seed) => ({ temperature: 1, seed });

const tests = [];
const test = (name, fn) => tests.push({ name, fn });

test('Generate with options.json_schema: the answer validates', async (c) => {
  for (const seed of [1, 2, 3]) {
    const r = await collect(c.Generate({ prompt: 'Point:', options: {
      max_tokens: 60, sampling: sampling(seed), json_schema: JSON.stringify(point) } }));
    assert.equal(r.error, null);
    const last = r.messages.at(-1);
    if (last.finish_reason !== 'FINISH_REASON_STOP') continue;
    checkPoint(JSON.parse(r.messages.map((m) => m.text).join('')));
  }
});

test('Generate with options.grammar follows the GBNF', async (c) => {
  const r = await collect(c.Generate({ prompt: 'Answer:', options: {
    max_tokens: 20, sampling: sampling(4), grammar: 'root ::= ("yes" | "no") "."' } }));
  assert.equal(r.error, null);
  assert.match(r.messages.map((m) => m.text).join(''), /^(yes|no)\.$/);
  assert.equal(r.messages.at(-1).finish_reason, 'FINISH_REASON_STOP');
});

test('Chat with a strict tool and tool_choice "required" returns a valid call', async (c) => {
  const tools = [{ name: 'move', parameters_json: JSON.stringify(point), strict: true }];
  const r = await collect(c.Chat({ messages: [{ role: 'user', content: 'Move.' }], tools,
                                   tool_choice: 'required',
                                   options: { max_tokens: 80, sampling: sampling(5) } }));
  assert.equal(r.error, null);
  const last = r.messages.at(-1);
  if (last.finish_reason === 'FINISH_REASON_TOOL_CALLS') {
    const calls = r.messages.flatMap((m) => m.tool_calls);
    assert.equal(calls[0].name, 'move');
    checkPoint(JSON.parse(calls[0].arguments));
  } else {
    assert.equal(last.finish_reason, 'FINISH_REASON_LENGTH');
  }
});

test('refusals are INVALID_ARGUMENT naming what is wrong', async (c) => {
  let deep = { type: 'string' };
  for (let i = 0; i < 24; i++) deep = { type: 'array', items: deep };
  const cases = [
    [{ json_schema: '{"type": "object", "properties": {"a": {"minProperties": 1}}}' },
     /minProperties.*|\/properties\/a/],
    [{ grammar: 'root ::= "a"\nb ::= [a-' }, /line 2, column/],
    [{ json_schema: JSON.stringify(deep) }, /deeper than/],
    [{ json_schema: '{}', grammar: 'root ::= "a"' }, /at most one/],
  ];
  for (const [patch, re] of cases) {
    const r = await collect(c.Generate({ prompt: 'x', options: { max_tokens: 4, ...patch } }));
    assert.equal(r.error?.code, grpc.status.INVALID_ARGUMENT, String(re));
    assert.match(r.error.details, re);
  }
});

const server = await startServer(sparrowd, model, {
  grpc: true, args: ['--chat-template', 'chatml'] });
const client = new pkg.sparrow.v1.Sparrow(`127.0.0.1:${server.grpcPort}`,
                                          grpc.credentials.createInsecure());
await runChecks(tests, [client], server);
