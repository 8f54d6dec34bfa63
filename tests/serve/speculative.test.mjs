// `wgc serve --draft-model` (speculative decoding in the scheduler) through the official openai
// client, on the built-in model as its own draft: concurrent greedy completions and chats of
// different lengths answer what a server without the draft answers (text, finish reason, usage,
// logprobs), streamed or not; a penalised request beside them decodes plainly (the same text); a
// seeded sampled request (speculative sampling) gives the same text again; /metrics counts the
// drafted and accepted tokens.
// Usage: node speculative.test.mjs --wgc build/wgc --deps .deps
import test from 'node:test';
import assert from 'node:assert/strict';
import { loadOpenAI, metrics, options, readEvents, startServer } from './lib.mjs';

const opt = options();
const OpenAI = loadOpenAI(opt.deps);
const plain = await startServer(opt.wgc, ['--parallel', '4']);
const spec = await startServer(opt.wgc, ['--parallel', '4', '--draft-model', 'wgc-tiny-dict', '--draft-tokens', '3']);
const client = (s) => new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'none', maxRetries: 0, timeout: 120_000 });
const [a, b] = [client(plain), client(spec)];

test.after(async () => {
  for (const s of [plain, spec]) assert.deepEqual(await s.stop(), { code: 0, signal: null }, s.log());
});

const requests = [
  { prompt: 'Computer science is', max_tokens: 40, temperature: 0 },
  { prompt: 'The moon', max_tokens: 13, temperature: 0, logprobs: 2 },
  { prompt: 'Love is', max_tokens: 6, temperature: 0, stop: ['.'] },
  { prompt: 'The sun', max_tokens: 9, temperature: 0 },
  { prompt: 'A cat is', max_tokens: 8, temperature: 0, repeat_penalty: 1.3 },
];

// The parts of a completion that must not depend on the draft.
const same = (r) => ({ choices: r.choices.map(({ text, finish_reason, logprobs }) => ({ text, finish_reason, logprobs })),
  usage: r.usage });

test('completions with the draft equal those without, concurrently', async () => {
  const model = 'wgc-tiny-dict-q8_0';
  const want = await Promise.all(requests.map((r) => a.completions.create({ model, ...r })));
  const got = await Promise.all(requests.map((r) => b.completions.create({ model, ...r })));
  for (let i = 0; i < requests.length; ++i) assert.deepEqual(same(got[i]), same(want[i]), requests[i].prompt);
  assert.ok(want.some((r) => r.choices[0].finish_reason === 'stop'), 'a request ends by a stop');
});

test('a seeded sampled request gives its text again', async () => {
  const body = { model: 'x', prompt: 'A cat is', max_tokens: 12, temperature: 0.8, seed: 5 };
  const [x, y] = await Promise.all([b.completions.create(body), b.completions.create(body)]);
  assert.equal(x.choices[0].text, y.choices[0].text);
  assert.equal((await b.completions.create(body)).choices[0].text, x.choices[0].text);
});

test('streamed chat with the draft equals the chat without', async () => {
  const body = { model: 'x', messages: [{ role: 'user', content: 'Define moon' }], max_tokens: 24, temperature: 0 };
  const want = await a.chat.completions.create(body);
  const res = await fetch(`${spec.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ ...body, stream: true }),
  });
  const { events, done } = await readEvents(res);
  assert.ok(done);
  const text = events.map((e) => e.choices[0]?.delta?.content ?? '').join('');
  assert.equal(text, want.choices[0].message.content);
  assert.equal(events.at(-1).choices[0].finish_reason, want.choices[0].finish_reason);
});

test('/metrics counts drafted and accepted tokens', async () => {
  const m = await metrics(spec.url);
  assert.ok(m.wgc_draft_tokens_total > 0, JSON.stringify(m));
  assert.ok(m.wgc_draft_tokens_accepted_total > 0 && m.wgc_draft_tokens_accepted_total <= m.wgc_draft_tokens_total);
  assert.ok(m.wgc_draft_verify_passes_total > 0);
  assert.equal((await metrics(plain.url)).wgc_draft_tokens_total, 0);
});
