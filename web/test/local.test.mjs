// Browser test of the page at /local/ (web/local/): the chat page with the model running in the
// browser (wgc compiled to WebAssembly by scripts/build_wasm.sh, on Chromium's WebGPU, here
// SwiftShader), served by `wgc serve`. The built-in model loads and a reply streams in with no
// request to /v1 (every request of the page and its worker is watched, and the server's own
// request counters are read before and after); the greedy tokens of the fixture prompts
// (../shared/models/wgc-tiny-dict/golden.json) equal those of the native engine (`wgc generate
// --backend cpu-vulkan`: the GPU engine on the same SwiftShader) and begin the goldens' text (from
// transformers); wasm memory grows by less than the file (the weights go to the GPU tensor by
// tensor); Stop ends a reply; a file that is not a model, or is cut short, gets a clear message; the kernel
// playground's C++ path (the library's ops from the wasm build) gives its JavaScript driver's
// results; and a browser without WebGPU is told so. Skips, saying why, without the wasm build, Chromium or puppeteer-core.
// Usage: node local.test.mjs --wgc build/wgc --site build/web --deps .deps [--screenshots docs]
//        [--models ../shared/models (or $WGC_MODELS, as the C++ tests)] [--tokens N]
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, launch, loadPuppeteer, openPage, options, skip, startServer } from './harness.mjs';

const opt = options();
if (!opt.wgc || !opt.deps || !opt.site) throw new Error('usage: local.test.mjs --wgc BIN --site DIR --deps DIR');
const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../..');
const wasm = path.join(path.dirname(path.resolve(opt.wgc)), 'wasm', 'wgc-core.wasm');
if (!fs.existsSync(wasm)) skip(`no wasm build at ${wasm} (scripts/build_wasm.sh)`);
const golden = JSON.parse(fs.readFileSync(path.resolve(opt.models || process.env.WGC_MODELS || path.join(repo, '../shared/models'),
                                                       'wgc-tiny-dict/golden.json'), 'utf8'));
const N = Number(opt.tokens || 5); // greedy tokens per fixture prompt (SwiftShader is slow)
const driver = await loadPuppeteer(opt.deps);
const port = await freePort();
const url = `http://127.0.0.1:${port}`;
const server = await startServer(opt.wgc, ['serve', '--host', '127.0.0.1', '--port', String(port)], url);
const browser = await launch(driver, { webgpu: true });
const TIMEOUT = 900_000;

