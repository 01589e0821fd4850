// Tool calls, reasoning and logit_bias through the official OpenAI Node client against a real
// sparrowd. The tiny model never calls a tool by itself, so the server runs with
// --allow-forced-output and each request forces the model's answer (forced_output, a test-only
// request field): the real engine, detokenizer, streaming and parsers handle a chosen text.
// (A SentencePiece answer starts with a space, as the model's own answers do: hence trimStart.)
// Usage: node openai_tools_test.mjs --sparrowd <path> --model <gguf>
// Exit code 0: all passed; 1: a check failed; 77: skipped (the openai package is missing).
import assert from 'node:assert/strict';
import { arg, importOrSkip, runChecks, startServer } from './harness.mjs';

const { default: OpenAI } = await importOrSkip('openai');

const sparrowd = arg('sparrowd', process.env.SPARROWD);
const model = arg('model', '../shared/models/stories260K.gguf');
assert.ok(sparrowd, 'pass --sparrowd <path of the sparrowd binary>');

const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Weather',
  parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
const messages = [{ role: 'user', content: 'Weather in Paris?' }];
const call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
const base = { model: 'stories260K', messages, tools, temperature: 0, max_tokens: 400 };

const tests = [];
const test = (name, fn) => tests.push({ name, fn });

test('a tool call comes back as message.tool_calls', async (c) => {
  const r = await c.chat.completions.create({ ...base, forced_output: call });
  const choice = r.choices[0];
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.content, null);
  assert.equal(choice.message.tool_calls.length, 1);
  const t = choice.message.tool_calls[0];
  assert.match(t.id, /^call_/);
  assert.equal(t.type, 'function');
  assert.equal(t.function.name, 'get_weather');
  assert.deepEqual(JSON.parse(t.function.arguments), { city: 'Paris' });
});

test('streamed tool calls assemble in the client\'s stream helper', async (c) => {
  const text = `Checking.\n${call}\n${call.replace('Paris', 'Rome')}`;
  const stream = c.beta.chat.completions.stream({ ...base, forced_output: text, stream: true });
  const deltas = [];
  stream.on('chunk', (chunk) => { for (const x of chunk.choices) deltas.push(x.delta); });
  const done = await stream.finalChatCompletion();
  const m = done.choices[0].message;
  assert.equal(done.choices[0].finish_reason, 'tool_calls');
  assert.equal(m.content.trimStart(), 'Checking.\n');
  assert.deepEqual(m.tool_calls.map((t) => JSON.parse(t.function.arguments).city),
                   ['Paris', 'Rome']);
  // The name comes first (with index, id and type), then the arguments.
  const first = deltas.find((d) => d.tool_calls)?.tool_calls[0];
  assert.equal(first.index, 0);
  assert.equal(first.function.name, 'get_weather');
  assert.match(first.id, /^call_/);
  // No delta carries the markers: held back until decided.
  assert.ok(!deltas.some((d) => (d.content ?? '').includes('<tool')));
});

test('tool_choice "none" leaves the text alone', async (c) => {
  const r = await c.chat.completions.create({ ...base, tool_choice: 'none', forced_output: call });
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.equal(r.choices[0].message.content.trimStart(), call);
  assert.equal(r.choices[0].message.tool_calls, undefined);
});

test('tool_choice "required" and a named function start the call in the prompt', async (c) => {
  // The prompt ends with "<tool_call>\n" (or with the named call's opening): the model's answer
  // goes on from there.
  const required = await c.chat.completions.create({ ...base, tool_choice: 'required',
    forced_output: '{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>' });
  assert.equal(required.choices[0].finish_reason, 'tool_calls');
  assert.equal(required.choices[0].message.tool_calls[0].function.name, 'get_weather');
  const named = await c.chat.completions.create({ ...base,
    tool_choice: { type: 'function', function: { name: 'get_weather' } },
    forced_output: '{"city": "Oslo"}}\n</tool_call>' });
  assert.deepEqual(JSON.parse(named.choices[0].message.tool_calls[0].function.arguments),
                   { city: 'Oslo' });
});

