// Starts sparrowd on a free loopback port, serving a models directory of two stories260K files,
// and checks Ollama's API with the official `ollama` Node client: chat (whole and streamed),
// generate (templated and raw), format with a JSON schema at temperature 1 (the answer parses
// and keeps to it), tools in Ollama's shape (arguments as objects), think, embed and the legacy
// embeddings, tags, show, ps, version, keep_alive 0 unloading and the next request loading the
// model again, another model loaded on demand, and Ollama's errors.
// Usage: node ollama_client_test.mjs --sparrowd <path> --model <stories260K.gguf>
// Exit code 0: all passed; 1: a check failed; 77: skipped (the npm packages are missing).
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import { arg, importOrSkip, runChecks, startServer } from './harness.mjs';

const { Ollama } = await importOrSkip('ollama');
const sparrowd = arg('sparrowd', process.env.SPARROWD);
const model = arg('model');
assert.ok(sparrowd && model, 'pass --sparrowd and --model');

const name = 'stories260K';
const other = 'stories260K-q8_0';
const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
const tests = [];
const test = (n, fn) => tests.push({ name: n, fn });

test('version and the root probe', async ({ o, base }) => {
  const v = await o.version();
  assert.match(v.version, /^\d+\.\d+\.\d+$/);
  const root = await fetch(base + '/');
  assert.equal(await root.text(), 'Ollama is running');
  assert.equal((await fetch(base + '/', { method: 'HEAD' })).status, 200);
});

test('chat, whole: the message and the counts and durations', async ({ o }) => {
  const r = await o.chat({ model: name, messages: [{ role: 'user', content: 'Tell me a story.' }],
                           stream: false, options: { num_predict: 8, temperature: 0 } });
  assert.equal(r.model, name);
  assert.equal(r.message.role, 'assistant');
  assert.ok(r.message.content.length > 0);
  assert.equal(r.done, true);
  assert.equal(r.done_reason, 'length');
  assert.equal(r.eval_count, 8);
  assert.ok(r.prompt_eval_count > 0);
  assert.ok(r.total_duration >= r.eval_duration && r.eval_duration > 0);
  assert.ok(!Number.isNaN(Date.parse(r.created_at)));
});

test('chat, streamed: pieces then a done object, the same text', async ({ o }) => {
  const req = { model: name, messages: [{ role: 'user', content: 'Tell me a story.' }],
                options: { num_predict: 12, temperature: 0 } };
  const whole = await o.chat({ ...req, stream: false });
  let text = '';
  let pieces = 0;
  let last = null;
  for await (const part of await o.chat({ ...req, stream: true })) {
    if (!part.done) pieces++;
    text += part.message.content;
    last = part;
  }
  assert.ok(pieces > 1);
  assert.equal(text, whole.message.content);
  assert.equal(last.done, true);
  assert.equal(last.eval_count, 12);
});

test('generate, templated and raw, streamed by default', async ({ o, base }) => {
  const raw = await o.generate({ model: name, prompt: 'Once upon a time', raw: true, stream: false,
                                 options: { num_predict: 16, temperature: 0, stop: ['Lily'] } });
  assert.equal(raw.response, ', there was a little girl named ');
  assert.equal(raw.done_reason, 'stop');
  let text = '';
  for await (const part of await o.generate({ model: name, prompt: 'Once upon a time', raw: true,
                                              stream: true,
                                              options: { num_predict: 16, temperature: 0,
                                                         stop: ['Lily'] } })) {
    text += part.response;
  }
  assert.equal(text, raw.response);
  // Without "stream", Ollama's API streams: NDJSON, one object a line, the last one done.
  const res = await fetch(base + '/api/generate', { method: 'POST', body: JSON.stringify(
    { model: name, prompt: 'Once upon a time', raw: true, options: { num_predict: 4 } }) });
  assert.equal(res.headers.get('content-type'), 'application/x-ndjson');
  const lines = (await res.text()).trim().split('\n').map((l) => JSON.parse(l));
  assert.ok(lines.length > 1);
  assert.equal(lines.at(-1).done, true);
  assert.equal(lines.at(-1).eval_count, 4);
  const templated = await o.generate({ model: name, prompt: 'Hello', system: 'Be kind.',
                                       stream: false, options: { num_predict: 4, seed: 3 } });
  assert.equal(templated.eval_count, 4);
});

