// `wgc serve --embedding-model` through the official openai client: POST /v1/embeddings with a tiny
// BERT written here (random weights, a WordPiece tokenizer): the client's default (base64) and
// encoding_format "float" give the same vectors, which equal `wgc embed` on the same model, a batch
// equals its inputs one by one, usage counts the tokens, and errors come in OpenAI's shape.
// Usage: node embeddings.test.mjs --wgc build/wgc --deps .deps
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { loadOpenAI, options, startServer } from './lib.mjs';

const opt = options();
const OpenAI = loadOpenAI(opt.deps);

// A BertModel of hidden 32, 2 layers, 4 heads; seeded weights of scale 1/sqrt(fan-in).
function writeTinyBert(dir) {
  fs.mkdirSync(path.join(dir, '1_Pooling'), { recursive: true });
  const words = ['hello', 'world', 'the', 'quick', 'brown', 'fox', '##s', '##ing'];
  const letters = 'abcdefghijklmnopqrstuvwxyz.,!?'.split('');
  const vocab = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', ...words, ...letters, ...letters.map((c) => '##' + c)];
  const H = 32, F = 48, L = 2, P = 40;
  let seed = 12345;
  const rnd = () => {  // a normal deviate from a small LCG (Box-Muller)
    seed = (seed * 1103515245 + 12345) % 2147483648;
    const u = (seed + 1) / 2147483649;
    seed = (seed * 1103515245 + 12345) % 2147483648;
    const v = (seed + 1) / 2147483649;
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  };
  const tensors = [];
  const add = (name, shape) => tensors.push({ name, shape });
  add('embeddings.word_embeddings.weight', [vocab.length, H]);
  add('embeddings.position_embeddings.weight', [P, H]);
  add('embeddings.token_type_embeddings.weight', [2, H]);
  add('embeddings.LayerNorm.weight', [H]);
  add('embeddings.LayerNorm.bias', [H]);
  for (let l = 0; l < L; ++l) {
    const p = `encoder.layer.${l}.`;
    for (const m of ['attention.self.query', 'attention.self.key', 'attention.self.value', 'attention.output.dense']) {
      add(p + m + '.weight', [H, H]);
      add(p + m + '.bias', [H]);
    }
    add(p + 'attention.output.LayerNorm.weight', [H]);
    add(p + 'attention.output.LayerNorm.bias', [H]);
    add(p + 'intermediate.dense.weight', [F, H]);
    add(p + 'intermediate.dense.bias', [F]);
    add(p + 'output.dense.weight', [H, F]);
    add(p + 'output.dense.bias', [H]);
    add(p + 'output.LayerNorm.weight', [H]);
    add(p + 'output.LayerNorm.bias', [H]);
  }
  const header = {};
  const chunks = [];
  let offset = 0;
  for (const t of tensors) {
    const n = t.shape.reduce((a, b) => a * b, 1);
    const a = new Float32Array(n);
    const norm = t.name.endsWith('LayerNorm.weight');
    const sc = t.shape.length === 2 ? 1.5 / Math.sqrt(t.shape[1]) : 0.3;
    for (let i = 0; i < n; ++i) a[i] = norm ? 1 + 0.3 * rnd() : sc * rnd();
    header[t.name] = { dtype: 'F32', shape: t.shape, data_offsets: [offset, offset + n * 4] };
    chunks.push(Buffer.from(a.buffer));
    offset += n * 4;
  }
  let hs = JSON.stringify(header);
  while (hs.length % 8) hs += ' ';
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(hs.length));
  fs.writeFileSync(path.join(dir, 'model.safetensors'), Buffer.concat([len, Buffer.from(hs), ...chunks]));
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({
    architectures: ['BertModel'], model_type: 'bert', vocab_size: vocab.length, hidden_size: H,
    num_hidden_layers: L, num_attention_heads: 4, intermediate_size: F, hidden_act: 'gelu',
    max_position_embeddings: P, type_vocab_size: 2, layer_norm_eps: 1e-12, pad_token_id: 0,
  }));
  fs.writeFileSync(path.join(dir, 'modules.json'), JSON.stringify([
    { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
    { idx: 1, name: '1', path: '1_Pooling', type: 'sentence_transformers.models.Pooling' },
  ]));
  fs.writeFileSync(path.join(dir, '1_Pooling', 'config.json'),
                   JSON.stringify({ word_embedding_dimension: H, pooling_mode_mean_tokens: true }));
  const special = (id, content) =>
    ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify({
    version: '1.0',
    added_tokens: ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'].map((t, i) => special(i, t)),
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null,
                  lowercase: true },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
               { SpecialToken: { id: '[SEP]', type_id: 0 } }],
      pair: [{ Sequence: { id: 'A', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }],
      special_tokens: { '[CLS]': { id: '[CLS]', ids: [2], tokens: ['[CLS]'] },
                        '[SEP]': { id: '[SEP]', ids: [3], tokens: ['[SEP]'] } },
    },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100,
             vocab: Object.fromEntries(vocab.map((t, i) => [t, i])) },
  }));
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wgc-embed-'));
const modelDir = path.join(dir, 'tiny-bert');
writeTinyBert(modelDir);
const server = await startServer(opt.wgc, ['--embedding-model', modelDir]);
const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'none', maxRetries: 0, timeout: 120_000 });
const post = (body) =>
  fetch(`${server.url}/v1/embeddings`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
                                         body: JSON.stringify(body) });