test('text held back in case it began a marker is kept at the end', async (c) => {
  for (const stream of [false, true]) {
    const r = await c.chat.completions.create({ ...base, forced_output: 'Hi <tool', stream });
    let content = '';
    if (stream) {
      for await (const chunk of r) content += chunk.choices[0]?.delta?.content ?? '';
    } else {
      content = r.choices[0].message.content;
    }
    assert.equal(content.trimStart(), 'Hi <tool', `stream: ${stream}`);
  }
});

test('a malformed call is plain content', async (c) => {
  const bad = '<tool_call>{"name": "get_weather", "arguments": {"city": </tool_call>';
  const r = await c.chat.completions.create({ ...base, forced_output: bad });
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.equal(r.choices[0].message.content.trimStart(), bad);
});

test('thinking goes to reasoning_content, streamed and not', async (c) => {
  const text = '<think>\nThe user greets me.\n</think>\n\nHello!';
  const r = await c.chat.completions.create({ ...base, tools: undefined, forced_output: text });
  assert.equal(r.choices[0].message.reasoning_content, 'The user greets me.');
  assert.equal(r.choices[0].message.content, 'Hello!');
  const stream = await c.chat.completions.create({ ...base, tools: undefined,
                                                   forced_output: text, stream: true });
  let reasoning = '', content = '';
  for await (const chunk of stream) {
    reasoning += chunk.choices[0]?.delta?.reasoning_content ?? '';
    content += chunk.choices[0]?.delta?.content ?? '';
  }
  assert.equal(reasoning, 'The user greets me.');
  assert.equal(content, 'Hello!');
  const inline = await c.chat.completions.create({ ...base, tools: undefined, forced_output: text,
                                                   reasoning_format: 'none' });
  assert.equal(inline.choices[0].message.content.trimStart(), text);
});

test('a conversation with a tool call and its result is accepted', async (c) => {
  const r = await c.chat.completions.create({ model: 'stories260K', tools, max_tokens: 4,
    messages: [...messages,
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function',
        function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: '18 C' }] });
  assert.equal(r.choices[0].message.role, 'assistant');
});

test('bad tools and tool messages are 400s naming the field', async (c) => {
  const cases = [
    [{ tools: [{ type: 'function', function: { name: 'bad name' } }] }, 'tools[0].function.name'],
    [{ tool_choice: { type: 'function', function: { name: 'nope' } } }, 'tool_choice'],
    [{ messages: [...messages, { role: 'tool', tool_call_id: 'x', content: 'y' }] },
     'messages[1].tool_call_id'],
    [{ messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 'a', type: 'function',
        function: { name: 'f', arguments: 'not json' } }] }] },
     'messages[0].tool_calls[0].function.arguments'],
    [{ logit_bias: { 5: 300 } }, 'logit_bias'],
    [{ reasoning_format: 'sideways' }, 'reasoning_format'],
  ];
  for (const [patch, param] of cases) {
    await assert.rejects(c.chat.completions.create({ ...base, ...patch }),
      (e) => e instanceof OpenAI.BadRequestError && e.param === param, param);
  }
});

test('logit_bias +100 makes greedy decoding pick that token', async (c) => {
  const r = await c.chat.completions.create({ model: 'stories260K', messages, temperature: 0,
    max_tokens: 4, logit_bias: { 300: 100 }, logprobs: true });
  const pieces = r.choices[0].logprobs.content.map((t) => t.token);
  assert.equal(pieces.length, 4);
  assert.ok(pieces.every((p) => p === pieces[0]), pieces.join('|'));
});

const server = await startServer(sparrowd, model,
                                 { args: ['--chat-template', 'chatml', '--allow-forced-output'] });
const client = new OpenAI({ baseURL: `http://127.0.0.1:${server.port}/v1`, apiKey: 'unused',
                            maxRetries: 0 });
await runChecks(tests, [client], server);
