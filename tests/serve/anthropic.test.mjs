// `wgc serve`'s Anthropic Messages API (POST /v1/messages) over plain fetch (the @anthropic-ai/sdk
// client is not pinned yet): a message's shape and usage, the stream's events in Anthropic's order
// adding up to the same text, a forced tool_use whose input validates against the tool's
// input_schema, the tool_result fed back, and errors in Anthropic's shape.
// Usage: node anthropic.test.mjs --wgc build/wgc --deps .deps
import test from 'node:test';
import assert from 'node:assert/strict';
import { options, startServer } from './lib.mjs';

const opt = options();
const server = await startServer(opt.wgc, ['--parallel', '4', '--ctx', '1024']);
const post = (body) => fetch(`${server.url}/v1/messages`, {
  method: 'POST', headers: { 'Content-Type': 'application/json', 'anthropic-version': '2023-06-01' },
  body: JSON.stringify(body),
});
test.after(async () => assert.deepEqual(await server.stop(), { code: 0, signal: null }, server.log()));

// The events of an Anthropic stream: [{event, data}].
async function events(response) {
  const out = [];
  for (const block of (await response.text()).split('\n\n')) {
    if (!block.trim() || block.startsWith(':')) continue;
    const [ev, data] = block.split('\n');
    assert.match(ev, /^event: /);
    assert.match(data, /^data: /);
    const d = JSON.parse(data.slice(6));
    assert.equal(d.type, ev.slice(7));
    out.push(d);
  }
  return out;
}

const ask = { model: 'any', max_tokens: 10, temperature: 0, system: 'Define words.', messages: [{ role: 'user', content: 'moon' }] };

test('a message, and its stream adds up to it', async () => {
  const r = await post(ask);
  assert.equal(r.status, 200);
  const m = await r.json();
  assert.equal(m.type, 'message');
  assert.equal(m.role, 'assistant');
  assert.match(m.id, /^msg_/);
  assert.equal(m.content[0].type, 'text');
  assert.equal(m.stop_reason, 'max_tokens');
  assert.equal(m.usage.output_tokens, 10);
  const ev = await events(await post({ ...ask, stream: true }));
  assert.deepEqual(ev.map((e) => e.type).filter((t, i, a) => t !== a[i - 1]),
    ['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
  assert.equal(ev[0].message.usage.input_tokens, m.usage.input_tokens);
  const text = ev.filter((e) => e.type === 'content_block_delta').map((e) => e.delta.text).join('');
  assert.equal(text, m.content[0].text);
  assert.equal(ev.at(-2).delta.stop_reason, 'max_tokens');
  assert.equal(ev.at(-2).usage.output_tokens, 10);
});

const weather = {
  name: 'get_weather', description: 'The weather now',
  input_schema: { type: 'object', properties: { city: { type: 'string', maxLength: 10 } }, required: ['city'], additionalProperties: false },
};

test('tool_use forced, its result fed back', async () => {
  for (const stream of [false, true]) {
    const body = {
      model: 'any', max_tokens: 400, temperature: 0.7, seed: 5, tools: [weather],
      tool_choice: { type: 'tool', name: 'get_weather', disable_parallel_tool_use: true },
      messages: [{ role: 'user', content: 'Weather in Oslo?' }], stream,
    };
    let use;
    if (!stream) {
      const m = await (await post(body)).json();
      assert.equal(m.stop_reason, 'tool_use', JSON.stringify(m));
      use = m.content.find((b) => b.type === 'tool_use');
    } else {
      const ev = await events(await post(body));
      const start = ev.find((e) => e.type === 'content_block_start' && e.content_block.type === 'tool_use');
      assert.ok(start, JSON.stringify(ev));
      const json = ev.filter((e) => e.type === 'content_block_delta' && e.index === start.index).map((e) => e.delta.partial_json).join('');
      use = { ...start.content_block, input: JSON.parse(json) };
      assert.equal(ev.at(-2).delta.stop_reason, 'tool_use');
    }
    assert.equal(use.name, 'get_weather');
    assert.match(use.id, /^toolu_/);
    assert.equal(typeof use.input.city, 'string');
    assert.ok(use.input.city.length <= 10);
    assert.deepEqual(Object.keys(use.input), ['city']);
    const final = await (await post({
      model: 'any', max_tokens: 5, temperature: 0, tools: [weather],
      messages: [{ role: 'user', content: 'Weather in Oslo?' }, { role: 'assistant', content: [use] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '4 degrees' }] }],
    })).json();
    assert.equal(final.type, 'message', JSON.stringify(final));
    assert.equal(final.usage.output_tokens, 5);
  }
});

test('errors in Anthropic shape', async () => {
  for (const [body, words] of [[{ messages: [] }, 'max_tokens'], [{ max_tokens: 4, messages: [{ role: 'user', content: [{ type: 'image' }] }] }, 'image'],
    [{ max_tokens: 4, messages: [{ role: 'system', content: 'x' }] }, 'user or assistant']]) {
    const r = await post(body);
    assert.equal(r.status, 400);
    const e = await r.json();
    assert.equal(e.type, 'error');
    assert.equal(e.error.type, 'invalid_request_error');
    assert.ok(e.error.message.includes(words), e.error.message);
  }
});
