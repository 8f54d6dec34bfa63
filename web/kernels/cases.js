// How the playground runs each kernel of the library on WebGPU: which bundled file, override
// constants, bindings and grid, the same choices as src/ops/*.cpp makes for them (those files are
// the reference for every number here). Each run returns { out, ms }: the result read back and
// the GPU time of its compute pass (timestamp queries; null without them).
import { ceilDiv, groups1d } from './webgpu.js';
import { conv2dOut, gaussianWeights, reduceOps } from './reference.js';

const WG = 256; // the 1-D kernels' workgroup (the WG override's default)

// Whether the adapter is a CPU one (SwiftShader): ops size their grids for it as for 2 cores.
const isCpu = (gpu) => gpu.info.architecture === 'swiftshader' || gpu.info.isFallbackAdapter === true;

async function runOnce(gpu, dispatches, out, count) {
  const ms = await gpu.run(dispatches);
  return { out: await gpu.read(out, count), ms };
}

// --- elementwise: map/add.wgsl and the binary map ladder with the expression x + y ------------
export const mapVersions = ['scalar', 'vec4', 'grid-stride'];
const mapFiles = { scalar: 'map/binary_scalar.wgsl', vec4: 'map/binary_vec4.wgsl', 'grid-stride': 'map/binary_grid.wgsl' };

export async function add(gpu, a, b) {
  const n = a.length;
  const pipeline = await gpu.pipeline('map/add.wgsl', { constants: { WG } });
  const out = gpu.buffer(n);
  return runOnce(gpu, [{ pipeline, buffers: [gpu.buffer(a), gpu.buffer(b), out], params: gpu.params([n]),
                         groups: groups1d(gpu, ceilDiv(n, WG)) }], out, n);
}

export async function mapAdd(gpu, version, a, b) {
  const n = a.length;
  const pipeline = await gpu.pipeline(mapFiles[version], { constants: { WG }, expr: 'x + y' });
  let groups;
  if (version === 'scalar') groups = groups1d(gpu, ceilDiv(n, WG));
  else if (version === 'vec4') groups = groups1d(gpu, ceilDiv(ceilDiv(n, 4), WG));
  else {
    const cap = Math.min(isCpu(gpu) ? 64 : 2048, gpu.device.limits.maxComputeWorkgroupsPerDimension);
    groups = [Math.min(Math.max(ceilDiv(ceilDiv(n, 4), WG * 4), 1), cap), 1, 1];
  }
  const out = gpu.buffer(n);
  return runOnce(gpu, [{ pipeline, buffers: [gpu.buffer(a), gpu.buffer(b), out], params: gpu.params([n]), groups }],
                 out, n);
}

// --- matmul: the ladder of ops/matmul.cpp -------------------------------------------------------
export const matmulVersions = ['naive', 'tiled', 'regtile', 'regtile-vec4', 'regtile-vec4-grouped', 'vec4-prefetch'];
const matmulKernels = {
  naive: { file: 'matmul/naive.wgsl', block: 16 },
  tiled: { file: 'matmul/tiled.wgsl', block: 16 },
  regtile: { file: 'matmul/regtile.wgsl', block: 128 },
  'regtile-vec4': { file: 'matmul/regtile_vec4.wgsl', block: 128, vec4: true },
  'regtile-vec4-grouped': { file: 'matmul/regtile_vec4.wgsl', block: 128, vec4: true, constants: { GROUP_M: 8 } },
  'vec4-prefetch': { file: 'matmul/regtile_vec4.wgsl', block: 128, vec4: true, constants: { PREFETCH: 1 } },
};

// Why version v cannot run an M x K by K x N product, or '' when it can.
export function matmulUnsupported(version, m, n, k) {
  return matmulKernels[version].vec4 && (k % 4 || n % 4) ? 'needs K and N to be multiples of 4' : '';
}

// Buffers for one matmul problem, made once and reused by every version and repeat.
export function matmulBuffers(gpu, a, b, m, n, k) {
  return { a: gpu.buffer(a), b: gpu.buffer(b), m, n, k };
}

export async function matmul(gpu, version, bufs, repeats = 1) {
  const { m, n, k } = bufs;
  const kern = matmulKernels[version];
  const pipeline = await gpu.pipeline(kern.file, { constants: kern.constants || {} });
  const c = gpu.buffer(m * n);
  const d = { pipeline, buffers: [bufs.a, bufs.b, c], params: gpu.params([m, n, k, 0]),
              groups: [ceilDiv(n, kern.block), ceilDiv(m, kern.block), 1] };
  const times = [];
  for (let r = 0; r < repeats; r++) {
    const t0 = performance.now();
    const ms = await gpu.run([d]);
    times.push(ms ?? performance.now() - t0);
  }
  return { out: await gpu.read(c, m * n), times };
}

