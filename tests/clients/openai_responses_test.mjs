// The Responses API (POST /v1/responses, GET/DELETE /v1/responses/{id}) through the official
// OpenAI Node client's responses.create and responses.stream against a real sparrowd. Where an
// answer's shape matters (tool calls, reasoning), the server runs with --allow-forced-output and
// the request forces the model's text (forced_output, test-only): the real engine, detokenizer,
// parsers and stream handle a chosen text. That a conversation reaches the model as the chat
// route would render it is checked by the prompt's token count against /v1/chat/completions.
// The store holds 3 responses (--response-store-entries 3), so eviction is seen too.
// Usage: node openai_responses_test.mjs --sparrowd <path> --model <gguf>
// Exit code 0: all passed; 1: a check failed; 77: skipped (the openai package is missing).
import assert from 'node:assert/strict';
import { arg, importOrSkip, runChecks, startServer } from './harness.mjs';

const { default: OpenAI } = await importOrSkip('openai');

const sparrowd = arg('sparrowd', process.env.SPARROWD);
const model = arg('model', '../shared/models/stories260K.gguf');
assert.ok(sparrowd, 'pass --sparrowd <path of the sparrowd binary>');

const M = 'stories260K';
const tools = [{ type: 'function', name: 'get_weather', description: 'Weather',
  parameters: { type: 'object', properties: { city: { type: 'string' } } } }];
const chatTools = tools.map(({ type, ...fn }) => ({ type, function: fn }));
const call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
const thinking = '<think>\nThe user greets me.\n</think>\n\nHello!';

// The prompt tokens /v1/chat/completions counts for `messages`.
async function chatPromptTokens(c, messages, extra = {}) {
  const r = await c.chat.completions.create({ model: M, messages, max_tokens: 1, ...extra });
  return r.usage.prompt_tokens;
}

const tests = [];
const test = (name, fn) => tests.push({ name, fn });

test('a string input gives a completed response with output_text and usage', async (c) => {
  const r = await c.responses.create({ model: M, input: 'Hi', forced_output: 'Hello there.' });
  assert.match(r.id, /^resp_/);
  assert.equal(r.object, 'response');
  assert.equal(r.status, 'completed');
  assert.equal(r.model, M);
  assert.equal(r.incomplete_details, null);
  assert.equal(r.output.length, 1);
  const m = r.output[0];
  assert.equal(m.type, 'message');
  assert.equal(m.role, 'assistant');
  assert.match(m.id, /^msg_/);
  assert.equal(m.content[0].type, 'output_text');
  assert.equal(r.output_text.trimStart(), 'Hello there.');
  assert.ok(r.usage.input_tokens > 0 && r.usage.output_tokens > 0);
  assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
  assert.equal(r.usage.input_tokens, await chatPromptTokens(c, [{ role: 'user', content: 'Hi' }]));
});

test('max_output_tokens ends the response incomplete, the same text as chat', async (c) => {
  const r = await c.responses.create({ model: M, input: 'Once upon a time', temperature: 0,
                                       max_output_tokens: 5 });
  assert.equal(r.status, 'incomplete');
  assert.deepEqual(r.incomplete_details, { reason: 'max_output_tokens' });
  assert.equal(r.usage.output_tokens, 5);
  assert.equal(r.output[0].status, 'incomplete');
  const chat = await c.chat.completions.create({ model: M, temperature: 0, max_tokens: 5,
    messages: [{ role: 'user', content: 'Once upon a time' }] });
  assert.equal(r.output_text, chat.choices[0].message.content);
});

test('instructions and input items render as the chat messages would', async (c) => {
  const input = [{ role: 'developer', content: 'Answer in French.' },
                 { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hi' },
                                                            { type: 'input_text', text: '!' }] }];
  const r = await c.responses.create({ model: M, instructions: 'Be brief.', input,
                                       max_output_tokens: 1, metadata: { k: 'v' }, user: 'u1' });
  assert.equal(r.instructions, 'Be brief.');
  assert.deepEqual(r.metadata, { k: 'v' });
  assert.equal(r.user, 'u1');
  assert.equal(r.usage.input_tokens, await chatPromptTokens(c, [
    { role: 'system', content: 'Be brief.' }, { role: 'system', content: 'Answer in French.' },
    { role: 'user', content: 'Hi!' }]));
});

test('previous_response_id continues the stored conversation', async (c) => {
  const first = await c.responses.create({ model: M, instructions: 'Be kind.', input: 'Hi',
                                           forced_output: 'Hello.' });
  const next = await c.responses.create({ model: M, previous_response_id: first.id,
                                          input: 'And then?', max_output_tokens: 1 });
  assert.equal(next.previous_response_id, first.id);
  // The earlier turn's instructions are not carried over (as OpenAI's).
  assert.equal(next.usage.input_tokens, await chatPromptTokens(c, [
    { role: 'user', content: 'Hi' }, { role: 'assistant', content: first.output_text },
    { role: 'user', content: 'And then?' }]));
  const got = await c.responses.retrieve(first.id);
  assert.equal(got.id, first.id);
  assert.deepEqual(got.output, first.output);
});

