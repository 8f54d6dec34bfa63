// The kernel playground: runs the library's WGSL kernels through WebGPU and checks each result
// against the JavaScript reference; without WebGPU, says so and runs the references alone.
// URL parameters (for tests and links): run=1 runs the checks and the timing table on load;
// only=<word>,... keeps the checks (and the matmul timing table) whose kernel name contains one of
// the words; cpp=1 (with run=1) also runs the C++ ops through the wasm build (cpp.js);
// size=N and repeats=R set the timing table's problem; inject=<kernel>/<version>
// corrupts one element of that case's GPU result before its check (the page's self-test: that row
// must fail).
import { initTheme } from '../theme.js';
import { openGpu } from './webgpu.js';
import * as cases from './cases.js';
import * as ref from './reference.js';
import { cppCases, runCppCase } from './cpp.js';

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const inject = params.get('inject');
const only = params.get('only')?.split(',').filter(Boolean) ?? null;
const wanted = (kernel) => !only || only.some((w) => kernel.includes(w));
const MAX_SIDE = 384; // longest image side the page works on (the JS references are plain loops)
const SHOWN = 'naive_vec4'; // the stencil version whose output is shown: what ops/stencil.cpp's Auto picks for RGBA

let gpu = null;
let image = null; // { data: Float32Array RGBA in [0, 1], w, h }

// --- table helpers: text only, never markup from data ------------------------------------------
function cell(row, text, cls) {
  const td = row.insertCell();
  td.textContent = text;
  if (cls) td.className = cls;
  return td;
}
const fmtMs = (ms) => (ms === null || ms === undefined ? '-' : ms < 1 ? ms.toFixed(3) : ms.toFixed(1));
const fmtErr = (e) => (e === null ? '-' : e === Infinity ? 'inf' : e.toExponential(2));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function timed(fn) {
  const t0 = performance.now();
  const value = fn();
  return { value, ms: performance.now() - t0 };
}

// Corrupts one element of a result when the URL asks for it (see the header).
function maybeInject(id, out) {
  if (inject !== id) return out;
  const bad = Float32Array.from(out);
  bad[Math.floor(bad.length / 2)] += 1 + Math.abs(bad[Math.floor(bad.length / 2)]);
  return bad;
}

// --- the checks ----------------------------------------------------------------------------
// A check: kernel, version, problem (text), want() -> { value, tolerance } (the JS reference),
// gpu() -> { out, ms }, why (non-empty: the adapter cannot run it, and why), compare ('scalar' for
// one value; arrays by default), show(out) (draws the result, for the images).
function elementwiseChecks() {
  const n = 100_003;
  const a = ref.randomArray(n, 1), b = ref.randomArray(n, 2);
  const want = () => ({ value: ref.add(a, b), tolerance: 1e-6 });
  const list = [{ kernel: 'add', version: 'add.wgsl', problem: `n=${n}`, want, gpu: () => cases.add(gpu, a, b) }];
  for (const v of cases.mapVersions)
    list.push({ kernel: 'map x + y', version: v, problem: `n=${n}`, want, gpu: () => cases.mapAdd(gpu, v, a, b) });
  return list;
}

function matmulChecks() {
  const [m, n, k] = [133, 260, 68];
  const a = ref.randomArray(m * k, 3), b = ref.randomArray(k * n, 4);
  let bufs = null;
  const want = () => ({ value: ref.matmul(a, b, m, n, k), tolerance: 1e-5 * (1 + Math.sqrt(k)) });
  return cases.matmulVersions.map((v) => ({
    kernel: 'matmul', version: v, problem: `${m}x${k} · ${k}x${n}`, want,
    why: cases.matmulUnsupported(v, m, n, k),
    gpu: async () => {
      bufs ??= cases.matmulBuffers(gpu, a, b, m, n, k);
      const r = await cases.matmul(gpu, v, bufs);
      return { out: r.out, ms: r.times[0] };
    },
  }));
}

