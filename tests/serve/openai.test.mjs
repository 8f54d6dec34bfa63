// `wgc serve` through the official openai client (and plain fetch for what the client cannot send),
// on the built-in model: completions and chat agree with `wgc generate` (greedy and seeded),
// streaming equals not streaming (text, logprobs, usage), concurrent requests equal solo runs,
// errors come in OpenAI's shape with the right status, an aborted stream frees its sequence at
// once, a full queue answers 503 with Retry-After, SIGTERM lets a running stream finish and exits
// 0, and /health, /metrics, /v1/models, /tokenize, /detokenize answer.
// Usage: node openai.test.mjs --wgc build/wgc --deps .deps
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { loadOpenAI, metrics, options, readEvents, startServer, until } from './lib.mjs';

const opt = options();
const OpenAI = loadOpenAI(opt.deps);
const KEY = 'test-key-123';
const server = await startServer(opt.wgc, ['--api-key', KEY, '--parallel', '4']);
const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: KEY, maxRetries: 0, timeout: 120_000 });
const auth = { Authorization: `Bearer ${KEY}` };
const post = (route, body, headers = auth) =>
  fetch(`${server.url}${route}`, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body });
let model = '';

test.after(async () => {
  const exit = await server.stop();
  assert.deepEqual(exit, { code: 0, signal: null }, server.log());
});

// `wgc generate` on the same model: the reference for the server's text. (Not execFileSync: a
// blocked event loop keeps the client from retiring keep-alive connections the server closed.)
// wgc generate at f32 activations (--no-q8), as the server's batched kernels read them (generate's
// default quantizes them to 8 bits for quantized weights).
async function generate(args) {
  const { stdout } = await promisify(execFile)(opt.wgc, ['generate', '--json', '--no-q8', ...args], { encoding: 'utf8' });
  return JSON.parse(stdout);
}

test('models and health', async () => {
  const list = await client.models.list();
  assert.equal(list.data.length, 1);
  model = list.data[0].id;
  assert.equal(model, 'wgc-tiny-dict-q8_0');
  assert.equal((await client.models.retrieve(model)).id, model);
  const health = await fetch(`${server.url}/health`);  // no key needed
  assert.equal(health.status, 200);
  assert.deepEqual(await health.json(), { status: 'ok' });
});

test('completions agree with wgc generate, greedy and seeded', async () => {
  for (const [prompt, sampling, flags] of [
    ['The moon', { temperature: 0 }, ['--temp', '0']],
    ['A cat is', { temperature: 0.8, top_p: 0.95, seed: 7 }, ['--temp', '0.8', '--top-p', '0.95', '--seed', '7']],
  ]) {
    const want = await generate(['--prompt', prompt, '-n', '12', ...flags]);
    const got = await client.completions.create({ model, prompt, max_tokens: 12, ...sampling });
    assert.equal(got.object, 'text_completion');
    assert.equal(got.choices[0].text, want.text, prompt);
    assert.equal(got.choices[0].finish_reason, want.stop === 'length' ? 'length' : 'stop');
    assert.equal(got.usage.prompt_tokens, want.prompt_ids.length);
    assert.equal(got.usage.completion_tokens, want.ids.length + (want.stop === 'eos' ? 1 : 0));
    assert.equal(got.usage.total_tokens, got.usage.prompt_tokens + got.usage.completion_tokens);
  }
});

test('chat renders the plain-text conversation and agrees with wgc generate', async () => {
  const messages = [{ role: 'system', content: 'Define words.' }, { role: 'user', content: 'moon' }];
  const got = await client.chat.completions.create({ model, messages, max_tokens: 10, temperature: 0 });
  assert.equal(got.object, 'chat.completion');
  assert.equal(got.choices[0].message.role, 'assistant');
  // The built-in model has no chat template: "role: content" paragraphs, then "assistant:".
  const tok = await (await post('/tokenize', JSON.stringify({
    content: '<|begin_of_text|>system: Define words.\n\nuser: moon\n\nassistant:',
  }))).json();
  const want = await generate(['--tokens', tok.tokens.join(','), '-n', '10', '--temp', '0', '--stop', '\nuser:']);
  assert.equal(got.choices[0].message.content, want.text);
  assert.equal(got.usage.prompt_tokens, tok.tokens.length);
});

