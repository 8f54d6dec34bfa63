// `wgc serve --models-dir` through the official openai client: two models served at once (the
// built-in model under its own name and, as a second file in the folder, under another), listed
// by /v1/models, each request's `model` picking one; under a --max-gpu-memory that holds one of
// them, asking for the other unloads the idle one (least recently used) and loads it, a request
// for a busy model's rival waits until it is idle, and going back reloads the first; an unknown
// model is a 404 naming it. `--model NAME=PATH` (repeated) serves models under the names given,
// the first as the default one, beside --models-dir's; a bad one stops the server naming it.
// Usage: node models.test.mjs --wgc build/wgc --deps .deps
import test, { after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadOpenAI, options, skip, startServer } from './lib.mjs';

const opt = options();
const OpenAI = loadOpenAI(opt.deps);
const here = path.dirname(fileURLToPath(import.meta.url));
const builtin = path.resolve(here, '..', '..', 'models', 'wgc-tiny-dict-q8_0.gguf');
if (!fs.existsSync(builtin)) skip(`the built-in model is not at ${builtin}`);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wgc-models-'));
fs.symlinkSync(builtin, path.join(dir, 'second.gguf'));
const common = ['--model', builtin, '--models-dir', dir, '--parallel', '2', '--ctx', '256'];
const A = 'wgc-tiny-dict-q8_0', B = 'second';
after(() => fs.rmSync(dir, { recursive: true, force: true }));

async function serve(extra = []) {
  const server = await startServer(opt.wgc, [...common, ...extra]);
  const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'none', maxRetries: 0, timeout: 120_000 });
  return { server, client };
}
const ask = (client, model, max_tokens = 8) =>
  client.completions.create({ model, prompt: 'The moon', max_tokens, temperature: 0 });
async function loaded(client) {
  const list = await client.models.list();
  return Object.fromEntries(list.data.map((m) => [m.id, m.meta.loaded]));
}

test('two models listed, each loaded on first use', async () => {
  const { server, client } = await serve();
  try {
    assert.deepEqual(await loaded(client), { [A]: false, [B]: false });
    const a = await ask(client, A);
    const b = await ask(client, B);
    assert.equal(a.model, A);
    assert.equal(b.model, B);
    assert.equal(a.choices[0].text, b.choices[0].text);  // the same weights under two names
    assert.deepEqual(await loaded(client), { [A]: true, [B]: true });  // no budget: both stay
    await assert.rejects(ask(client, 'nope'), (e) => e.status === 404 && e.code === 'model_not_found' &&
      /'nope'/.test(e.message) && /'second'/.test(e.message));
    const one = await client.models.retrieve(B);
    assert.equal(one.id, B);
    assert.ok(one.meta.bytes > 0);
  } finally {
    assert.deepEqual(await server.stop(), { code: 0, signal: null }, server.log());
  }
});

test('a budget for one: the idle model is unloaded, a busy one waited for, and reloaded', async () => {
  // The bytes of one model (weights + KV pool), from a server without a budget.
  let bytes;
  {
    const { server, client } = await serve();
    await ask(client, A, 1);
    bytes = (await client.models.retrieve(A)).meta.bytes;
    await server.stop();
  }
  const budget = Math.floor(bytes * 1.5);  // one fits, two do not
  const { server, client } = await serve(['--max-gpu-memory', String(budget)]);
  try {
    const a = await ask(client, A);
    assert.deepEqual(await loaded(client), { [A]: true, [B]: false });
    const b = await ask(client, B);
    assert.deepEqual(await loaded(client), { [A]: false, [B]: true });
    assert.match(server.log(), /unloaded model wgc-tiny-dict-q8_0 \(least recently used\) to load second/);
    assert.equal(b.choices[0].text, a.choices[0].text);
    // A long request on B while A is asked for: A waits for B to be idle, then replaces it.
    const [long, again] = await Promise.all([ask(client, B, 40), ask(client, A)]);
    assert.equal(long.model, B);
    assert.equal(again.choices[0].text, a.choices[0].text);
    assert.deepEqual(await loaded(client), { [A]: true, [B]: false });
    assert.equal((server.log().match(/: loaded model wgc-tiny-dict-q8_0 /g) || []).length, 2, server.log());
  } finally {
    assert.deepEqual(await server.stop(), { code: 0, signal: null }, server.log());
  }
});

test('--model NAME=PATH, repeated: served under those names, beside --models-dir', async () => {
  const server = await startServer(opt.wgc, ['--model', `first=${builtin}`, '--model', `other=${builtin}`,
    '--models-dir', dir, '--parallel', '2', '--ctx', '256']);
  const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'none', maxRetries: 0, timeout: 120_000 });
  try {
    assert.deepEqual(await loaded(client), { first: false, other: false, [B]: false });
    const a = await ask(client, 'first');
    const o = await ask(client, 'other');
    assert.equal(a.model, 'first');
    assert.equal(o.model, 'other');
    assert.equal(o.choices[0].text, a.choices[0].text);
    assert.deepEqual(await loaded(client), { first: true, other: true, [B]: false });
    await assert.rejects(ask(client, A), (e) => e.status === 404 && /'first'/.test(e.message) &&
      /'other'/.test(e.message));
  } finally {
    assert.deepEqual(await server.stop(), { code: 0, signal: null }, server.log());
  }
});

test('--model NAME=PATH errors name the model', async () => {
  const missing = path.join(dir, 'absent.gguf');
  await assert.rejects(startServer(opt.wgc, ['--model', `first=${builtin}`, '--model', `ghost=${missing}`]),
    (e) => /model 'ghost'/.test(e.message) && e.message.includes(missing));
  await assert.rejects(startServer(opt.wgc, ['--model', `twin=${builtin}`, '--model', `twin=${builtin}`]),
    (e) => /two models named 'twin'/.test(e.message));
  await assert.rejects(startServer(opt.wgc, ['--model', `second=${builtin}`, '--models-dir', dir]),
    (e) => /the name of the model 'second'/.test(e.message));
});