function reduceChecks() {
  const n = 100_003;
  const x = ref.randomArray(n, 5);
  const list = [];
  for (const op of ['sum', 'max'])
    for (const v of cases.reduceVersions)
      list.push({ kernel: `reduce ${op}`, version: v, problem: `n=${n}`, compare: 'scalar',
                  want: () => ref.reduce(x, op), why: gpu ? cases.reduceUnsupported(gpu, v) : '',
                  gpu: () => cases.reduce(gpu, v, x, op) });
  return list;
}

function convChecks() {
  const d = { n: 2, c_in: 6, h: 21, w: 17, c_out: 10, kh: 3, kw: 3, stride: 1, pad: 1, dil: 1, groups: 2 };
  const x = ref.randomArray(d.n * d.c_in * d.h * d.w, 9);
  const w = ref.randomArray(d.c_out * (d.c_in / d.groups) * d.kh * d.kw, 10);
  const bias = ref.randomArray(d.c_out, 11);
  const k = (d.c_in / d.groups) * d.kh * d.kw;
  const want = () => ({ value: ref.conv2dBiasRelu(x, w, bias, d), tolerance: 1e-5 * (1 + Math.sqrt(k)) });
  return cases.convVersions.map((v) => ({
    kernel: 'conv2d + bias + relu', version: v, want, why: gpu ? cases.convUnsupported(gpu, v, d) : '',
    problem: `${d.n}x${d.c_in}x${d.h}x${d.w}, ${d.c_out} filters ${d.kh}x${d.kw}, pad ${d.pad}, groups ${d.groups}`,
    gpu: () => cases.conv2dBiasRelu(gpu, v, x, w, bias, d),
  }));
}

function stencilChecks() {
  const { data, w, h } = image;
  const sigma = Number($('sigma').value);
  const list = [];
  for (const op of ['sobel', 'blur']) {
    const want = op === 'sobel' ? () => ({ value: ref.sobel(data, w, h, 4), tolerance: 2e-6 })
                                : () => ({ value: ref.blur(data, w, h, 4, sigma), tolerance: 2e-6 });
    for (const v of cases.stencilVersions)
      list.push({ kernel: op, version: v, problem: `${w}x${h} RGBA${op === 'blur' ? `, sigma ${sigma}` : ''}`, want,
                  why: gpu ? cases.stencilUnsupported(gpu, op, v, sigma) : '',
                  gpu: () => (op === 'sobel' ? cases.sobel(gpu, v, data, w, h) : cases.blur(gpu, v, data, w, h, sigma)),
                  show: v === SHOWN ? (out) => paint($(op === 'sobel' ? 'img-sobel' : 'img-blur'), out, w, h) : null });
  }
  return list;
}

// Runs one check and appends its row; returns 'pass', 'fail', 'skip' or 'cpu'.
async function runCheck(tbody, c) {
  const row = tbody.insertRow();
  cell(row, c.kernel);
  cell(row, c.version);
  cell(row, c.problem);
  const gpuCell = cell(row, '…', 'num'), jsCell = cell(row, '', 'num'), errCell = cell(row, '', 'num');
  const tolCell = cell(row, '', 'num'), result = cell(row, 'running');
  const want = timed(c.want);
  jsCell.textContent = fmtMs(want.ms);
  if (!gpu) {
    gpuCell.textContent = '-';
    if (c.show) c.show(want.value.value);
    return finish(row, result, 'cpu', 'CPU path (no WebGPU)');
  }
  if (c.why) {
    gpuCell.textContent = '-';
    return finish(row, result, 'skip', `skipped: ${c.why}`);
  }
  try {
    const got = await c.gpu();
    gpuCell.textContent = fmtMs(got.ms);
    const out = maybeInject(`${c.kernel}/${c.version}`, got.out);
    const { value, tolerance } = want.value;
    tolCell.textContent = fmtErr(tolerance);
    let ok, detail;
    if (c.compare === 'scalar') {
      const diff = Math.abs(out[0] - value), scale = Math.max(Math.abs(value), 1e-30);
      errCell.textContent = fmtErr(diff / scale);
      tolCell.textContent = fmtErr(tolerance / scale);
      ok = Number.isFinite(out[0]) && diff <= tolerance;
      detail = ok ? '' : `got ${out[0]}, want ${value} (|diff| ${diff.toExponential(2)} > ${tolerance.toExponential(2)})`;
    } else {
      const e = ref.relError(out, value);
      errCell.textContent = fmtErr(e.error);
      ok = e.error <= tolerance;
      detail = ok ? '' : `at index ${e.index}: got ${out[e.index]}, want ${value[e.index]}`;
    }
    if (c.show) c.show(out);
    return finish(row, result, ok ? 'pass' : 'fail', ok ? 'pass' : `MISMATCH ${detail}`);
  } catch (e) {
    return finish(row, result, 'fail', `error: ${e.message}`);
  }
}

