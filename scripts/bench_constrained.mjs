// The cost of constrained sampling in `wgc serve`: completions, `clients` at a time, free (through
// end-of-turn tokens: max_tokens each) and under a json_schema (bounded strings, so a model that
// knows no JSON still ends), and aggregate completion tokens per second for each; the difference is what the constraint costs
// (the logits row read back per constrained sequence, the host's candidate filter or vocabulary
// mask per token). Plain fetch: no client package needed.
//   node scripts/bench_constrained.mjs --url http://127.0.0.1:8080 [--clients 64] [--requests 128] [--max-tokens 128]
const args = Object.fromEntries(process.argv.slice(2).reduce((a, v, i, all) => (i % 2 ? a : [...a, [v.replace(/^--/, ''), all[i + 1]]]), []));
const url = args.url ?? 'http://127.0.0.1:8080';
const clients = Number(args.clients ?? 64), total = Number(args.requests ?? 2 * clients);
const maxTokens = Number(args['max-tokens'] ?? 128);
const schema = {
  type: 'object', additionalProperties: false, required: ['name', 'tags', 'n'],
  properties: {
    name: { type: 'string', maxLength: 24 }, n: { type: 'integer' },
    tags: { type: 'array', items: { type: 'string', maxLength: 12 }, maxItems: 4 },
  },
};

async function one(i, constrained) {
  const body = {
    prompt: `Item ${i} as JSON:`, max_tokens: maxTokens, temperature: 0.8, seed: i,
    ...(constrained ? { response_format: { type: 'json_schema', json_schema: { name: 'item', schema } } }
                    : { ignore_eos: true }),
  };
  const r = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const j = await r.json();
  if (r.status !== 200) throw new Error(`${r.status}: ${JSON.stringify(j)}`);
  if (constrained && j.choices[0].finish_reason === 'stop') JSON.parse(j.choices[0].text);  // it must parse
  return j.usage.completion_tokens;
}

async function level(constrained) {
  let next = 0, tokens = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: clients }, async () => {
    while (next < total) {
      const n = await one(next++, constrained);  // (not `tokens += await`: that reads tokens first)
      tokens += n;
    }
  }));
  const s = (performance.now() - t0) / 1000;
  return { constrained, requests: total, tokens, seconds: s, tokens_per_s: tokens / s };
}

const free = await level(false);
const constrained = await level(true);
console.log(JSON.stringify({ clients, free, constrained, cost: 1 - constrained.tokens_per_s / free.tokens_per_s }, null, 1));