test('streaming equals not streaming: text, logprobs, finish_reason, usage', async () => {
  const cases = [
    ['chat', { messages: [{ role: 'user', content: 'Define sun' }], logprobs: true, top_logprobs: 3 }],
    ['completions', { prompt: 'The sea', logprobs: 2 }],
    ['completions', { prompt: 'Stars', stop: ['.', '\n'] }],
  ];
  for (const [api, extra] of cases) {
    const body = { model, max_tokens: 16, temperature: 0.9, seed: 11, ...extra };
    const endpoint = api === 'chat' ? client.chat.completions : client.completions;
    const whole = await endpoint.create(body);
    const stream = await endpoint.create({ ...body, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let finish = null;
    let usage = null;
    const logprobs = [];
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices) {
        text += api === 'chat' ? c.delta.content ?? '' : c.text;
        if (c.finish_reason) finish = c.finish_reason;
        if (c.logprobs) logprobs.push(...(api === 'chat' ? c.logprobs.content : c.logprobs.tokens));
      }
    }
    const c = whole.choices[0];
    assert.equal(text, api === 'chat' ? c.message.content : c.text, JSON.stringify(body));
    assert.ok(text.length > 0);
    assert.equal(finish, c.finish_reason);
    // The same counts (the second run may find its prompt in the KV cache: cached_tokens differ).
    for (const k of ['prompt_tokens', 'completion_tokens', 'total_tokens']) assert.equal(usage[k], whole.usage[k]);
    if (extra.logprobs) {
      const wholeLp = api === 'chat' ? c.logprobs.content : c.logprobs.tokens;
      assert.equal(wholeLp.length, whole.usage.completion_tokens - (c.finish_reason === 'stop' ? 1 : 0));
      assert.deepEqual(logprobs, wholeLp);
      if (api === 'chat')
        for (const e of wholeLp) {
          assert.equal(e.top_logprobs.length, 3);
          assert.ok(e.logprob <= 0 && e.top_logprobs[0].logprob >= e.logprob - 1e-6);
          assert.ok(e.top_logprobs[0].logprob >= e.top_logprobs[1].logprob);
          assert.ok(e.top_logprobs[1].logprob >= e.top_logprobs[2].logprob);
        }
    }
  }
});

test('concurrent requests give what each gives alone', async () => {
  const requests = [
    { prompt: 'The moon', temperature: 0 },
    { prompt: 'A dog', temperature: 0.8, seed: 1 },
    { prompt: 'Rain is', temperature: 0.8, seed: 2 },
    { prompt: 'Love', temperature: 0 },
    { prompt: 'Bread', temperature: 1.0, seed: 3, top_p: 0.9 },
    { prompt: 'The king', temperature: 0.7, seed: 4 },
  ].map((r) => ({ model, max_tokens: 12, ...r }));
  const solo = [];
  for (const r of requests) solo.push((await client.completions.create(r)).choices[0].text);
  const together = await Promise.all(requests.map(async (r, i) => {
    if (i % 2 === 0) return (await client.completions.create(r)).choices[0].text;
    let text = '';
    for await (const chunk of await client.completions.create({ ...r, stream: true })) text += chunk.choices[0]?.text ?? '';
    return text;
  }));
  assert.deepEqual(together, solo);
});

