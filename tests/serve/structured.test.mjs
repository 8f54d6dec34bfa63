// `wgc serve` structured output and tool calls through the official openai client, checked by a
// JSON Schema validator the server did not write (ajv): on the built-in model (random-looking
// weights that know nothing of JSON), json_schema output validates for 20 schemas x 5 seeds,
// json_object and a GBNF `grammar` hold; a tool-call round trip (forced call, its arguments valid
// under the function's schema, the result fed back as role "tool", the final answer) works
// streamed (the client's stream helper adds up OpenAI's tool-call deltas) and not; bad schemas
// and grammars are refused with a 400 naming the field.
// Usage: node structured.test.mjs --wgc build/wgc --deps .deps
import test from 'node:test';
import assert from 'node:assert/strict';
import { loadAjv, loadOpenAI, options, startServer } from './lib.mjs';

const opt = options();
const OpenAI = loadOpenAI(opt.deps);
const ajv = loadAjv(opt.deps);

const server = await startServer(opt.wgc, ['--parallel', '8', '--ctx', '1024']);
const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'none', maxRetries: 0, timeout: 300_000 });
const model = (await client.models.list()).data[0].id;

test.after(async () => {
  const exit = await server.stop();
  assert.deepEqual(exit, { code: 0, signal: null }, server.log());
});

// Runs the jobs (async functions), `width` at a time (within the server's queue), all settled.
async function inBatches(jobs, width) {
  const results = new Array(jobs.length);
  let next = 0;
  async function worker() {
    while (next < jobs.length) {
      const i = next++;
      results[i] = await jobs[i]().then((value) => ({ status: 'fulfilled', value }), (reason) => ({ status: 'rejected', reason }));
    }
  }
  await Promise.all(Array.from({ length: width }, worker));
  return results;
}

const str = (maxLength, extra = {}) => ({ type: 'string', maxLength, ...extra });
const obj = (properties, required = Object.keys(properties), extra = {}) =>
  ({ type: 'object', properties, required, additionalProperties: false, ...extra });
// Strings and arrays bounded (a model that knows no JSON must still end within max_tokens).
const SCHEMAS = [
  obj({ name: str(8) }),
  obj({ n: { type: 'integer' } }),
  obj({ x: { type: 'number' }, ok: { type: 'boolean' } }),
  obj({ kind: { enum: ['cat', 'dog', 'owl'] } }),
  obj({ v: { const: 'fixed' }, z: { type: 'null' } }),
  obj({ tags: { type: 'array', items: str(4), minItems: 1, maxItems: 3 } }),
  obj({ a: str(5), b: { type: 'integer', minimum: 0 } }, ['a']),  // b optional
  obj({ p: obj({ q: obj({ r: { type: 'boolean' } }) }) }),  // nested
  obj({ xs: { type: 'array', items: { type: 'integer', minimum: 1, maximum: 9 }, maxItems: 4 } }),
  obj({ pt: { type: 'array', prefixItems: [{ type: 'integer' }, str(3)], items: false } }),
  { type: 'array', items: { type: 'boolean' }, minItems: 2, maxItems: 2 },
  obj({ e: { enum: [1, 'two', null, true] } }),
  obj({ u: { anyOf: [{ type: 'integer' }, str(3)] } }),
  obj({ t: { type: ['string', 'null'], maxLength: 4 } }),
  obj({ age: { type: 'integer', minimum: 18, maximum: 30 } }),
  obj({ list: { type: 'array', items: obj({ id: { type: 'integer', minimum: 0 }, s: str(3) }), maxItems: 2 } }),
  { $defs: { leaf: obj({ w: str(3) }) }, ...obj({ l: { $ref: '#/$defs/leaf' }, m: { $ref: '#/$defs/leaf' } }) },
  obj({ code: str(6, { minLength: 2 }) }),
  { type: 'string', enum: ['north', 'south', 'east', 'west'] },
  obj({ s: str(4), i: { type: 'integer', minimum: 0, maximum: 3 }, b: { type: 'boolean' }, n: { type: 'null' } }),
];

test('json_schema output validates (20 schemas x 5 seeds, batched)', async () => {
  const jobs = [];
  for (const [i, schema] of SCHEMAS.entries()) {
    const validate = ajv.compile(schema);
    for (let seed = 0; seed < 5; ++seed) {
      jobs.push(async () => {
        const r = await client.chat.completions.create({
          model, messages: [{ role: 'user', content: `Answer as JSON (${i}).` }], max_tokens: 200,
          temperature: seed === 0 ? 0 : 1.0, seed,
          response_format: { type: 'json_schema', json_schema: { name: `s${i}`, strict: true, schema } },
        });
        const text = r.choices[0].message.content;
        const where = `schema ${i} seed ${seed}: ${text}`;
        assert.equal(r.choices[0].finish_reason, 'stop', where);
        const value = JSON.parse(text);
        assert.ok(validate(value), `${where}\n${ajv.errorsText(validate.errors)}`);
      });
    }
  }
  const results = await inBatches(jobs, 16);
  const failed = results.filter((r) => r.status === 'rejected').map((r) => r.reason.message);
  assert.deepEqual(failed, []);
});

