// Expected token ids from Hugging Face `tokenizers` (the Rust library as a Node.js module).
//   node ref.js NODE_MODULES TOKENIZER_JSON CORPUS_JSON OUT_JSON
// CORPUS_JSON: an array of strings. OUT_JSON gets, per string, the ids with and without the
// post-processor's special tokens and the decoded text of the former (with and without specials).
'use strict';
const fs = require('fs');
const path = require('path');

async function main() {
  const [nodeModules, tokenizerJson, corpusJson, outJson] = process.argv.slice(2);
  if (!outJson) {
    console.error('usage: node ref.js NODE_MODULES TOKENIZER_JSON CORPUS_JSON OUT_JSON');
    process.exit(2);
  }
  const { Tokenizer } = require(path.join(nodeModules, '@anush008', 'tokenizers'));
  const tok = Tokenizer.fromFile(tokenizerJson);
  const corpus = JSON.parse(fs.readFileSync(corpusJson, 'utf8'));
  const out = { with_special: [], without_special: [], decoded: [], decoded_skip: [] };
  for (const text of corpus) {
    const a = await tok.encode(text, null, { addSpecialTokens: true });
    const b = await tok.encode(text, null, { addSpecialTokens: false });
    const ids = a.getIds();
    out.with_special.push(ids);
    out.without_special.push(b.getIds());
    out.decoded.push(await tok.decode(ids, false));
    out.decoded_skip.push(await tok.decode(ids, true));
  }
  fs.writeFileSync(outJson, JSON.stringify(out));
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