// --- reduction: ops/reduce.cpp's passes -------------------------------------------------------
export const reduceVersions = ['naive', 'vec4', 'subgroup'];
const reduceFiles = { naive: 'reduce/naive.wgsl', vec4: 'reduce/vec4.wgsl', subgroup: 'reduce/subgroup.wgsl' };
const f32Bits = (v) => new Uint32Array(new Float32Array([v]).buffer)[0];

export function reduceUnsupported(gpu, version) {
  return version === 'subgroup' && !gpu.subgroups ? 'needs the subgroups feature, which this adapter lacks' : '';
}

export async function reduce(gpu, version, x, op) {
  const pipeline = await gpu.pipeline(reduceFiles[version], { constants: { WG, OP: reduceOps[op].code } });
  const ident = f32Bits(reduceOps[op].identity);
  const out = gpu.buffer(1);
  const dispatches = [];
  const pass = (src, m, dst, groups) =>
    dispatches.push({ pipeline, buffers: [src, dst], params: gpu.params([m, ident, { f32: 1 }]), groups });
  let src = gpu.buffer(x);
  let m = x.length;
  if (version === 'naive') {
    for (;;) {
      const groups = Math.max(ceilDiv(m, WG), 1);
      if (groups === 1) break;
      const partial = gpu.buffer(groups);
      pass(src, m, partial, groups1d(gpu, groups));
      src = partial;
      m = groups;
    }
    pass(src, m, out, [1, 1, 1]);
  } else {
    const cap = Math.min(isCpu(gpu) ? 16 : 1024, gpu.device.limits.maxComputeWorkgroupsPerDimension);
    const groups = Math.min(Math.max(ceilDiv(ceilDiv(m, 4), WG * 4), 1), cap);
    if (groups > 1) {
      const partial = gpu.buffer(groups);
      pass(src, m, partial, [groups, 1, 1]);
      src = partial;
      m = groups;
    }
    pass(src, m, out, [1, 1, 1]);
  }
  return runOnce(gpu, dispatches, out, 1);
}

// --- stencils: ops/stencil.cpp's versions and its StencilConfig defaults, on RGBA images -------
export const stencilVersions = ['naive', 'tiled', 'naive_vec4', 'tiled_vec4'];
const shapes = {
  sobel_naive: [32, 8, 1], sobel_tiled: [64, 4, 4], sobel_tiled_vec4: [32, 8, 1], blur_naive: [64, 4, 1],
  blur_tiled_h: [64, 4, 2], blur_tiled_v: [32, 8, 2], blur_tiled_h_vec4: [16, 16, 1], blur_tiled_v_vec4: [16, 16, 1],
};
const isVec4 = (v) => v.endsWith('_vec4');
const isTiled = (v) => v.startsWith('tiled');
const stencilFile = (op, v) => `stencil/${op}_${isTiled(v) ? 'tiled' : 'naive'}${isVec4(v) ? '_vec4' : ''}.wgsl`;

// Why a tiled stencil cannot run (its tile and halo exceed the workgroup memory), or ''.
export function stencilUnsupported(gpu, op, version, sigma) {
  if (!isTiled(version)) return '';
  const elem = isVec4(version) ? 16 : 4;
  const limit = gpu.device.limits.maxComputeWorkgroupStorageSize;
  let need;
  if (op === 'sobel') {
    const [x, y, per] = isVec4(version) ? shapes.sobel_tiled_vec4 : shapes.sobel_tiled;
    need = (x + 2) * (y * per + 2) * elem;
  } else {
    const r = Math.ceil(3 * sigma);
    const [hx, hy, hp] = isVec4(version) ? shapes.blur_tiled_h_vec4 : shapes.blur_tiled_h;
    const [vx, vy, vp] = isVec4(version) ? shapes.blur_tiled_v_vec4 : shapes.blur_tiled_v;
    need = Math.max((hx * hp + 2 * r) * hy * elem, vx * (vy * vp + 2 * r) * elem);
  }
  return need > limit ? `needs ${need} bytes of workgroup memory, above the device's ${limit}` : '';
}

// Sobel magnitude of an RGBA f32 image (w x h x 4).
export async function sobel(gpu, version, img, w, h) {
  const vec4 = isVec4(version), tiled = isTiled(version);
  const [x, y, per] = shapes[!tiled ? 'sobel_naive' : vec4 ? 'sobel_tiled_vec4' : 'sobel_tiled'];
  const constants = tiled ? { WG_X: x, WG_Y: y, ROWS: per } : { WG_X: x, WG_Y: y };
  const pipeline = await gpu.pipeline(stencilFile('sobel', version), { constants });
  const out = gpu.buffer(w * h * 4);
  const groups = [ceilDiv(w, x), ceilDiv(h, y * (tiled ? per : 1)), vec4 ? 1 : 4];
  return runOnce(gpu, [{ pipeline, buffers: [gpu.buffer(img), out], params: gpu.params([w, h, vec4 ? 1 : 4]), groups }],
                 out, w * h * 4);
}