function finish(row, td, status, text) {
  row.dataset.result = status;
  td.textContent = text;
  td.className = status === 'pass' ? 'pass' : status === 'fail' ? 'fail' : 'skip';
  return status;
}

// Runs checks into a table, keeping its summary line up to date.
async function runChecks(table, summary, list) {
  const tbody = table.tBodies[0];
  tbody.replaceChildren();
  const counts = { pass: 0, fail: 0, skip: 0, cpu: 0 };
  for (const c of list.filter((c) => wanted(c.kernel))) {
    counts[await runCheck(tbody, c)]++;
    summary.textContent = gpu ? `${counts.pass} passed, ${counts.fail} failed, ${counts.skip} skipped`
                              : `${counts.cpu} run on the CPU path (JavaScript references)`;
  }
}

const runKernelChecks = () =>
  runChecks($('checks'), $('summary'), [...elementwiseChecks(), ...matmulChecks(), ...reduceChecks(), ...convChecks()]);
const runImageChecks = () => runChecks($('image-checks'), $('image-summary'), stencilChecks());

// --- the C++ ops through the wasm build (cpp.js) ---------------------------------------------
let engine = null;
async function runCpp() {
  const tbody = $('cpp').tBodies[0];
  tbody.replaceChildren();
  const counts = { pass: 0, fail: 0 };
  if (!gpu) {
    $('cpp-summary').textContent = 'no WebGPU here: the C++ ops cannot run';
    return;
  }
  try {
    const { createEngine } = await import('../local/wgc.js');
    engine ??= await createEngine();
  } catch (e) {
    $('cpp-summary').textContent = `the wasm build did not start: ${e.message}`;
    document.body.dataset.cpp = 'error';
    return;
  }
  for (const c of cppCases(gpu, image).filter((c) => wanted(c.kernel))) {
    const row = tbody.insertRow();
    for (const t of [c.kernel, c.version, c.problem]) cell(row, t);
    const cells = [cell(row, '…', 'num'), cell(row, '', 'num'), cell(row, '', 'num'), cell(row, '', 'num')];
    const result = cell(row, 'running');
    try {
      const r = await runCppCase(engine, gpu, c);
      cells[0].textContent = fmtMs(r.cppMs);
      cells[1].textContent = r.identical ? 'identical' : fmtErr(r.vsJs);
      cells[2].textContent = fmtErr(r.vsRef.error);
      cells[3].textContent = fmtErr(r.vsRef.tolerance);
      row.dataset.identical = r.identical;
      counts[finish(row, result, r.ok ? 'pass' : 'fail', r.detail)]++;
    } catch (e) {
      counts[finish(row, result, 'fail', `error: ${e.message}`)]++;
    }
    $('cpp-summary').textContent = `${counts.pass} passed, ${counts.fail} failed`;
  }
  document.body.dataset.cpp = 'done';
}