test('errors: status and OpenAI error body', async () => {
  const expectError = async (promise, status, code) => {
    await assert.rejects(promise, (e) => {
      assert.equal(e.status, status, String(e));
      if (code !== undefined) assert.equal(e.code, code, String(e));
      return true;
    });
  };
  await expectError(client.completions.create({ model, prompt: 'x', temperature: 5 }), 400);
  await expectError(client.completions.create({ model, prompt: 'x', n: 2 }), 400);
  await expectError(client.chat.completions.create({ model, messages: [] }), 400);
  const long = 'word '.repeat(2000);
  await expectError(client.completions.create({ model, prompt: long }), 400, 'context_length_exceeded');
  const wrong = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'wrong', maxRetries: 0 });
  await expectError(wrong.models.list(), 401, 'invalid_api_key');
  await expectError(client.models.retrieve('no-such-model'), 404, 'model_not_found');

  const shape = async (r, status) => {
    assert.equal(r.status, status);
    const body = await r.json();
    assert.equal(typeof body.error.message, 'string');
    assert.equal(typeof body.error.type, 'string');
    assert.ok('code' in body.error && 'param' in body.error);
    return body.error;
  };
  assert.match((await shape(await post('/v1/chat/completions', '{"messages": ['), 400)).message, /malformed JSON/);
  assert.equal((await shape(await post('/v1/completions', '{"prompt": "x", "max_tokens": "5"}'), 400)).param, 'max_tokens');
  await shape(await post('/v1/completions', '{"prompt": "x"}', {}), 401);
  await shape(await fetch(`${server.url}/v1/nothing`, { headers: auth }), 404);
  await shape(await post('/v1/nothing', '{}'), 404);
  await shape(await post('/v1/completions', JSON.stringify({ prompt: 'x'.repeat(9 << 20) })), 413);
});

test('an aborted stream frees its sequence at once', async () => {
  const before = await metrics(server.url, auth);
  const stream = await client.completions.create({
    model, prompt: 'The', max_tokens: 400, ignore_eos: true, temperature: 0.8, seed: 5, stream: true,
  });
  let chunks = 0;
  for await (const chunk of stream) {
    if (chunk.choices[0]?.text) ++chunks;
    if (chunks === 3) break;  // leaving the loop aborts the request
  }
  await until(async () => (await metrics(server.url, auth)).wgc_running_sequences === 0, 10_000, 'the sequence to end');
  const after = await metrics(server.url, auth);
  await new Promise((r) => setTimeout(r, 500));
  const later = await metrics(server.url, auth);
  const generated = after.wgc_generation_tokens_total - before.wgc_generation_tokens_total;
  assert.ok(generated < 100, `the aborted request went on: ${generated} tokens`);
  assert.equal(later.wgc_generation_tokens_total, after.wgc_generation_tokens_total, 'tokens still generated');
});

test('metrics count requests, tokens and time to first token', async () => {
  // A request is counted once its response is written, which can be just after the client has
  // read it: wait until the earlier tests' requests are all counted (the checks below then say
  // which count is short).
  let m;
  const counted = async () => {
    m = await metrics(server.url, auth);
    return m['wgc_requests_total{route="/v1/completions",status="200"}'] >= 10 &&
      m['wgc_requests_total{route="/v1/chat/completions",status="200"}'] >= 2 &&
      m.wgc_time_to_first_token_seconds_count >= 12 && m.wgc_queue_length === 0;
  };
  await until(counted, 10_000, 'the earlier requests to be counted').catch(() => {});
  assert.ok(m['wgc_requests_total{route="/v1/completions",status="200"}'] >= 10);
  assert.ok(m['wgc_requests_total{route="/v1/completions",status="400"}'] >= 3);
  assert.ok(m['wgc_requests_total{route="/v1/chat/completions",status="200"}'] >= 2);
  assert.ok(m.wgc_time_to_first_token_seconds_count >= 12);
  assert.equal(m['wgc_time_to_first_token_seconds_bucket{le="+Inf"}'], m.wgc_time_to_first_token_seconds_count);
  assert.ok(m.wgc_prompt_tokens_total > 0 && m.wgc_generation_tokens_total > 0);
  assert.equal(m.wgc_queue_length, 0);
  assert.ok(m.wgc_kv_blocks_free > 0);
  assert.ok(m.process_resident_memory_bytes > 0);
  // GPU buffers: none where auto runs the model on the CPU engine (a CPU-only machine), some on a GPU.
  assert.ok(m.wgc_gpu_buffer_bytes >= 0);
});