// The server's request counters for /v1 routes (wgc_requests_total{route="/v1/...",...}).
async function v1Requests() {
  const text = await (await fetch(`${url}/metrics`)).text();
  let n = 0;
  for (const m of text.matchAll(/^wgc_requests_total\{route="(\/v1\/[^"]*)"[^}]*\} (\d+)/gm)) n += Number(m[2]);
  return n;
}

// The page once, with the built-in model loaded; every request it and its worker make is kept.
let page;
const requests = [];
async function localPage() {
  if (page) return page;
  const before = await v1Requests();
  page = await browser.newPage();
  page.log = [];
  page.on('console', (m) => page.log.push(`console.${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => page.log.push(`page error: ${e.message}`));
  // Every request is recorded (not intercepted: with puppeteer's interception on, a dedicated
  // worker's requests hang, puppeteer/puppeteer#4208); the server's counters are the other check.
  page.on('request', (r) => requests.push(r.url()));
  // Dedicated workers' own requests (the model's weights, the wasm) through the DevTools target.
  page.on('workercreated', (w) => requests.push(`worker ${w.url()}`));
  await page.setViewport({ width: 1280, height: 900 });
  const t0 = Date.now();
  await page.goto(`${url}/local/`, { waitUntil: 'load' });
  await page.waitForFunction(() => ['idle', 'failed'].includes(document.body.dataset.state), { timeout: TIMEOUT });
  const state = await page.evaluate(() => document.body.dataset.state);
  assert.equal(state, 'idle', `the model did not load: ${await page.$eval('#error', (e) => e.textContent)}\n${page.log.join('\n')}`);
  console.log(`# the built-in model loaded in ${((Date.now() - t0) / 1000).toFixed(1)} s: ` +
              (await page.$eval('#engine', (e) => e.textContent.trim())));
  // The weights went to the GPU tensor by tensor: wasm memory did not grow by the file's size.
  const mem = await page.evaluate(() => globalThis.wgcEngine().info.wasm_memory);
  const file = fs.statSync(path.join(repo, 'models', 'wgc-tiny-dict-q8_0.gguf')).size;
  console.log(`# wasm memory: ${(mem.before_load / 2 ** 20).toFixed(1)} MiB before the load, ` +
              `${(mem.after_load / 2 ** 20).toFixed(1)} MiB after (its peak); the file ${(file / 2 ** 20).toFixed(1)} MiB`);
  assert.ok(mem.after_load - mem.before_load < file, `wasm memory grew by ${mem.after_load - mem.before_load} bytes ` +
            `loading a file of ${file}`);
  assert.equal(await v1Requests(), before, 'loading /local/ asked the server\'s API');
  return page;
}

const lastReply = (p) =>
  p.$$eval('.msg.assistant', (ms) => {
    const m = ms.at(-1);
    return { status: m.dataset.status, text: m.querySelector('.content').textContent, meta: m.querySelector('.meta')?.textContent ?? '' };
  });

async function setField(p, id, value) {
  await p.$eval(`#${id}`, (e, v) => {
    e.value = v;
    e.dispatchEvent(new Event('change'));
  }, value);
}

async function ask(p, text) {
  const before = await p.$$eval('.msg.assistant', (ms) => ms.length);
  await p.type('#prompt', text);
  await p.keyboard.press('Enter');
  await p.waitForFunction((n) => document.querySelectorAll('.msg.assistant').length > n, { timeout: TIMEOUT }, before);
}

test('the built-in model loads and a reply streams in, with no request to /v1', { timeout: TIMEOUT }, async () => {
  const p = await localPage();
  assert.equal(await p.$eval('#model', (e) => e.textContent), 'model: wgc-tiny-dict-q8_0.gguf');
  const before = await v1Requests();
  await setField(p, 'max_tokens', '8');
  await setField(p, 'seed', '3');
  await p.evaluate(() => {
    window.lengths = [];
    new MutationObserver((records) => {
      for (const r of records)
        if (r.target.classList?.contains('content') && r.target.closest('.msg.assistant') && r.addedNodes.length)
          window.lengths.push([...r.addedNodes].reduce((n, x) => n + x.textContent.length, 0));
    }).observe(document.getElementById('messages'), { childList: true, subtree: true });
  });
  await ask(p, 'A cat is');
  await p.waitForFunction(() => document.body.dataset.state === 'idle', { timeout: TIMEOUT });
  const r = await lastReply(p);
  assert.equal(r.status, 'done', `${await p.$eval('#error', (e) => e.textContent)}\n${p.log.join('\n')}`);
  assert.ok(r.text.trim().length > 0, 'an empty reply');
  const seen = new Set((await p.evaluate(() => window.lengths)).filter((n) => n > 0));
  assert.ok(seen.size >= 2, `the reply arrived in one piece (lengths seen: ${[...seen]})`);
  assert.match(r.meta, /^\d+ tokens? · [\d.]+ tokens\/s · time to first token \d+ ms/);
  assert.match(await p.$eval('#engine', (e) => e.textContent), /decode [\d.]+ tokens\/s/);
  assert.equal(await v1Requests(), before, 'the reply asked the server\'s API');
  const v1 = requests.filter((u) => u.includes('/v1/'));
  assert.deepEqual(v1, [], 'requests to /v1');
  assert.ok(requests.some((u) => u.endsWith('/local/wgc-worker.js')), `the worker was not seen: ${requests.join('\n')}`);
  if (opt.screenshots) await p.screenshot({ path: path.join(opt.screenshots, 'web_local.png') });
});

test('greedy tokens equal the native engine\'s for the fixture prompts', { timeout: TIMEOUT }, async () => {
  const p = await localPage();
  for (const { text, greedy_text: want } of golden.prompts) {
    const ours = await p.evaluate(async (prompt, n) => {
      const e = globalThis.wgcEngine();
      await e.reset();
      let streamed = '';
      for await (const t of e.generate(prompt, { maxTokens: n, temperature: 0, ignoreEos: true })) streamed += t.text;
      return { ...e.lastResult, streamed };
    }, text, N);
    const native = spawnSync(opt.wgc, ['generate', '--backend', 'cpu-vulkan', '-p', text, '-n', String(N), '--temp', '0',
                                       '--ignore-eos', '--json'], { encoding: 'utf8' });
    assert.equal(native.status, 0, native.stderr);
    const n = JSON.parse(native.stdout);
    assert.deepEqual(ours.prompt_ids, n.prompt_ids, `prompt ids of ${JSON.stringify(text)}`);
    assert.deepEqual(ours.ids, n.ids, `greedy ids of ${JSON.stringify(text)}`);
    assert.equal(ours.streamed, ours.text);
    assert.ok(want.startsWith(ours.text), `${JSON.stringify(ours.text)} does not begin the golden ${JSON.stringify(want)}`);
    console.log(`# ${JSON.stringify(text)} -> ${JSON.stringify(ours.text)} (${ours.ids.join(' ')}), ` +
                `browser decode ${ours.timings.decode_tps.toFixed(2)} t/s, native ${n.timings.decode_tokens_per_s.toFixed(2)} t/s`);
  }
});

test('Stop ends a reply early and the engine goes on', { timeout: TIMEOUT }, async () => {
  const p = await localPage();
  await setField(p, 'max_tokens', '400');
  await ask(p, 'The word house means');
  await p.waitForFunction(() => document.querySelector('.msg.assistant:last-child .content').textContent.length > 0,
                          { timeout: TIMEOUT });
  await p.click('#stop');
  await p.waitForFunction(() => document.body.dataset.state === 'idle', { timeout: 60_000 });
  const stopped = await lastReply(p);
  assert.equal(stopped.status, 'stopped');
  assert.match(stopped.meta, /stopped$/);
  const tokens = Number(/^(\d+)/.exec(stopped.meta)[1]);
  assert.ok(tokens < 400, stopped.meta);
  await new Promise((res) => setTimeout(res, 500));
  assert.equal((await lastReply(p)).text, stopped.text, 'text kept arriving after Stop');
  const after = await p.evaluate(async () => {
    const e = globalThis.wgcEngine();
    for await (const _ of e.generate('Love is', { maxTokens: 2, temperature: 0 })); // eslint-disable-line no-unused-vars
    return e.lastResult;
  });
  assert.equal(after.ids.length, 2, JSON.stringify(after));
});

test('a file that is not a model, or is cut short, gets a clear message, and the model stays', { timeout: TIMEOUT }, async () => {
  const p = await localPage();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wgc-local-'));
  const model = fs.readFileSync(path.join(repo, 'models', 'wgc-tiny-dict-q8_0.gguf'));
  const cases = [
    ['notes.gguf', 'these are not the weights you are looking for\n'.repeat(20), /not a GGUF file: the magic is/],
    ['cut.gguf', model.subarray(0, 3_000_000), /cut\.gguf: tensor '[^']*': data .* runs past the end of the file \(size 3000000\)/],
  ];
  for (const [name, bytes, want] of cases) {
    const bad = path.join(dir, name);
    fs.writeFileSync(bad, bytes);
    await p.$eval('#error', (e) => { e.hidden = true; });
    await (await p.$('#model-file')).uploadFile(bad);
    await p.waitForFunction(() => !document.getElementById('error').hidden, { timeout: TIMEOUT });
    const msg = await p.$eval('#error', (e) => e.textContent);
    assert.match(msg, new RegExp(`^Could not load ${name.replace('.', '\\.')}: `), msg);
    assert.match(msg, want, msg);
    await p.waitForFunction(() => document.body.dataset.state === 'idle', { timeout: TIMEOUT });
    assert.equal(await p.$eval('#model', (e) => e.textContent), 'model: wgc-tiny-dict-q8_0.gguf');
  }
  fs.rmSync(dir, { recursive: true, force: true });
});

test('the kernel playground runs the C++ ops through the wasm build, with its JS driver\'s results',
     { timeout: TIMEOUT }, async () => {
  const p = await openPage(browser, `${url}/kernels/?only=add,map,reduce,sobel`);
  await p.waitForFunction(() => document.body.dataset.status === 'ready', { timeout: TIMEOUT });
  await p.click('#run-cpp');
  await p.waitForFunction(() => document.body.dataset.cpp, { timeout: TIMEOUT });
  const rows = await p.$$eval('#cpp tbody tr', (trs) =>
    trs.map((tr) => ({ result: tr.dataset.result, identical: tr.dataset.identical, cells: [...tr.cells].map((c) => c.textContent) })));
  assert.ok(rows.length >= 10, `${await p.$eval('#cpp-summary', (e) => e.textContent)}\n${p.log.join('\n')}`);
  for (const k of ['add', 'map x + y', 'reduce sum', 'reduce max', 'sobel'])
    assert.ok(rows.some((r) => r.cells[0] === k), `no ${k} row`);
  for (const r of rows) {
    assert.equal(r.result, 'pass', r.cells.join(' | '));
    assert.equal(r.identical, 'true', `the C++ op differs from the JS driver: ${r.cells.join(' | ')}`);
  }
  // A C++ exception thrown after the engine has slept on the GPU (ASYNCIFY rewound the stack)
  // reaches the page as its message.
  const err = await p.evaluate(async () => {
    const { createEngine } = await import('../local/wgc.js');
    const e = await createEngine();
    const a = new Float32Array(8);
    await e.op('map', { n: 8, a, b: a, outLength: 8 }); // the context is made (waits) ...
    try {
      await e.op('map', { version: 'warp9', n: 8, a, b: a, outLength: 8 }); // ... then this throws
      return 'no error';
    } catch (x) {
      return x.message;
    } finally {
      e.terminate();
    }
  });
  assert.match(err, /warp9/);
  await p.close();
});

test('without WebGPU the page says so', { timeout: TIMEOUT }, async () => {
  const plain = await launch(driver, { webgpu: false });
  try {
    const p = await openPage(plain, `${url}/local/`);
    await p.waitForFunction(() => document.body.dataset.state === 'failed', { timeout: 60_000 });
    assert.match(await p.$eval('#error', (e) => e.textContent), /WebGPU/);
    assert.equal(await p.$eval('#send', (e) => e.disabled), true);
  } finally {
    await plain.close();
  }
});

test.after(async () => {
  await browser.close();
  await server.stop();
});