// --- the matmul timing table (wgc bench's columns) -------------------------------------------
async function runTiming() {
  const size = Number($('size').value), repeats = Math.max(1, Math.min(50, Number($('repeats').value) || 1));
  const tbody = $('timing').tBodies[0];
  tbody.replaceChildren();
  const m = size, n = size, k = size, flops = 2 * m * n * k;
  const a = ref.randomArray(m * k, 7), b = ref.randomArray(k * n, 8);
  // The JavaScript loop, repeated until 20 ms have passed (the browser's clock is coarse).
  const js = timed(() => ref.matmul(a, b, m, n, k));
  for (let runs = 1, total = js.ms; total < 20 && runs < 50; runs++) {
    total += timed(() => ref.matmul(a, b, m, n, k)).ms;
    js.ms = total / (runs + 1);
  }
  const tol = 1e-5 * (1 + Math.sqrt(k));
  const gflops = (ms) => (ms ? (flops / (ms * 1e6)).toFixed(2) : '-');
  const versions = gpu ? cases.matmulVersions : ['JavaScript'];
  const bufs = gpu ? cases.matmulBuffers(gpu, a, b, m, n, k) : null;
  for (const v of versions) {
    const row = tbody.insertRow();
    cell(row, 'matmul');
    cell(row, v);
    cell(row, `${size}^3`);
    const cells = [cell(row, '…', 'num'), cell(row, '', 'num'), cell(row, fmtMs(js.ms), 'num'),
                   cell(row, gflops(js.ms), 'num'), cell(row, '', 'num'), cell(row, '', 'num')];
    const check = cell(row, '');
    if (!gpu) {
      cells[0].textContent = '-';
      finish(row, check, 'cpu', 'CPU path');
      continue;
    }
    try {
      await cases.matmul(gpu, v, bufs); // warm-up: pipeline creation, first-use costs
      const r = await cases.matmul(gpu, v, bufs, repeats);
      const ms = median(r.times);
      const e = ref.relError(maybeInject(`matmul/${v}`, r.out), js.value);
      cells[0].textContent = fmtMs(ms);
      cells[1].textContent = gflops(ms);
      cells[4].textContent = `${(js.ms / ms).toFixed(2)}x`;
      cells[5].textContent = fmtErr(e.error);
      finish(row, check, e.error <= tol ? 'pass' : 'fail', e.error <= tol ? 'ok' : `MISMATCH at ${e.index}`);
    } catch (err) {
      finish(row, check, 'fail', `error: ${err.message}`);
    }
  }
  $('timing-note').textContent = !gpu
    ? 'No WebGPU here: only the JavaScript reference ran.'
    : `GPU ms: median of ${repeats} ${gpu.timestamps ? 'timestamp-query times of the compute pass (the browser may round them to 0.1 ms)' : 'wall-clock submit-to-done times (no timestamp-query feature)'}; ` +
      `JS ms: the plain JavaScript loop (double accumulation), mean of as many runs as fill 20 ms; speedup = JS ms / GPU ms.`;
}

// --- images ---------------------------------------------------------------------------------
// A test pattern at an awkward size (no tile divides it): gradients, rings and bars.
function patternImage() {
  const w = 203, h = 157;
  const c = new OffscreenCanvas(w, h).getContext('2d');
  const g = c.createLinearGradient(0, 0, w, h);
  g.addColorStop(0, '#2040a0');
  g.addColorStop(1, '#f0c040');
  c.fillStyle = g;
  c.fillRect(0, 0, w, h);
  for (let r = 70; r > 0; r -= 14) {
    c.beginPath();
    c.arc(w * 0.62, h * 0.5, r, 0, 2 * Math.PI);
    c.fillStyle = r % 28 ? '#e04030' : '#ffffff';
    c.fill();
  }
  for (let x = 8; x < 70; x += 12) {
    c.fillStyle = '#101010';
    c.fillRect(x, 20, 5, h - 40);
  }
  return fromContext(c, w, h);
}

