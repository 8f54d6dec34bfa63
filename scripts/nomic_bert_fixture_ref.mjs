// llama.cpp's embeddings of a nomic-bert GGUF, through node-llama-cpp 3.21.1 (llama.cpp's prebuilt
// CPU backend; part of scripts/make_nomic_bert_fixture.sh). Each text is tokenized by llama.cpp
// (model.tokenize: its WordPiece; [CLS] ... [SEP] added as LlamaEmbeddingContext adds them for a
// wpm vocabulary) and embedded by getEmbeddingFor(those ids): the model's pooling_type (mean)
// over the last hidden states, NOT normalised (llama_get_embeddings_seq returns the pooled sum /
// count as it is).
//
//   node PEER/nomic_bert_fixture_ref.mjs MODEL.gguf > reference.json   (copied beside PEER/node_modules)
import { getLlama, LlamaLogLevel } from "node-llama-cpp";
import { readFileSync } from "node:fs";

const model_path = process.argv[2];
if (!model_path) {
  console.error("usage: node nomic_bert_fixture_ref.mjs MODEL.gguf");
  process.exit(2);
}
// Short, ordinary, unknown characters and accents, and one longer than a 64-key chunk of the GPU
// attention kernel.
const texts = [
  "The quick brown fox jumps over the lazy dog.",
  "search query: rotary embedding model",
  "a",
  "Caf\u00e9 na\u00efve \u65e5\u672c text!? (tokens)",
  Array.from({ length: 9 }, (_, i) => `the quick brown fox ${i} jumps over the lazy dog,`).join(" "),
];

const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
// Flash attention off: llama.cpp's flash-attention path (node-llama-cpp's default "auto" turns it on)
// casts K and V to F16, a 1e-3 error that would hide wgc's; without it everything runs in F32.
const model = await llama.loadModel({ modelPath: model_path, gpuLayers: 0, defaultContextFlashAttention: false });
const ctx = await model.createEmbeddingContext({ contextSize: model.trainContextSize, threads: 1 });
const cases = [];
for (const text of texts) {
  const ids = [model.tokens.bos, ...model.tokenize(text), model.tokens.sep];
  const e = await ctx.getEmbeddingFor(ids);
  cases.push({ text, ids, embedding: Array.from(e.vector) });
}
const info = JSON.parse(readFileSync(new URL("./node_modules/node-llama-cpp/package.json", import.meta.url)));
console.log(
  JSON.stringify(
    {
      made_by: `node-llama-cpp ${info.version} (llama.cpp CPU backend, flash attention off), getEmbeddingFor`,
      pooling: "mean",
      normalized: false,
      cases,
    },
    null,
    1,
  ),
);
await ctx.dispose();
await model.dispose();