test('a function call comes back as a function_call item; its output round-trips', async (c) => {
  const input = 'Weather in Paris?';
  const r = await c.responses.create({ model: M, input, tools, forced_output: call });
  assert.equal(r.status, 'completed');
  assert.equal(r.output.length, 1);
  const fc = r.output[0];
  assert.equal(fc.type, 'function_call');
  assert.equal(fc.name, 'get_weather');
  assert.match(fc.call_id, /^call_/);
  assert.match(fc.id, /^fc_/);
  assert.deepEqual(JSON.parse(fc.arguments), { city: 'Paris' });
  assert.equal(r.output_text, '');
  assert.deepEqual(r.tools.map((t) => t.name), ['get_weather']);
  const result = { type: 'function_call_output', call_id: fc.call_id, output: '18 C' };
  const answer = await c.responses.create({ model: M, tools, previous_response_id: r.id,
                                            input: [result], forced_output: 'It is 18 C.' });
  assert.equal(answer.output_text.trimStart(), 'It is 18 C.');
  // Stateless: the items sent back in full make the same prompt as the stored conversation.
  const stateless = await c.responses.create({ model: M, tools, store: false,
    input: [{ role: 'user', content: input }, fc, result], max_output_tokens: 1 });
  assert.equal(stateless.usage.input_tokens, answer.usage.input_tokens);
  assert.equal(stateless.usage.input_tokens, await chatPromptTokens(c, [
    { role: 'user', content: input },
    { role: 'assistant', content: null, tool_calls: [{ id: fc.call_id, type: 'function',
      function: { name: 'get_weather', arguments: fc.arguments } }] },
    { role: 'tool', tool_call_id: fc.call_id, content: '18 C' }], { tools: chatTools }));
  await assert.rejects(c.responses.retrieve(stateless.id), (e) => e instanceof OpenAI.NotFoundError,
                       'store: false keeps nothing');
});

test('thinking becomes a reasoning item before the message', async (c) => {
  const r = await c.responses.create({ model: M, input: 'Hi', forced_output: thinking,
                                       reasoning: { effort: 'low' } });
  assert.deepEqual(r.output.map((o) => o.type), ['reasoning', 'message']);
  assert.match(r.output[0].id, /^rs_/);
  assert.equal(r.output[0].content[0].text, 'The user greets me.');
  assert.equal(r.output_text, 'Hello!');
  assert.equal(r.reasoning.effort, 'low');
  const rt = r.usage.output_tokens_details.reasoning_tokens;
  assert.ok(rt > 0 && rt < r.usage.output_tokens, `reasoning_tokens ${rt}`);
});

test('responses.stream sends the typed events in order and assembles the response', async (c) => {
  const text = `${thinking} ${call}`;
  const stream = c.responses.stream({ model: M, input: 'Hi', tools, forced_output: text });
  const events = [];
  stream.on('event', (e) => events.push(e));
  const final = await stream.finalResponse();
  assert.deepEqual(events.map((e) => e.sequence_number), events.map((_, i) => i));
  const types = events.map((e) => e.type);
  const dedup = types.filter((t, i) => t !== types[i - 1]);  // runs of deltas as one
  assert.deepEqual(dedup, [
    'response.created', 'response.in_progress',
    'response.output_item.added', 'response.content_part.added', 'response.reasoning_text.delta',
    'response.reasoning_text.done', 'response.content_part.done', 'response.output_item.done',
    'response.output_item.added', 'response.content_part.added', 'response.output_text.delta',
    'response.output_text.done', 'response.content_part.done', 'response.output_item.done',
    'response.output_item.added', 'response.function_call_arguments.delta',
    'response.function_call_arguments.done', 'response.output_item.done',
    'response.completed']);
  assert.equal(events[0].response.status, 'in_progress');
  assert.deepEqual(final.output.map((o) => o.type), ['reasoning', 'message', 'function_call']);
  const deltas = events.filter((e) => e.type === 'response.output_text.delta');
  const said = final.output[1].content[0].text;  // (the stream helper sets no output_text)
  assert.equal(deltas.map((e) => e.delta).join(''), said);
  assert.ok(said.startsWith("Hello!"), said);
  assert.ok(deltas.every((e) => e.output_index === 1 && e.content_index === 0 &&
                                e.item_id === final.output[1].id));
  const done = events.find((e) => e.type === 'response.function_call_arguments.done');
  assert.deepEqual(JSON.parse(done.arguments), { city: 'Paris' });
  assert.equal(final.status, 'completed');
  assert.ok(final.usage.output_tokens > 0);
  // Stored before its last event: the id may be continued at once.
  const stored = await c.responses.retrieve(final.id);
  assert.deepEqual(stored.output.map((o) => o.id), final.output.map((o) => o.id));
  assert.equal(stored.output[1].content[0].text, said);
});

