// The playground's second driver: the library's C++ ops (src/ops: map, matmul, reduce, stencil)
// compiled to WebAssembly with the rest of wgc (../local/wgc.js; wasm/op_api.cpp), on the same
// data as the JavaScript driver (cases.js). Each row runs both drivers on the browser's WebGPU and
// compares the C++ result with the JavaScript driver's (the same kernel file, constants and grid
// should give the same numbers) and with the JavaScript reference (reference.js).
import * as cases from './cases.js';
import * as ref from './reference.js';

// The rows: kernel, version, problem, a C++ request, the JavaScript driver's run, the reference
// and its tolerance (as the checks of playground.js).
export function cppCases(gpu, image) {
  const list = [];
  const n = 100_003;
  const a = ref.randomArray(n, 1), b = ref.randomArray(n, 2);
  const sum = () => ({ value: ref.add(a, b), tolerance: 1e-6 });
  list.push({ kernel: 'add', version: 'add.wgsl', problem: `n=${n}`, op: ['add', { n, a, b, outLength: n }],
              js: () => cases.add(gpu, a, b), want: sum });
  for (const v of cases.mapVersions)
    list.push({ kernel: 'map x + y', version: v, problem: `n=${n}`, op: ['map', { version: v, n, a, b, outLength: n }],
                js: () => cases.mapAdd(gpu, v, a, b), want: sum });

  const [m, mn, k] = [133, 260, 68];
  const ma = ref.randomArray(m * k, 3), mb = ref.randomArray(k * mn, 4);
  let bufs = null;
  for (const v of cases.matmulVersions) {
    if (cases.matmulUnsupported(v, m, mn, k)) continue;
    list.push({ kernel: 'matmul', version: v, problem: `${m}x${k} · ${k}x${mn}`,
                op: ['matmul', { version: v, m, n: mn, k, a: ma, b: mb, outLength: m * mn }],
                js: async () => {
                  bufs ??= cases.matmulBuffers(gpu, ma, mb, m, mn, k);
                  return { out: (await cases.matmul(gpu, v, bufs)).out };
                },
                want: () => ({ value: ref.matmul(ma, mb, m, mn, k), tolerance: 1e-5 * (1 + Math.sqrt(k)) }) });
  }

  const x = ref.randomArray(n, 5);
  for (const op of ['sum', 'max'])
    for (const v of cases.reduceVersions) {
      if (cases.reduceUnsupported(gpu, v)) continue;
      list.push({ kernel: `reduce ${op}`, version: v, problem: `n=${n}`, scalar: true,
                  op: ['reduce', { version: v, reduce: op, n, a: x, outLength: 1 }],
                  js: () => cases.reduce(gpu, v, x, op), want: () => ref.reduce(x, op) });
    }

  const { data, w, h } = image;
  const sigma = 1.5;
  for (const st of ['sobel', 'blur'])
    for (const v of cases.stencilVersions) {
      if (cases.stencilUnsupported(gpu, st, v, sigma)) continue;
      list.push({ kernel: st, version: v, problem: `${w}x${h} RGBA`,
                  op: [st, { version: v, width: w, height: h, channels: 4, sigma, a: data, outLength: w * h * 4 }],
                  js: () => (st === 'sobel' ? cases.sobel(gpu, v, data, w, h) : cases.blur(gpu, v, data, w, h, sigma)),
                  want: () => ({ value: st === 'sobel' ? ref.sobel(data, w, h, 4) : ref.blur(data, w, h, 4, sigma),
                                 tolerance: 2e-6 }) });
    }
  return list;
}

// Runs one row: { cppMs, vsJs: {error, identical}, vsRef: {error, tolerance}, ok, detail }.
export async function runCppCase(engine, gpu, c) {
  const [name, args] = c.op;
  const t0 = performance.now();
  const cpp = await engine.op(name, args);
  const cppMs = performance.now() - t0;
  const js = (await c.js()).out;
  const want = c.want();
  let vsRef, vsJs, identical;
  if (c.scalar) {
    const scale = Math.max(Math.abs(want.value), 1e-30);
    vsRef = { error: Math.abs(cpp[0] - want.value) / scale, tolerance: want.tolerance / scale };
    vsJs = Math.abs(cpp[0] - js[0]) / scale;
    identical = Object.is(cpp[0], js[0]);
  } else {
    const e = ref.relError(cpp, want.value);
    vsRef = { error: e.error, tolerance: want.tolerance, index: e.index };
    vsJs = ref.relError(cpp, js).error;
    identical = cpp.length === js.length && cpp.every((v, i) => Object.is(v, js[i]));
  }
  const ok = vsRef.error <= vsRef.tolerance && vsJs <= vsRef.tolerance;
  const detail = ok ? (identical ? 'pass (identical to the JS driver)' : 'pass')
                    : vsRef.error > vsRef.tolerance ? `MISMATCH with the reference (${vsRef.error.toExponential(2)})`
                                                    : `MISMATCH with the JS driver (${vsJs.toExponential(2)})`;
  return { cppMs, vsJs, identical, vsRef, ok, detail };
}
