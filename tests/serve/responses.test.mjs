// `wgc serve`'s Responses API (POST /v1/responses) through the official openai client:
// responses.create's `response` (output message, SDK-side output_text, usage, status incomplete at
// max_output_tokens) agrees with the same conversation through chat completions, for a string
// input and for message items; responses.stream and stream: true add up to it (the events in the
// order the client accumulates, sequence_numbers counting up); a forced function call whose
// arguments validate (ajv) against its parameters, its function_call_output fed back and a final
// answer; the call streamed (function_call_arguments events); json_schema and json_object text
// formats; unsupported and bad fields refused with a 400 naming the field.
// Usage: node responses.test.mjs --wgc build/wgc --deps .deps
import test from 'node:test';
import assert from 'node:assert/strict';
import { loadAjv, loadOpenAI, options, startServer } from './lib.mjs';

const opt = options();
const OpenAI = loadOpenAI(opt.deps);
const ajv = loadAjv(opt.deps);
const server = await startServer(opt.wgc, ['--parallel', '4', '--ctx', '1024']);
const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'none', maxRetries: 0, timeout: 120_000 });
test.after(async () => assert.deepEqual(await server.stop(), { code: 0, signal: null }, server.log()));

const model = 'wgc-tiny-dict-q8_0';
const ask = { model, instructions: 'Define words.', input: 'moon', max_output_tokens: 10 };

test('a response agrees with the same chat completion; items equal a string input', async () => {
  for (const sampling of [{ temperature: 0 }, { temperature: 0.9, top_p: 0.95, seed: 3 }]) {
    const r = await client.responses.create({ ...ask, ...sampling });
    assert.equal(r.object, 'response');
    assert.match(r.id, /^resp_/);
    assert.equal(r.model, model);
    assert.equal(r.status, 'incomplete');
    assert.equal(r.incomplete_details.reason, 'max_output_tokens');
    assert.equal(r.output.length, 1);
    const [msg] = r.output;
    assert.equal(msg.type, 'message');
    assert.equal(msg.role, 'assistant');
    assert.equal(msg.content.length, 1);
    assert.equal(msg.content[0].type, 'output_text');
    assert.deepEqual(msg.content[0].annotations, []);
    assert.ok(msg.content[0].text.length > 0);
    assert.equal(r.output_text, msg.content[0].text);
    assert.equal(r.usage.output_tokens, 10);
    assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
    assert.equal(r.instructions, ask.instructions);
    assert.equal(r.max_output_tokens, 10);

    const chat = await client.chat.completions.create({
      model, max_tokens: 10, ...sampling,
      messages: [{ role: 'system', content: ask.instructions }, { role: 'user', content: ask.input }],
    });
    assert.equal(r.output_text, chat.choices[0].message.content, JSON.stringify(sampling));
    assert.equal(r.usage.input_tokens, chat.usage.prompt_tokens);

    const items = await client.responses.create({
      ...ask, ...sampling,
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'mo' }, { type: 'input_text', text: 'on' }] }],
    });
    assert.equal(items.output_text, r.output_text);
  }
});

test('responses.stream and stream: true add up to the response', async () => {
  for (const sampling of [{ temperature: 0 }, { temperature: 0.8, seed: 9 }]) {
    const body = { ...ask, ...sampling };
    const whole = await client.responses.create(body);
    const stream = client.responses.stream(body);
    let deltas = '';
    stream.on('response.output_text.delta', (e) => { deltas += e.delta; });
    const final = await stream.finalResponse();
    assert.equal(final.output_text, whole.output_text);
    assert.equal(deltas, whole.output_text);
    assert.equal(final.status, 'incomplete');
    for (const k of ['input_tokens', 'output_tokens', 'total_tokens']) assert.equal(final.usage[k], whole.usage[k]);

    const types = [];
    let seq = 0;
    for await (const e of await client.responses.create({ ...body, stream: true })) {
      assert.equal(e.sequence_number, seq++);
      types.push(e.type);
    }
    assert.deepEqual(types.filter((t, i, a) => t !== a[i - 1]), ['response.created', 'response.in_progress',
      'response.output_item.added', 'response.content_part.added', 'response.output_text.delta',
      'response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.incomplete']);
  }
});

const parameters = {
  type: 'object', additionalProperties: false, required: ['city', 'unit'],
  properties: { city: { type: 'string', maxLength: 10 }, unit: { enum: ['C', 'F'] } },
};
const validArgs = ajv.compile(parameters);
const weather = { type: 'function', name: 'get_weather', description: 'The weather now', parameters, strict: true };
const forced = {
  model, input: [{ role: 'user', content: 'Weather in Oslo?' }], max_output_tokens: 200, temperature: 0.7, seed: 5,
  tools: [weather], tool_choice: { type: 'function', name: 'get_weather' }, parallel_tool_calls: false,
};

