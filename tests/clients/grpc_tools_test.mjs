// Tool calls and reasoning over gRPC (sparrow.v1.Sparrow/Chat) with the @grpc/grpc-js client,
// loading sparrow.proto at run time, against a real sparrowd that allows forced answers
// (options.forced_output, test-only): the tiny model is made to say a tool call or to think.
// Usage: node grpc_tools_test.mjs --sparrowd <path> --model <gguf> --proto <sparrow.proto>
// Exit code 0: all passed; 1: a check failed; 77: skipped (the npm packages are missing).
import assert from 'node:assert/strict';
import { arg, collect, loadSparrowProto, runChecks, startServer } from './harness.mjs';

const sparrowd = arg('sparrowd', process.env.SPARROWD);
const model = arg('model', '../shared/models/stories260K.gguf');
const protoPath = arg('proto');
assert.ok(sparrowd, 'pass --sparrowd <path of the sparrowd binary>');
assert.ok(protoPath, 'pass --proto <path of api/proto/sparrow/v1/sparrow.proto>');
const { grpc, pkg } = await loadSparrowProto(protoPath);

const tools = [{ name: 'get_weather', description: 'Weather',
                 parameters_json: '{"type": "object", "properties": {"city": {"type": "string"}}}' }];
const messages = [{ role: 'user', content: 'Weather in Paris?' }];
const call = (city) =>
  `<tool_call>\n{"name": "get_weather", "arguments": {"city": "${city}"}}\n</tool_call>`;
const options = (forced) => ({ max_tokens: 400, sampling: { temperature: 0 },
                               forced_output: forced });

const tests = [];
const test = (name, fn) => tests.push({ name, fn });

test('Chat returns tool calls and FINISH_REASON_TOOL_CALLS', async (c) => {
  const r = await collect(c.Chat({ messages, tools,
                                   options: options(`${call('Paris')}\n${call('Rome')}`) }));
  assert.equal(r.error, null);
  const calls = r.messages.flatMap((m) => m.tool_calls);
  assert.deepEqual(calls.map((x) => JSON.parse(x.arguments).city), ['Paris', 'Rome']);
  assert.ok(calls.every((x) => x.name === 'get_weather' && x.id.startsWith('call_')));
  assert.equal(r.messages.map((m) => m.text).join(''), '');
  assert.equal(r.messages.at(-1).finish_reason, 'FINISH_REASON_TOOL_CALLS');
});

test('Chat splits thinking into reasoning', async (c) => {
  const r = await collect(c.Chat({ messages,
                                   options: options('<think>Hmm.</think>\n\nSunny.') }));
  assert.equal(r.error, null);
  assert.equal(r.messages.map((m) => m.reasoning).join(''), 'Hmm.');
  assert.equal(r.messages.map((m) => m.text).join(''), 'Sunny.');
  assert.equal(r.messages.at(-1).finish_reason, 'FINISH_REASON_STOP');
  const inline = await collect(c.Chat({ messages, reasoning_format: 'none',
                                        options: options('<think>Hmm.</think>Sunny.') }));
  assert.equal(inline.messages.map((m) => m.text).join('').trimStart(),
               '<think>Hmm.</think>Sunny.');
});

test('tool_choice none and a conversation with a tool result', async (c) => {
  const r = await collect(c.Chat({ messages, tools, tool_choice: 'none',
                                   options: options(call('Paris')) }));
  assert.equal(r.messages.map((m) => m.text).join('').trimStart(), call('Paris'));
  const turn = await collect(c.Chat({ tools, options: { max_tokens: 4 }, messages: [...messages,
    { role: 'assistant', tool_calls: [{ id: 'call_1', name: 'get_weather',
                                        arguments: '{"city": "Paris"}' }] },
    { role: 'tool', tool_call_id: 'call_1', content: '18 C' }] }));
  assert.equal(turn.error, null);
});

test('bad tools are INVALID_ARGUMENT naming the field', async (c) => {
  const cases = [
    [{ tools: [{ name: 'bad name' }] }, /tools\[0\]\.name/],
    [{ tools: [{ name: 'f', parameters_json: '[1]' }] }, /tools\[0\]\.parameters_json/],
    [{ tools, tool_choice_function: 'nope' }, /tool_choice_function/],
    [{ messages: [{ role: 'tool', content: 'x' }] }, /messages\[0\]\.tool_call_id/],
    [{ options: { logit_bias: { 999999: 1 } } }, /options\.logit_bias/],
  ];
  for (const [patch, re] of cases) {
    const r = await collect(c.Chat({ messages, ...patch }));
    assert.equal(r.error?.code, grpc.status.INVALID_ARGUMENT, String(re));
    assert.match(r.error.details, re);
  }
});

const server = await startServer(sparrowd, model, {
  grpc: true, args: ['--chat-template', 'chatml', '--allow-forced-output'] });
const client = new pkg.sparrow.v1.Sparrow(`127.0.0.1:${server.grpcPort}`,
                                          grpc.credentials.createInsecure());
await runChecks(tests, [client], server);