function fromContext(ctx, w, h) {
  const px = ctx.getImageData(0, 0, w, h).data;
  const data = new Float32Array(w * h * 4);
  for (let i = 0; i < data.length; i++) data[i] = px[i] / 255;
  return { data, w, h };
}

async function loadImage(file) {
  const bmp = await createImageBitmap(file);
  const s = Math.min(1, MAX_SIDE / Math.max(bmp.width, bmp.height));
  const w = Math.max(1, Math.round(bmp.width * s)), h = Math.max(1, Math.round(bmp.height * s));
  const c = new OffscreenCanvas(w, h).getContext('2d');
  c.drawImage(bmp, 0, 0, w, h);
  return fromContext(c, w, h);
}

// Draws an RGBA f32 image (values clamped to [0, 1], alpha shown opaque).
function paint(canvas, data, w, h) {
  canvas.width = w;
  canvas.height = h;
  const ctx = canvas.getContext('2d');
  const img = ctx.createImageData(w, h);
  for (let i = 0; i < w * h; i++) {
    for (let ch = 0; ch < 3; ch++) img.data[i * 4 + ch] = Math.round(255 * Math.min(1, Math.max(0, data[i * 4 + ch])));
    img.data[i * 4 + 3] = 255;
  }
  ctx.putImageData(img, 0, 0);
}

// --- wiring ---------------------------------------------------------------------------------
async function busy(fn) {
  document.body.dataset.status = 'running';
  for (const b of document.querySelectorAll('button.run')) b.disabled = true;
  try {
    await fn();
  } finally {
    for (const b of document.querySelectorAll('button.run')) b.disabled = false;
    document.body.dataset.status = 'done';
  }
}

async function main() {
  initTheme($('theme'));
  const opened = await openGpu();
  gpu = opened.gpu || null;
  if (gpu) {
    $('adapter').textContent = `WebGPU: ${gpu.name()}${gpu.subgroups ? ', subgroups' : ''}${gpu.timestamps ? ', timestamps' : ''}`;
  } else {
    $('adapter').textContent = 'no WebGPU: CPU path';
    const note = $('no-webgpu');
    note.hidden = false;
    note.textContent = `WebGPU is not available here: ${opened.why}. The page runs the JavaScript CPU references ` +
      'instead (no kernel checks are possible). Chrome and Edge 113+ have WebGPU; on Linux start Chromium with ' +
      '--enable-unsafe-webgpu.';
  }
  image = patternImage();
  paint($('img-input'), image.data, image.w, image.h);
  $('shown-version').textContent = gpu ? SHOWN : 'JavaScript reference';
  if (params.has('size')) $('size').value = params.get('size');
  if (params.has('repeats')) $('repeats').value = params.get('repeats');
  for (const id of ['run-checks', 'run-timing', 'run-cpp']) {
    $(id).classList.add('run');
    $(id).disabled = id === 'run-cpp' && !gpu;
  }
  $('run-checks').addEventListener('click', () => busy(async () => {
    await runKernelChecks();
    await runImageChecks();
  }));
  $('run-timing').addEventListener('click', () => busy(runTiming));
  $('run-cpp').addEventListener('click', () => busy(runCpp));
  $('image').addEventListener('change', async (e) => {
    const file = e.target.files[0];
    if (!file) return;
    await busy(async () => {
      image = await loadImage(file);
      paint($('img-input'), image.data, image.w, image.h);
      await runImageChecks();
    });
  });
  document.body.dataset.status = 'ready';
  if (params.get('run') === '1')
    await busy(async () => {
      await runKernelChecks();
      if (wanted('matmul')) await runTiming();
      await runImageChecks();
      if (gpu && params.get('cpp') === '1') await runCpp();
    });
}

main().catch((e) => {
  document.body.dataset.status = 'error';
  $('summary').textContent = `error: ${e.message}`;
});