test('json_object, completions and a GBNF grammar', async () => {
  // Any object: its strings are unbounded, so a model that knows no JSON may run out of tokens
  // inside one ("length", as the random-looking built-in model does); a reply that ends is one.
  const r = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'any JSON object' }], max_tokens: 60, temperature: 0.9, seed: 4,
    response_format: { type: 'json_object' },
  });
  const text = r.choices[0].message.content;
  assert.match(text, /^\{/);
  if (r.choices[0].finish_reason === 'stop') assert.ok(typeof JSON.parse(text) === 'object', text);
  // llama-server's json_object with a schema beside it: bounded, so it ends and validates.
  const bounded = { type: 'json_object', schema: SCHEMAS[5] };
  for (const seed of [1, 2]) {
    const b = await client.chat.completions.create({
      model, messages: [{ role: 'user', content: 'tags' }], max_tokens: 200, temperature: 1, seed, response_format: bounded,
    });
    assert.equal(b.choices[0].finish_reason, 'stop', b.choices[0].message.content);
    assert.ok(ajv.validate(SCHEMAS[5], JSON.parse(b.choices[0].message.content)), b.choices[0].message.content);
  }
  const c = await client.completions.create({
    model, prompt: 'The answer:', max_tokens: 200, seed: 2,
    response_format: { type: 'json_schema', json_schema: { name: 'n', schema: SCHEMAS[1] } },
  });
  assert.ok(ajv.validate(SCHEMAS[1], JSON.parse(c.choices[0].text)), c.choices[0].text);
  for (const seed of [1, 2, 3]) {
    const g = await client.chat.completions.create({
      model, messages: [{ role: 'user', content: 'yes or no?' }], max_tokens: 20, seed, temperature: 1,
      grammar: 'root ::= ("yes" | "no") ("!" | "")',
    });
    assert.match(g.choices[0].message.content, /^(yes|no)!?$/);
  }
});

const weather = {
  type: 'function',
  function: {
    name: 'get_weather', description: 'The weather in a city now',
    parameters: obj({ city: str(12), unit: { enum: ['C', 'F'] } }, ['city']),
  },
};
const add = {
  type: 'function',
  function: { name: 'add', parameters: obj({ a: { type: 'integer' }, b: { type: 'integer' } }) },
};

function checkCalls(msg, allowed) {
  assert.ok(Array.isArray(msg.tool_calls) && msg.tool_calls.length >= 1, JSON.stringify(msg));
  for (const call of msg.tool_calls) {
    assert.equal(call.type, 'function');
    assert.match(call.id, /^call_/);
    const tool = allowed.find((t) => t.function.name === call.function.name);
    assert.ok(tool, `unknown function ${call.function.name}`);
    const args = JSON.parse(call.function.arguments);
    assert.ok(ajv.validate(tool.function.parameters, args), `${call.function.arguments}: ${ajv.errorsText()}`);
  }
}

test('tool-call round trip, not streamed and streamed', async () => {
  for (const stream of [false, true]) {
    for (const seed of [1, 2]) {
      const messages = [{ role: 'user', content: 'What is the weather in Oslo?' }];
      const ask = { model, messages, tools: [weather, add], tool_choice: 'required', max_tokens: 200, seed, temperature: 0.8 };
      let first;
      if (stream) {
        const s = client.chat.completions.stream({ ...ask, stream_options: { include_usage: true } });
        first = await s.finalChatCompletion();
      } else {
        first = await client.chat.completions.create(ask);
      }
      const msg = first.choices[0].message;
      assert.equal(first.choices[0].finish_reason, 'tool_calls', JSON.stringify(first));
      checkCalls(msg, [weather, add]);
      // The result goes back; the final answer is text.
      messages.push({ role: 'assistant', content: msg.content ?? null, tool_calls: msg.tool_calls });
      for (const call of msg.tool_calls) messages.push({ role: 'tool', tool_call_id: call.id, content: '4 degrees' });
      const final = await client.chat.completions.create({
        model, messages, tools: [weather, add], tool_choice: 'none', max_tokens: 12, temperature: 0, stream: false,
      });
      assert.equal(typeof final.choices[0].message.content, 'string');
      assert.equal(final.choices[0].message.tool_calls, undefined);
      // The call and its result are in the prompt: longer than the question alone.
      const alone = await client.chat.completions.create({
        model, messages: messages.slice(0, 1), tools: [weather, add], tool_choice: 'none', max_tokens: 1,
      });
      assert.ok(final.usage.prompt_tokens > alone.usage.prompt_tokens + 10, JSON.stringify(final.usage));
    }
  }
  // A named function: that one is called.
  const named = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'add 2 and 3' }], tools: [weather, add],
    tool_choice: { type: 'function', function: { name: 'add' } }, parallel_tool_calls: false, max_tokens: 400, seed: 9,
  });
  checkCalls(named.choices[0].message, [add]);
  assert.equal(named.choices[0].message.tool_calls.length, 1);
});

test('bad schemas, tools and grammars are refused naming the field', async () => {
  const cases = [
    [{ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'string', pattern: 'a+' } } } },
      'response_format'],
    [{ grammar: 'root ::= ( "a"' }, 'grammar'],
    [{ tools: [{ type: 'function', function: { name: 'bad name' } }] }, 'tools'],
    [{ tools: [weather], tool_choice: { type: 'function', function: { name: 'nope' } } }, 'tool_choice'],
  ];
  for (const [extra, param] of cases) {
    await assert.rejects(
      client.chat.completions.create({ model, messages: [{ role: 'user', content: 'x' }], max_tokens: 4, ...extra }),
      (e) => e.status === 400 && e.param === param, JSON.stringify(extra));
  }
});