test('a stream cut by max_output_tokens ends with response.incomplete', async (c) => {
  const stream = await c.responses.create({ model: M, input: 'Once upon a time', stream: true,
                                            max_output_tokens: 3 });
  const events = [];
  for await (const e of stream) events.push(e);
  const last = events.at(-1);
  assert.equal(last.type, 'response.incomplete');
  assert.equal(last.response.status, 'incomplete');
  assert.equal(last.response.usage.output_tokens, 3);
  assert.equal(events.filter((e) => e.type === 'response.output_item.done').at(-1).item.status,
               'incomplete');
});

test('stored responses: delete, unknown ids, and LRU eviction at the bound', async (c) => {
  const make = () => c.responses.create({ model: M, input: 'Hi', max_output_tokens: 1 });
  const a = await make();
  const b = await make();
  await make();
  await c.responses.retrieve(a.id);  // now the most recently used
  await make();                      // a fourth: b, the least recently used, goes
  await c.responses.retrieve(a.id);
  await assert.rejects(c.responses.retrieve(b.id), (e) => e instanceof OpenAI.NotFoundError);
  await c.responses.del(a.id);
  await assert.rejects(c.responses.retrieve(a.id), (e) => e instanceof OpenAI.NotFoundError);
  await assert.rejects(c.responses.del(a.id), (e) => e instanceof OpenAI.NotFoundError);
  await assert.rejects(
    c.responses.create({ model: M, input: 'x', previous_response_id: b.id }),
    (e) => e instanceof OpenAI.NotFoundError && e.param === 'previous_response_id' &&
           e.code === 'previous_response_not_found');
});

test('bad inputs are 400s naming the field', async (c) => {
  const user = { role: 'user', content: 'Hi' };
  const cases = [
    [{ input: undefined }, 'input'],
    [{ input: [] }, 'input'],
    [{ input: [{ role: 'robot', content: 'x' }] }, 'input[0].role'],
    [{ input: [{ role: 'user' }] }, 'input[0].content'],
    [{ input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'http://x' }] }] },
     'input[0].content[0].type'],
    [{ input: [{ type: 'function_call', call_id: 'c1', name: 'f', arguments: 'not json' }] },
     'input[0].arguments'],
    [{ input: [user, { type: 'function_call_output', call_id: 'nope', output: 'x' }] },
     'input[1].call_id'],
    [{ input: [{ type: 'item_reference', id: 'msg_1' }] }, 'input[0].type'],
    [{ input: [{ type: 'web_search_call' }] }, 'input[0].type'],
    [{ tools: [{ type: 'web_search_preview' }] }, 'tools[0].type'],
    [{ tools: [{ type: 'function', name: 'bad name' }] }, 'tools[0].name'],
    [{ tools, tool_choice: { type: 'function', name: 'nope' } }, 'tool_choice'],
    [{ tool_choice: 'sometimes' }, 'tool_choice'],
    [{ text: { format: { type: 'json_schema', name: 'x' } } }, 'text.format.schema'],
    [{ text: { format: { type: 'xml' } } }, 'text.format.type'],
    [{ max_output_tokens: 0 }, 'max_output_tokens'],
    [{ temperature: 3 }, 'temperature'],
    [{ top_p: 0 }, 'top_p'],
    [{ metadata: { k: 5 } }, 'metadata.k'],
    [{ previous_response_id: '' }, 'previous_response_id'],
    [{ reasoning: { effort: 'extreme' } }, 'reasoning.effort'],
    [{ store: 'yes' }, 'store'],
    [{ background: true }, 'background'],
    [{ truncation: 'auto' }, 'truncation'],
    [{ instructions: 7 }, 'instructions'],
    [{ model: 'gpt-4o' }, 'model'],
  ];
  for (const [patch, param] of cases) {
    await assert.rejects(c.responses.create({ model: M, input: 'Hi', ...patch }),
      (e) => (e instanceof OpenAI.BadRequestError || e instanceof OpenAI.NotFoundError) &&
             e.param === param, `${JSON.stringify(patch)} -> ${param}`);
  }
});

const server = await startServer(sparrowd, model, {
  args: ['--chat-template', 'chatml', '--allow-forced-output', '--response-store-entries', '3'] });
const client = new OpenAI({ baseURL: `http://127.0.0.1:${server.port}/v1`, apiKey: 'unused',
                            maxRetries: 0 });
await runChecks(tests, [client], server);