test('a forced function call, its output fed back, a final answer', async () => {
  const r = await client.responses.create(forced);
  assert.equal(r.status, 'completed');
  const calls = r.output.filter((o) => o.type === 'function_call');
  assert.equal(calls.length, 1, JSON.stringify(r.output));
  const [call] = calls;
  assert.equal(call.name, 'get_weather');
  assert.match(call.call_id, /^call_/);
  const args = JSON.parse(call.arguments);
  assert.ok(validArgs(args), `${call.arguments}: ${JSON.stringify(validArgs.errors)}`);

  const answer = (output) => client.responses.create({
    model, max_output_tokens: 6, temperature: 0, tools: [weather],
    input: [...forced.input, ...r.output, { type: 'function_call_output', call_id: call.call_id, output }],
  });
  const final = await answer('4 degrees');
  assert.equal(final.output[0].type, 'message', JSON.stringify(final.output));
  assert.ok(final.output_text.length > 0);
  // The output is in the prompt: a longer one makes a longer prompt.
  const longer = await answer('4 degrees, wind from the north, rain later');
  assert.ok(longer.usage.input_tokens > final.usage.input_tokens + 5);
});

test('a streamed function call equals the one not streamed', async () => {
  const whole = await client.responses.create(forced);
  const stream = client.responses.stream(forced);
  let argDeltas = '';
  stream.on('response.function_call_arguments.delta', (e) => { argDeltas += e.delta; });
  const final = await stream.finalResponse();
  const call = final.output.find((o) => o.type === 'function_call');
  assert.ok(call, JSON.stringify(final.output));
  assert.equal(argDeltas, call.arguments);
  assert.ok(validArgs(JSON.parse(call.arguments)));
  const want = whole.output.find((o) => o.type === 'function_call');
  assert.equal(call.name, want.name);
  assert.equal(call.arguments, want.arguments);
  assert.equal(call.status, 'completed');
  assert.match(call.call_id, /^call_/);
});

test('json_schema and json_object text formats', async () => {
  const schema = {
    type: 'object', additionalProperties: false, required: ['name', 'size'],
    properties: { name: { type: 'string', maxLength: 8 }, size: { enum: ['small', 'big'] } },
  };
  const valid = ajv.compile(schema);
  for (const seed of [1, 2, 3]) {
    const r = await client.responses.create({
      model, input: 'A planet', max_output_tokens: 400, temperature: 0.9, seed,
      text: { format: { type: 'json_schema', name: 'planet', schema, strict: true } },
    });
    assert.equal(r.status, 'completed', r.output_text);
    assert.ok(valid(JSON.parse(r.output_text)), r.output_text);
  }
  // Any object: its strings are unbounded, so the built-in model may run out of tokens inside one;
  // it is chat's json_object (the same seed, the same text), and a reply that ends is an object.
  const sampling = { max_output_tokens: 60, temperature: 0.9, seed: 4 };
  const r = await client.responses.create({ model, input: 'A planet', ...sampling, text: { format: { type: 'json_object' } } });
  assert.match(r.output_text, /^\{/);
  if (r.status === 'completed') assert.equal(typeof JSON.parse(r.output_text), 'object');
  const chat = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'A planet' }],
    max_tokens: 60, temperature: 0.9, seed: 4, response_format: { type: 'json_object' } });
  assert.equal(r.output_text, chat.choices[0].message.content);
});

test('unsupported and bad fields: 400 naming the field', async () => {
  const refused = async (extra, param) => {
    await assert.rejects(client.responses.create({ ...ask, ...extra }), (e) => {
      assert.ok(e instanceof OpenAI.BadRequestError, String(e));
      assert.equal(e.status, 400);
      assert.equal(e.param, param, e.message);
      assert.equal(e.type, 'invalid_request_error');
      return true;
    });
  };
  await refused({ previous_response_id: 'resp_1' }, 'previous_response_id');
  await refused({ background: true }, 'background');
  await refused({ tools: [{ type: 'web_search' }] }, 'tools');
  await refused({ tool_choice: { type: 'web_search' } }, 'tool_choice');
  await refused({ input: [{ type: 'reasoning', summary: [] }] }, 'input');
  await refused({ input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'x' }] }] }, 'input');
  await refused({ max_output_tokens: 0 }, 'max_output_tokens');
  await refused({ temperature: 5 }, 'temperature');
  await refused({ text: { format: { type: 'json_schema', name: 'x', schema: { type: 'nonsense' } } } }, 'text');
  await refused({ input: 'word '.repeat(2000) }, 'input');
});
