// Starts sparrowd on a free loopback port and checks it with the official OpenAI Node client:
// chat and text completions, streamed and not, stop strings, n > 1, and an error.
// Usage: node openai_client_test.mjs --sparrowd <path> --model <gguf> [--golden <json>]
// Exit code 0: all passed; 1: a check failed; 77: skipped (the openai package is missing).
import { readFileSync } from 'node:fs';
import assert from 'node:assert/strict';
import { arg, importOrSkip, runChecks, startServer } from './harness.mjs';

const { default: OpenAI } = await importOrSkip('openai');

const sparrowd = arg('sparrowd', process.env.SPARROWD);
const model = arg('model', '../shared/models/stories260K.gguf');
const goldenPath = arg('golden');
assert.ok(sparrowd, 'pass --sparrowd <path of the sparrowd binary>');

const tests = [];
const test = (name, fn) => tests.push({ name, fn });

test('models lists the served model', async (c) => {
  const list = await c.models.list();
  assert.equal(list.data[0].id, 'stories260K');
});

test('completion, greedy, matches llama.cpp', async (c, golden) => {
  const r = await c.completions.create({ model: 'stories260K', prompt: 'Once upon a time',
                                         max_tokens: 48, temperature: 0 });
  if (golden) assert.equal(r.choices[0].text, golden);
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.usage.completion_tokens, 48);
});

test('completion, streamed, assembles the same text', async (c, golden) => {
  const stream = await c.completions.create({ model: 'stories260K', prompt: 'Once upon a time',
                                              max_tokens: 48, temperature: 0, stream: true });
  let text = '';
  let finish = null;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.text ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  if (golden) assert.equal(text, golden);
  assert.equal(finish, 'length');
});

test('stop string ends the completion without its text', async (c) => {
  const r = await c.completions.create({ model: 'stories260K', prompt: 'Once upon a time',
                                         max_tokens: 48, temperature: 0, stop: ['Lily'] });
  assert.equal(r.choices[0].text, ', there was a little girl named ');
  assert.equal(r.choices[0].finish_reason, 'stop');
});

test('n = 2 gives two indexed choices', async (c) => {
  const r = await c.completions.create({ model: 'stories260K', prompt: 'Once upon a time',
                                         max_tokens: 8, temperature: 0.8, seed: 1, n: 2 });
  assert.deepEqual(r.choices.map((x) => x.index).sort(), [0, 1]);
});

test('chat completion, plain and streamed', async (c) => {
  const messages = [{ role: 'user', content: 'Tell me a story.' }];
  const r = await c.chat.completions.create({ model: 'stories260K', messages, max_tokens: 16,
                                              temperature: 0 });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices[0].message.role, 'assistant');
  const stream = await c.chat.completions.create({ model: 'stories260K', messages,
                                                   max_tokens: 16, temperature: 0, stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(text, r.choices[0].message.content);
});

test('bad temperature is a 400 naming the field', async (c) => {
  await assert.rejects(
    c.completions.create({ model: 'stories260K', prompt: 'x', temperature: 5 }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400 &&
           /'temperature'/.test(e.message) && e.param === 'temperature');
});

test('unknown model is a 404', async (c) => {
  await assert.rejects(c.completions.create({ model: 'gpt-nope', prompt: 'x' }),
                       (e) => e instanceof OpenAI.NotFoundError && e.status === 404);
});

const golden = goldenPath
  ? JSON.parse(readFileSync(goldenPath, 'utf8')).prompts[0].generated_text : undefined;
const server = await startServer(sparrowd, model);
const client = new OpenAI({ baseURL: `http://127.0.0.1:${server.port}/v1`, apiKey: 'unused',
                            maxRetries: 0 });
await runChecks(tests, [client, golden], server);