test.after(async () => {
  const exit = await server.stop();
  assert.deepEqual(exit, { code: 0, signal: null }, server.log());
  fs.rmSync(dir, { recursive: true, force: true });
});

const texts = ['Hello world!', 'the quick brown fox', 'foxes', 'zzz qqq, hello.'];
const close = (a, b, tol, what) => {
  assert.equal(a.length, b.length, what);
  for (let i = 0; i < a.length; ++i) assert.ok(Math.abs(a[i] - b[i]) <= tol, `${what}[${i}]: ${a[i]} vs ${b[i]}`);
};

test('the client (base64) and float give the same vectors, equal to wgc embed', async () => {
  const viaClient = await client.embeddings.create({ model: 'tiny-bert', input: texts });
  assert.equal(viaClient.object, 'list');
  assert.equal(viaClient.model, 'tiny-bert');
  assert.equal(viaClient.data.length, texts.length);
  const res = await post({ model: 'tiny-bert', input: texts, encoding_format: 'float' });
  assert.equal(res.status, 200);
  const viaFloat = await res.json();
  const { stdout } = await promisify(execFile)(opt.wgc, ['embed', '--model', modelDir, '--json', ...texts],
                                               { encoding: 'utf8' });
  const cli = JSON.parse(stdout);
  let tokens = 0;
  for (let i = 0; i < texts.length; ++i) {
    assert.equal(viaClient.data[i].index, i);
    assert.equal(viaClient.data[i].embedding.length, 32);
    close(viaClient.data[i].embedding, viaFloat.data[i].embedding, 0, `base64 vs float ${i}`);
    close(viaFloat.data[i].embedding, cli.embeddings[i], 1e-5, `server vs wgc embed ${i}`);
    const norm = Math.hypot(...viaFloat.data[i].embedding);
    assert.ok(Math.abs(norm - 1) < 1e-5, `norm ${norm}`);
    tokens += cli.tokens[i];
  }
  assert.equal(viaClient.usage.prompt_tokens, tokens);
  assert.equal(viaClient.usage.total_tokens, tokens);
  // Different texts give different vectors (the model is not degenerate).
  assert.ok(Math.abs(viaFloat.data[0].embedding[0] - viaFloat.data[1].embedding[0]) > 1e-4);
});

test('a batch equals its inputs one by one; token arrays; dimensions', async () => {
  const batch = (await post({ input: texts, encoding_format: 'float' }).then((r) => r.json())).data;
  for (let i = 0; i < texts.length; ++i) {
    const solo = (await post({ input: texts[i], encoding_format: 'float' }).then((r) => r.json())).data[0];
    close(batch[i].embedding, solo.embedding, 1e-6, `batch vs solo ${i}`);
  }
  const ids = await post({ input: [[2, 5, 6, 3]], encoding_format: 'float' }).then((r) => r.json());
  const same = await post({ input: 'hello world', encoding_format: 'float' }).then((r) => r.json());
  close(ids.data[0].embedding, same.data[0].embedding, 1e-6, 'token ids vs text');
  const short = await client.embeddings.create({ model: 'tiny-bert', input: 'hello', dimensions: 8 });
  assert.equal(short.data[0].embedding.length, 8);
});

test('errors in OpenAI shape', async () => {
  await assert.rejects(client.embeddings.create({ model: 'other', input: 'x' }), (e) => e.status === 404);
  for (const [body, param] of [[{ input: '' }, 'input'], [{ input: [[1, 999]] }, 'input'],
                               [{ input: 'x', encoding_format: 'hex' }, 'encoding_format'],
                               [{ input: 'a '.repeat(60) }, 'input']]) {
    const r = await post(body);
    assert.equal(r.status, 400, JSON.stringify(body));
    const e = await r.json();
    assert.equal(e.error.type, 'invalid_request_error');
    assert.equal(e.error.param, param);
  }
});