// Separable Gaussian blur of an RGBA f32 image: a horizontal pass into a temporary, then vertical.
export async function blur(gpu, version, img, w, h, sigma) {
  const vec4 = isVec4(version), tiled = isTiled(version);
  const wts = gaussianWeights(sigma);
  const r = (wts.length - 1) / 2;
  const file = stencilFile('blur', version);
  const z = vec4 ? 1 : 4;
  let hs, vs, hc, vc;
  if (!tiled) {
    hs = vs = shapes.blur_naive;
    hc = vc = { WG_X: hs[0], WG_Y: hs[1] };
  } else {
    hs = vec4 ? shapes.blur_tiled_h_vec4 : shapes.blur_tiled_h;
    vs = vec4 ? shapes.blur_tiled_v_vec4 : shapes.blur_tiled_v;
    hc = { WG_X: hs[0], WG_Y: hs[1], PER: hs[2], R: r };
    vc = { WG_X: vs[0], WG_Y: vs[1], PER: vs[2], R: r };
  }
  const hp = await gpu.pipeline(file, { entry: 'horizontal', constants: hc });
  const vp = await gpu.pipeline(file, { entry: 'vertical', constants: vc });
  const src = gpu.buffer(img), weights = gpu.buffer(wts), tmp = gpu.buffer(w * h * 4), out = gpu.buffer(w * h * 4);
  const params = gpu.params([w, h, vec4 ? 1 : 4, r]);
  const hg = [ceilDiv(w, hs[0] * (tiled ? hs[2] : 1)), ceilDiv(h, hs[1]), z];
  const vg = [ceilDiv(w, vs[0]), ceilDiv(h, vs[1] * (tiled ? vs[2] : 1)), z];
  return runOnce(gpu, [{ pipeline: hp, buffers: [src, weights, tmp], params, groups: hg },
                       { pipeline: vp, buffers: [tmp, weights, out], params, groups: vg }], out, w * h * 4);
}

// --- convolution: ops/conv.cpp's direct and direct-tiled versions, with a bias + ReLU epilogue -----
export const convVersions = ['direct', 'direct-tiled'];
const TILED = { TILE_W: 16, TILE_H: 8, COB: 8, CIB: 4 }; // ConvTuning's defaults (ops/conv.h)

function directTile(d) {
  const inH = (TILED.TILE_H - 1) * d.stride + (d.kh - 1) * d.dil + 1;
  const inW = (TILED.TILE_W - 1) * d.stride + (d.kw - 1) * d.dil + 1;
  return 4 * (TILED.CIB * inH * inW + TILED.COB * TILED.CIB * d.kh * d.kw);
}

export function convUnsupported(gpu, version, d) {
  if (version !== 'direct-tiled') return '';
  const limits = gpu.device.limits, bytes = directTile(d);
  if (bytes > limits.maxComputeWorkgroupStorageSize)
    return `its tile needs ${bytes} bytes of workgroup memory, above the device's ${limits.maxComputeWorkgroupStorageSize}`;
  if (TILED.TILE_W * TILED.TILE_H > limits.maxComputeInvocationsPerWorkgroup) return 'its tile has too many invocations';
  return '';
}

// y = relu(conv(x, w) + bias), NCHW; d as reference.conv2dBiasRelu's.
export async function conv2dBiasRelu(gpu, version, x, w, bias, d) {
  const { oh, ow } = conv2dOut(d);
  const cinG = d.c_in / d.groups, coutG = d.c_out / d.groups;
  const count = d.n * d.c_out * oh * ow;
  let constants = { HAS_BIAS: 1, HAS_RESIDUAL: 0, ACT: 1 };
  let groups;
  if (version === 'direct') {
    groups = groups1d(gpu, ceilDiv(count, WG));
  } else {
    constants = { ...constants, KH: d.kh, KW: d.kw, SH: d.stride, SW: d.stride, DH: d.dil, DW: d.dil, ...TILED };
    const tiles = ceilDiv(ow, TILED.TILE_W) * ceilDiv(oh, TILED.TILE_H);
    groups = groups1d(gpu, d.n * d.groups * ceilDiv(coutG, TILED.COB) * tiles);
  }
  const pipeline = await gpu.pipeline(version === 'direct' ? 'conv/direct.wgsl' : 'conv/direct_tiled.wgsl', { constants });
  const params = gpu.params([d.n, d.c_in, d.h, d.w, d.c_out, oh, ow, d.groups, d.kh, d.kw, d.stride, d.stride,
                             d.dil, d.dil, d.pad, d.pad, cinG, coutG, { f32: 0 }, { f32: 6 }, 0, 0, 0, 0]);
  const y = gpu.buffer(count);
  const residual = gpu.buffer(4); // unused (HAS_RESIDUAL 0), bound as ops/conv.cpp binds its dummy
  return runOnce(gpu, [{ pipeline, buffers: [gpu.buffer(x), gpu.buffer(w), gpu.buffer(bias), residual, y], params, groups }],
                 y, count);
}