test('format: a JSON schema at temperature 1 gives a document that keeps to it', async ({ o }) => {
  const schema = { type: 'object', properties: { name: { type: 'string', maxLength: 12 },
                                                 age: { type: 'integer' } },
                   required: ['name', 'age'] };
  for (const seed of [1, 2, 3]) {
    const r = await o.chat({ model: name, messages: [{ role: 'user', content: 'A person.' }],
                             format: schema, stream: false,
                             options: { temperature: 1, seed } });
    assert.equal(r.done_reason, 'stop');  // the document was whole
    const doc = JSON.parse(r.message.content);
    assert.deepEqual(Object.keys(doc), ['name', 'age']);
    assert.equal(typeof doc.name, 'string');
    assert.ok(doc.name.length <= 12);
    assert.ok(Number.isInteger(doc.age));
  }
  // "json" is any object: a story model's never ends, so only its start is looked at.
  const any = await o.generate({ model: name, prompt: 'JSON:', format: 'json', stream: false,
                                 options: { temperature: 1, seed: 5, num_predict: 8 } });
  assert.match(any.response, /^\s*\{\s*"/);
});

test('tools: calls come back in Ollama\'s shape, arguments as objects', async ({ o }) => {
  const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Weather',
    parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
  const call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
  const r = await o.chat({ model: name, messages: [{ role: 'user', content: 'Weather?' }], tools,
                           stream: false, forced_output: call });
  assert.equal(r.message.tool_calls.length, 1);
  assert.equal(r.message.tool_calls[0].function.name, 'get_weather');
  assert.deepEqual(r.message.tool_calls[0].function.arguments, { city: 'Paris' });
  // Streamed, the call comes whole in one piece's message.
  const streamed = [];
  for await (const part of await o.chat({ model: name, messages: [{ role: 'user', content: 'W?' }],
                                          tools, stream: true, forced_output: call })) {
    streamed.push(...(part.message.tool_calls ?? []));
  }
  assert.deepEqual(streamed.map((c) => c.function.arguments), [{ city: 'Paris' }]);
  // The call and its result go back as Ollama's clients send them.
  const next = await o.chat({ model: name, tools, stream: false, options: { num_predict: 4 },
                              messages: [{ role: 'user', content: 'Weather?' }, r.message,
                                         { role: 'tool', content: 'sunny', tool_name: 'get_weather' }] });
  assert.equal(next.done, true);
});

test('think: the thought goes to message.thinking / thinking, streamed and not', async ({ o }) => {
  const forced_output = '<think>\nThe user greets me.\n</think>\n\nHello!';
  const messages = [{ role: 'user', content: 'Hi' }];
  const r = await o.chat({ model: name, messages, think: true, stream: false, forced_output });
  assert.equal(r.message.thinking, 'The user greets me.');
  assert.equal(r.message.content, 'Hello!');
  let thinking = '';
  let content = '';
  for await (const part of await o.chat({ model: name, messages, think: true, stream: true,
                                          forced_output })) {
    thinking += part.message.thinking ?? '';
    content += part.message.content;
  }
  assert.equal(thinking, 'The user greets me.');
  assert.equal(content, 'Hello!');
  const g = await o.generate({ model: name, prompt: 'Hi', think: true, stream: false, forced_output });
  assert.equal(g.thinking, 'The user greets me.');
  assert.equal(g.response, 'Hello!');
});

test('embed and the legacy embeddings: unit vectors, one per input', async ({ o }) => {
  const r = await o.embed({ model: name, input: ['Once upon a time', 'there was a cat'] });
  assert.equal(r.model, name);
  assert.equal(r.embeddings.length, 2);
  for (const v of r.embeddings) assert.ok(Math.abs(norm(v) - 1) < 1e-5);
  assert.ok(r.prompt_eval_count > 0);
  const one = await o.embeddings({ model: name, prompt: 'Once upon a time' });
  assert.equal(one.embedding.length, r.embeddings[0].length);
  one.embedding.forEach((x, k) => assert.ok(Math.abs(x - r.embeddings[0][k]) < 1e-5));
});

test('tags, show and ps describe the models', async ({ o }) => {
  const tags = await o.list();
  assert.deepEqual(tags.models.map((m) => m.name).sort(), [name, other]);
  const served = tags.models.find((m) => m.name === name);
  assert.equal(served.details.format, 'gguf');
  assert.equal(served.details.family, 'llama');
  assert.match(served.details.parameter_size, /^\d+K$/);
  assert.equal(served.details.quantization_level, 'F32');
  assert.ok(served.size > 0 && served.digest.length > 0);
  assert.ok(!Number.isNaN(Date.parse(served.modified_at)));
  const show = await o.show({ model: `${name}:latest` });
  assert.equal(show.details.family, 'llama');
  assert.equal(show.model_info['general.architecture'], 'llama');
  assert.ok(show.model_info['llama.context_length'] > 0);
  const ps = await o.ps();
  assert.deepEqual(ps.models.map((m) => m.name), [name]);
  assert.ok(!Number.isNaN(Date.parse(ps.models[0].expires_at)));
});

test('keep_alive 0 unloads; the next request loads the model again', async ({ o }) => {
  const unload = await o.generate({ model: name, prompt: '', keep_alive: 0 });
  assert.equal(unload.done_reason, 'unload');
  assert.deepEqual((await o.ps()).models, []);
  const load = await o.chat({ model: name, messages: [], keep_alive: '5m' });
  assert.equal(load.done_reason, 'load');
  assert.deepEqual((await o.ps()).models.map((m) => m.name), [name]);
  // On a generation it unloads the model once the answer is out (so ps is asked until then).
  const r = await o.generate({ model: name, prompt: 'Once', raw: true, keep_alive: 0,
                               stream: false, options: { num_predict: 2 } });
  assert.equal(r.eval_count, 2);
  let loaded = null;
  for (let i = 0; i < 100 && loaded !== 0; i++) {
    loaded = (await o.ps()).models.length;
    if (loaded) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.equal(loaded, 0);
});

test('a model of the directory is loaded on demand', async ({ o }) => {
  const r = await o.generate({ model: other, prompt: 'Once upon a time', raw: true, stream: false,
                               options: { num_predict: 4, temperature: 0 } });
  assert.equal(r.model, other);
  assert.equal(r.eval_count, 4);
  assert.deepEqual((await o.ps()).models.map((m) => m.name), [other]);
  assert.ok(r.load_duration > 0);
});

test('errors: unknown model 404, bad fields 400', async ({ o }) => {
  await assert.rejects(o.chat({ model: 'nope', messages: [{ role: 'user', content: 'x' }] }),
                       (e) => e.status_code === 404 && e.error === 'model \'nope\' not found');
  await assert.rejects(o.show({ model: 'nope' }), (e) => e.status_code === 404);
  await assert.rejects(o.generate({ model: name, prompt: 'x', options: { top_k: 'many' } }),
                       (e) => e.status_code === 400 && /options\.top_k/.test(e.error));
  await assert.rejects(o.generate({ model: name, prompt: 'x', format: 'yaml', stream: false }),
                       (e) => e.status_code === 400 && /format/.test(e.error));
  await assert.rejects(o.embed({ model: name, input: [] }), (e) => e.status_code === 400);
});

const dir = mkdtempSync(path.join(tmpdir(), 'sparrow-ollama-'));
symlinkSync(path.resolve(model), path.join(dir, `${name}.gguf`));
symlinkSync(path.resolve(path.dirname(model), `${other}.gguf`), path.join(dir, `${other}.gguf`));
const server = await startServer(sparrowd, path.join(dir, `${name}.gguf`), {
  args: ['--models-dir', dir, '--allow-forced-output'] });
const base = `http://127.0.0.1:${server.port}`;
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
await runChecks(tests, [{ o: new Ollama({ host: base }), base }], server);
