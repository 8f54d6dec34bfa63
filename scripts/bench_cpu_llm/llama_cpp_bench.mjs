// llama-bench's pp/tg tests through node-llama-cpp (llama.cpp's prebuilt CPU backend), as
// `wgc bench-llm` runs them: prefill of P random tokens from an empty cache (the last position's
// logits), and N greedy single-token steps from an empty cache; a warm-up run, then R timed runs.
//
//   node llama_cpp_bench.mjs MODEL.gguf P N R THREADS   -> one JSON line on stdout
import { getLlama, LlamaLogLevel } from "node-llama-cpp";

const [model_path, p_arg, n_arg, r_arg, t_arg] = process.argv.slice(2);
const P = Number(p_arg), N = Number(n_arg), R = Number(r_arg), threads = Number(t_arg);
if (!model_path || !(P > 0) || !(N > 0) || !(R > 0) || !(threads > 0)) {
  console.error("usage: node llama_cpp_bench.mjs MODEL.gguf P N REPEATS THREADS");
  process.exit(2);
}

// ggml's CPU variant that the binary loads for this processor (libggml-cpu-<variant>.so), from its
// debug log; errors still go to stderr.
let variant = "";
const logger = (level, message) => {
  const m = /loaded CPU backend from .*libggml-cpu-([\w-]+)\.so/.exec(message);
  if (m) variant = m[1];
  else if (level === LlamaLogLevel.error || level === LlamaLogLevel.fatal) console.error(message.trim());
};
const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.debug, logger, maxThreads: threads });
const model = await llama.loadModel({ modelPath: model_path, gpuLayers: 0 });
const context = await model.createContext({
  contextSize: Math.max(P, N) + 16,
  batchSize: Math.max(P, 1),
  threads: { ideal: threads, min: threads },
  sequences: 1,
});
const seq = context.getSequence();
let seed = 1;
const random_token = () => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed % 32000;  // ordinary tokens of every Llama 3 vocabulary
};

// Each run's wall seconds, and the process's CPU seconds over it (every thread's; with one thread
// that is the work itself, whatever else the machine runs).
const cpu_seconds = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

async function prefill() {
  await seq.clearHistory();
  const tokens = Array.from({ length: P }, random_token);
  const t0 = process.hrtime.bigint(), c0 = cpu_seconds();
  await seq.evaluateWithoutGeneratingNewTokens(tokens);
  return [Number(process.hrtime.bigint() - t0) / 1e9, cpu_seconds() - c0];
}

async function decode(steps) {
  await seq.clearHistory();
  const t0 = process.hrtime.bigint(), c0 = cpu_seconds();
  let n = 0;
  for await (const token of seq.evaluate([random_token()], { temperature: 0 })) {
    void token;
    if (++n >= steps) break;
  }
  return [Number(process.hrtime.bigint() - t0) / 1e9, cpu_seconds() - c0];
}

const median = (v) => {
  const s = [...v].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

await prefill();
const pp = [], pp_cpu = [];
for (let r = 0; r < R; ++r) {
  const [wall, cpu] = await prefill();
  pp.push(P / wall);
  pp_cpu.push(P / cpu);
}
await decode(Math.min(N, 16));
const tg = [], tg_cpu = [];
for (let r = 0; r < R; ++r) {
  const [wall, cpu] = await decode(N);
  tg.push(N / wall);
  tg_cpu.push(N / cpu);
}

console.log(JSON.stringify({
  peer: "node-llama-cpp",
  version: "3.21.1",
  threads: context.currentThreads ?? threads,
  cpu_variant: variant,
  pp_tps: pp,
  tg_tps: tg,
  pp_median: median(pp),
  tg_median: median(tg),
  // tokens per CPU second of the process (comparable across engines with one thread each)
  pp_cpu_median: median(pp_cpu),
  tg_cpu_median: median(tg_cpu),
}));
await context.dispose();
await model.dispose();
await llama.dispose();