test('tokenize, detokenize and the web root', async () => {
  const tok = await (await post('/tokenize', JSON.stringify({ content: 'Hello world', with_pieces: true }))).json();
  assert.equal(tok.tokens.map((t) => t.piece).join(''), 'Hello world');
  const back = await (await post('/detokenize', JSON.stringify({ tokens: tok.tokens.map((t) => t.id) }))).json();
  assert.equal(back.content, 'Hello world');
  const root = await fetch(`${server.url}/`);  // the web page, or a pointer to the API
  assert.equal(root.status, 200);
});

test('wgc bench-serve measures the server: table, JSON, charts', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wgc-bench-serve-'));
  try {
    const { stdout } = await promisify(execFile)(opt.wgc, ['bench-serve', '--url', server.url, '--api-key', KEY,
      '--concurrency', '1,3', '--prompt-len', '5', '--gen-len', '4', '--requests', '3',
      '--json', path.join(dir, 'b.json'), '--png', path.join(dir, 'b.png')], { encoding: 'utf8' });
    assert.match(stdout, /\| concurrency \| requests \| failed \| output tok\/s \|/);
    const doc = JSON.parse(fs.readFileSync(path.join(dir, 'b.json'), 'utf8'));
    assert.equal(doc.model, model);
    assert.deepEqual(doc.levels.map((l) => l.concurrency), [1, 3]);
    for (const l of doc.levels) {
      assert.equal(l.failed, 0);
      assert.equal(l.output_tokens, 3 * 4);  // ignore_eos: exactly gen-len each
      assert.ok(l.output_tokens_per_s > 0 && l.ttft_p50_ms > 0 && l.ttft_p99_ms >= l.ttft_p50_ms);
      assert.ok(l.itl_p50_ms > 0 && l.itl_p99_ms >= l.itl_p50_ms);
    }
    for (const f of ['b.png', 'b_latency.png'])
      assert.equal(fs.readFileSync(path.join(dir, f)).subarray(1, 4).toString(), 'PNG');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a full queue answers 503 with Retry-After; SIGTERM lets a running stream finish, exits 0', async () => {
  const small = await startServer(opt.wgc, ['--parallel', '1', '--max-queue', '1']);
  try {
    const body = JSON.stringify({ prompt: 'The', max_tokens: 40, ignore_eos: true, stream: true, temperature: 0 });
    const send = () => fetch(`${small.url}/v1/completions`, { method: 'POST', body });
    const first = await send();  // runs (its headers come once it is submitted)
    const rest = await Promise.all([send(), send(), send()]);  // one waits, the others are refused
    const refused = rest.filter((r) => r.status === 503);
    assert.ok(refused.length >= 2, `statuses: ${rest.map((r) => r.status)}`);
    for (const r of refused) {
      assert.equal(r.headers.get('retry-after'), '1');
      assert.equal((await r.json()).error.code, 'queue_full');
    }
    for (const r of rest.filter((x) => x.status === 200)) await r.body.cancel();

    // SIGTERM while `first` streams: it still ends with a finish_reason and [DONE]; exit 0.
    const stopped = small.stop();
    const { events, done } = await readEvents(first);
    assert.ok(done, 'the stream was cut');
    assert.equal(events.at(-1).choices[0].finish_reason, 'length');
    assert.equal(events.map((e) => e.choices[0].text).join('').length > 0, true);
    assert.deepEqual(await stopped, { code: 0, signal: null }, small.log());
    assert.match(small.log(), /SIGTERM: finishing running requests/);
  } finally {
    await small.stop('SIGKILL');
  }
});
