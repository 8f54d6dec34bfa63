// `wgc serve`'s Anthropic Messages API (POST /v1/messages) through the official @anthropic-ai/sdk
// client, as a user would call it: messages.create's message (shape, usage), messages.stream's
// text and final message equal to it (greedy and seeded), the raw stream's events in Anthropic's
// order; a forced tool_use whose input validates (ajv) against the tool's input_schema, its
// tool_result fed back and a final text answer; the same tool_use streamed (input_json_delta
// assembled by the client); and errors surfaced as the client's typed errors (400, 404 for an
// unknown model, 401 for a wrong x-api-key).
// Usage: node anthropic.test.mjs --wgc build/wgc --deps .deps
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { builtinModel, loadAjv, loadAnthropic, options, skip, startServer } from './lib.mjs';

const opt = options();
const sdk = loadAnthropic(opt.deps);
const ajv = loadAjv(opt.deps);
if (!fs.existsSync(builtinModel)) skip(`the built-in model is not at ${builtinModel}`);
const KEY = 'test-key-anthropic';
// Two names, so that an unknown one is a 404 (a server of one model answers to any name); only
// the first is ever loaded.
const server = await startServer(opt.wgc, ['--model', `tiny=${builtinModel}`, '--model', `spare=${builtinModel}`,
  '--api-key', KEY, '--parallel', '4', '--ctx', '1024']);
const client = new sdk.Anthropic({ baseURL: server.url, apiKey: KEY, maxRetries: 0, timeout: 120_000 });
test.after(async () => assert.deepEqual(await server.stop(), { code: 0, signal: null }, server.log()));

const model = 'tiny';
const ask = { model, max_tokens: 10, system: 'Define words.', messages: [{ role: 'user', content: 'moon' }] };

test('messages.create, and messages.stream adds up to the same message', async () => {
  for (const sampling of [{ temperature: 0 }, { temperature: 0.9, top_p: 0.95, seed: 3 }]) {
    const body = { ...ask, ...sampling };
    const m = await client.messages.create(body);
    assert.equal(m.type, 'message');
    assert.equal(m.role, 'assistant');
    assert.equal(m.model, model);
    assert.match(m.id, /^msg_/);
    assert.equal(m.content.length, 1);
    assert.equal(m.content[0].type, 'text');
    assert.ok(m.content[0].text.length > 0);
    assert.equal(m.stop_reason, 'max_tokens');
    assert.equal(m.usage.output_tokens, 10);
    assert.ok(m.usage.input_tokens > 5);

    const stream = client.messages.stream(body);
    let deltas = '';
    stream.on('text', (d) => { deltas += d; });
    const final = await stream.finalMessage();
    assert.equal(final.content[0].text, m.content[0].text, JSON.stringify(sampling));
    assert.equal(deltas, m.content[0].text);
    assert.equal(await stream.finalText(), m.content[0].text);
    assert.equal(final.stop_reason, 'max_tokens');
    assert.equal(final.usage.input_tokens, m.usage.input_tokens);
    assert.equal(final.usage.output_tokens, m.usage.output_tokens);
  }
});

