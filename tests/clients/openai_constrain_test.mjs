// Constrained output through the official OpenAI Node client against a real sparrowd serving a
// random-weight model at temperature 1, where only constrained decoding makes answers parse:
// response_format json_schema (strict) and json_object, the Responses API's text.format, tools
// with strict parameters and tool_choice "required", and the 400 for a keyword outside the
// schema subset.
// Usage: node openai_constrain_test.mjs --sparrowd <path> --model <gguf>
// Exit code 0: all passed; 1: a check failed; 77: skipped (the openai package is missing).
import assert from 'node:assert/strict';
import { arg, importOrSkip, runChecks, startServer } from './harness.mjs';

const { default: OpenAI } = await importOrSkip('openai');

const sparrowd = arg('sparrowd', process.env.SPARROWD);
const model = arg('model', '../shared/models/llama-2-tiny-random.gguf');
assert.ok(sparrowd, 'pass --sparrowd <path of the sparrowd binary>');

const person = {
  type: 'object',
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 10 },
    age: { type: 'integer', minimum: 0, maximum: 120 },
    role: { enum: ['admin', 'user'] },
  },
  required: ['name', 'age', 'role'],
  additionalProperties: false,
};

// The schema above, checked by hand (no validator package is installed). response_format keeps
// the schema's order; tool parameters are read as a sorted tree, so their order is not checked.
function checkPerson(doc, ordered = true) {
  const keys = Object.keys(doc);
  assert.deepEqual(ordered ? keys : keys.sort(), ordered ? ['name', 'age', 'role']
                                                         : ['age', 'name', 'role']);
  assert.equal(typeof doc.name, 'string');
  assert.ok([...doc.name].length >= 1 && [...doc.name].length <= 10, doc.name);
  assert.ok(Number.isInteger(doc.age) && doc.age >= 0 && doc.age <= 120, String(doc.age));
  assert.ok(['admin', 'user'].includes(doc.role), doc.role);
}

const messages = [{ role: 'user', content: 'Make a user record.' }];
const base = { model: 'llama-2-tiny-random', messages, temperature: 1, max_tokens: 120 };

const tests = [];
const test = (name, fn) => tests.push({ name, fn });

test('response_format json_schema: every answer that stops validates', async (c) => {
  const r = await c.chat.completions.create({
    ...base, n: 4, seed: 11,
    response_format: { type: 'json_schema',
                       json_schema: { name: 'person', schema: person, strict: true } } });
  const stopped = r.choices.filter((x) => x.finish_reason === 'stop');
  assert.ok(stopped.length > 0, JSON.stringify(r.choices.map((x) => x.finish_reason)));
  for (const x of stopped) checkPerson(JSON.parse(x.message.content));
});

test('response_format json_object gives an object', async (c) => {
  const r = await c.chat.completions.create({ ...base, seed: 12, max_tokens: 200,
                                              response_format: { type: 'json_object' } });
  const x = r.choices[0];
  if (x.finish_reason === 'stop') {
    const doc = JSON.parse(x.message.content);
    assert.equal(typeof doc, 'object');
    assert.ok(doc !== null && !Array.isArray(doc));
  }
});

test('strict tools with tool_choice "required" always parse', async (c) => {
  const tools = [{ type: 'function',
                   function: { name: 'add_user', strict: true, parameters: person } }];
  const r = await c.chat.completions.create({ ...base, n: 3, seed: 13, tools,
                                              tool_choice: 'required' });
  const called = r.choices.filter((x) => x.finish_reason === 'tool_calls');
  assert.ok(called.length > 0, JSON.stringify(r.choices.map((x) => x.finish_reason)));
  for (const x of called) {
    assert.equal(x.message.tool_calls[0].function.name, 'add_user');
    checkPerson(JSON.parse(x.message.tool_calls[0].function.arguments), false);
  }
});

test('a keyword outside the subset is a 400 naming it and its pointer', async (c) => {
  const bad = { type: 'object', properties: { a: { type: 'object', minProperties: 1 } } };
  await assert.rejects(
    c.chat.completions.create({
      ...base, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: bad } } }),
    (e) => e.status === 400 && /minProperties/.test(e.message) &&
           /\/properties\/a/.test(e.message));
});

test('Responses text.format json_schema: a completed answer validates, the format echoed',
     async (c) => {
  const format = { type: 'json_schema', name: 'person', schema: person, strict: true };
  const completed = [];
  for (let i = 0; i < 6 && completed.length === 0; ++i) {
    const r = await c.responses.create({ model: base.model, input: 'Make a user record.',
                                         temperature: 1, max_output_tokens: 120,
                                         text: { format } });
    assert.deepEqual(r.text.format, format);
    if (r.status === 'completed') completed.push(r);
  }
  assert.ok(completed.length > 0, 'no answer completed in 6 tries of 120 tokens');
  checkPerson(JSON.parse(completed[0].output_text));
  await assert.rejects(
    c.responses.create({ model: base.model, input: 'x',
                         text: { format: { ...format, schema: { type: 'object', minProperties: 1 } } } }),
    (e) => e.status === 400 && /minProperties/.test(e.message));
});

test('Responses text.format json_object gives an object when it completes', async (c) => {
  const r = await c.responses.create({ model: base.model, input: 'Make a user record.',
                                       temperature: 1, max_output_tokens: 200,
                                       text: { format: { type: 'json_object' } } });
  if (r.status === 'completed') {
    const doc = JSON.parse(r.output_text);
    assert.equal(typeof doc, 'object');
    assert.ok(doc !== null && !Array.isArray(doc));
  } else {
    assert.equal(r.output_text.trimStart()[0], '{');
  }
});

const server = await startServer(sparrowd, model, { args: ['--chat-template', 'chatml'] });
const client = new OpenAI({ baseURL: `http://127.0.0.1:${server.port}/v1`, apiKey: 'none',
                            maxRetries: 0 });
await runChecks(tests, [client], server);
