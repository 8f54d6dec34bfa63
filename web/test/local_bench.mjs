// Size and speed of the engine in the page (docs/web.md, "Size and speed"): the wasm build's files
// (raw and gzip -9), the built-in model's load time in headless Chromium (download, upload to the
// GPU, kernel compilation), and greedy decode tokens/s in the page (with and without deferred error
// scopes) against the native GPU engine on the same kind of adapter (`wgc generate --backend
// cpu-vulkan`, SwiftShader where there is no GPU; `--backend gpu` on a GPU machine), and wasm memory
// before and after the load (its peak: it only grows). Prints the adapter and a Markdown table.
//   node web/test/local_bench.mjs --wgc build/wgc --site build/web --deps .deps [--tokens 32] [--runs 2]
//        [--backend cpu-vulkan|gpu] [--model models/OTHER.gguf (under SITE/local)]
//   (WGC_CHROMIUM_FLAGS: extra Chromium flags, harness.mjs)
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { launch, loadPuppeteer, openPage, options, staticServer } from './harness.mjs';

const opt = options();
if (!opt.site || !opt.deps) throw new Error('usage: local_bench.mjs [--wgc BIN] --site DIR --deps DIR [--tokens N]');
const N = Number(opt.tokens || 32), RUNS = Number(opt.runs || 2);
const BACKEND = opt.backend || 'cpu-vulkan';
const MODEL = opt.model || 'models/wgc-tiny-dict-q8_0.gguf'; // relative to the page
const PROMPT = 'The moon';
const local = path.join(opt.site, 'local');

const rows = [];
for (const f of ['wgc-core.wasm', 'wgc-core.js']) {
  const bytes = fs.readFileSync(path.join(local, f));
  rows.push([`${f} size`, `${(bytes.length / 1e6).toFixed(2)} MB, gzip -9 ${(zlib.gzipSync(bytes, { level: 9 }).length / 1e6).toFixed(2)} MB`]);
}

const server = await staticServer(opt.site);
const browser = await launch(await loadPuppeteer(opt.deps), { webgpu: true });
const page = await openPage(browser, `${server.url}/local/wgc.js`);
const adapter = await page.evaluate(async () => {
  const a = await navigator.gpu.requestAdapter();
  return a ? [a.info.vendor, a.info.architecture, a.info.device, a.info.description].filter(Boolean).join(' / ') : 'none';
});
for (const defer of [false, true]) {
  const r = await page.evaluate(async (n, runs, prompt, deferErrorScopes, model) => {
    const { createEngine } = await import('./wgc.js');
    const t0 = performance.now();
    const e = await createEngine({ model, deferErrorScopes });
    const load = performance.now() - t0;
    const tps = [];
    let ids;
    for (let i = 0; i < runs; i++) {
      await e.reset();
      for await (const _ of e.generate(prompt, { maxTokens: n, temperature: 0, ignoreEos: true })); // eslint-disable-line no-unused-vars
      tps.push(e.lastResult.timings.decode_tps);
      ids = e.lastResult.ids;
    }
    e.terminate();
    return { load, tps, ids, waits: e.info.waits, mem: e.info.wasm_memory };
  }, N, RUNS, PROMPT, defer, MODEL);
  const label = defer ? ' (deferred error scopes)' : '';
  if (!defer) {
    rows.push([`${path.basename(MODEL)}: load in the page (download, upload, kernels)`, `${(r.load / 1000).toFixed(1)} s (${r.waits.waits} GPU waits, ${(r.waits.ms / 1000).toFixed(1)} s in them)`]);
    const mib = (n) => `${(n / 2 ** 20).toFixed(1)} MiB`;
    const file = fs.statSync(path.join(local, MODEL)).size;
    if (r.mem) rows.push(['wasm memory before / after the load (its peak)', `${mib(r.mem.before_load)} / ${mib(r.mem.after_load)} (the file: ${mib(file)})`]);
  }
  rows.push([`decode in the page${label}, ${N} greedy tokens`, `${Math.max(...r.tps).toFixed(2)} t/s (best of ${RUNS})`]);
  rows.ids = r.ids;
}
await browser.close();
server.close();

const native = [];
for (let i = 0; opt.wgc && i < RUNS; i++) { // (without --wgc: no native comparison)
  const p = spawnSync(opt.wgc, ['generate', '--backend', BACKEND, '-m', path.join(local, MODEL), '-p', PROMPT, '-n', String(N), '--temp', '0',
                                '--ignore-eos', '--json'], { encoding: 'utf8' });
  if (p.status !== 0) throw new Error(p.stderr);
  const j = JSON.parse(p.stdout);
  native.push(j.timings.decode_tokens_per_s);
  if (JSON.stringify(j.ids) !== JSON.stringify(rows.ids)) rows.push(['WARNING', 'the native ids differ from the page\'s']);
}
if (native.length) rows.push([`decode natively (wgc generate --backend ${BACKEND}), ${N} greedy tokens`, `${Math.max(...native).toFixed(2)} t/s (best of ${RUNS})`]);

console.log(`adapter: ${adapter}; prompt ${JSON.stringify(PROMPT)}\n`);
console.log('| what | measured |\n|---|---|');
for (const [k, v] of rows) console.log(`| ${k} | ${v} |`);