test('stream: true gives the raw events in Anthropic order', async () => {
  const types = [];
  let text = '';
  for await (const ev of await client.messages.create({ ...ask, temperature: 0, stream: true })) {
    types.push(ev.type);
    if (ev.type === 'content_block_delta') text += ev.delta.text;
    if (ev.type === 'message_delta') assert.equal(ev.delta.stop_reason, 'max_tokens');
  }
  assert.deepEqual(types.filter((t, i, a) => t !== a[i - 1]),
    ['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
  assert.equal(text, (await client.messages.create({ ...ask, temperature: 0 })).content[0].text);
});

const weather = {
  name: 'get_weather', description: 'The weather now',
  input_schema: {
    type: 'object', additionalProperties: false, required: ['city', 'unit'],
    properties: { city: { type: 'string', maxLength: 10 }, unit: { enum: ['C', 'F'] } },
  },
};
const validInput = ajv.compile(weather.input_schema);
const forced = {
  model, max_tokens: 200, temperature: 0.7, seed: 5, tools: [weather],
  tool_choice: { type: 'tool', name: 'get_weather', disable_parallel_tool_use: true },
  messages: [{ role: 'user', content: 'Weather in Oslo?' }],
};

test('a forced tool_use, its tool_result fed back, a final text answer', async () => {
  const m = await client.messages.create(forced);
  assert.equal(m.stop_reason, 'tool_use', JSON.stringify(m));
  const uses = m.content.filter((b) => b.type === 'tool_use');
  assert.equal(uses.length, 1);
  const use = uses[0];
  assert.equal(use.name, 'get_weather');
  assert.match(use.id, /^toolu_/);
  assert.ok(validInput(use.input), `${JSON.stringify(use.input)}: ${JSON.stringify(validInput.errors)}`);

  const answer = (result) => client.messages.create({
    model, max_tokens: 6, temperature: 0, tools: [weather],
    messages: [...forced.messages, { role: 'assistant', content: m.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: result }] }],
  });
  const final = await answer('4 degrees');
  assert.equal(final.type, 'message');
  assert.ok(['end_turn', 'max_tokens'].includes(final.stop_reason), final.stop_reason);
  assert.equal(final.content[0]?.type, 'text', JSON.stringify(final));
  assert.ok(final.content[0].text.length > 0);
  // The tool_result's content is in the prompt: a longer one makes a longer prompt.
  const longer = await answer('4 degrees, wind from the north, rain later');
  assert.ok(longer.usage.input_tokens > final.usage.input_tokens + 5);
});

test('a streamed tool_use: input_json_delta assembled by the client', async () => {
  const whole = await client.messages.create(forced);
  const stream = client.messages.stream(forced);
  let partials = 0;
  stream.on('inputJson', () => { ++partials; });
  const final = await stream.finalMessage();
  assert.equal(final.stop_reason, 'tool_use');
  assert.ok(partials >= 1);
  const use = final.content.find((b) => b.type === 'tool_use');
  assert.ok(use, JSON.stringify(final));
  assert.ok(validInput(use.input), JSON.stringify(use.input));
  // The same seed: the same call as not streamed.
  assert.deepEqual(use.input, whole.content.find((b) => b.type === 'tool_use').input);
  assert.equal(final.usage.output_tokens, whole.usage.output_tokens);
});

test('errors surface as the client\'s typed errors', async () => {
  const expect = async (promise, Type, status, type, words) => {
    await assert.rejects(promise, (e) => {
      assert.ok(e instanceof Type, `${e?.constructor?.name}: ${e}`);
      assert.ok(e instanceof sdk.APIError);
      assert.equal(e.status, status);
      assert.equal(e.type, type);
      assert.equal(e.error.type, 'error');
      if (words) assert.ok(e.error.error.message.includes(words), e.error.error.message);
      return true;
    });
  };
  await expect(client.messages.create({ model, max_tokens: 4, messages: [{ role: 'system', content: 'x' }] }),
    sdk.BadRequestError, 400, 'invalid_request_error', 'user or assistant');
  await expect(client.messages.create({ model, max_tokens: 4, messages: [{ role: 'user', content: [{ type: 'image', source: {} }] }] }),
    sdk.BadRequestError, 400, 'invalid_request_error', 'image');
  await expect(client.messages.create({ ...ask, temperature: 3 }), sdk.BadRequestError, 400, 'invalid_request_error', 'temperature');
  await expect(client.messages.create({ ...ask, model: 'no-such-model' }), sdk.NotFoundError, 404, 'not_found_error', 'no-such-model');
  // A streamed request refused before it starts: the same error from the stream helper.
  await expect(client.messages.stream({ ...ask, model: 'no-such-model' }).finalMessage(), sdk.NotFoundError, 404, 'not_found_error');
  const wrong = new sdk.Anthropic({ baseURL: server.url, apiKey: 'wrong', maxRetries: 0 });
  await expect(wrong.messages.create(ask), sdk.AuthenticationError, 401, 'authentication_error');
});
