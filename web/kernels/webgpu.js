// A small WebGPU runner for the playground, shaped like the library's gpu/ layer: a device, f32
// buffers, pipelines compiled from the bundled WGSL with override constants, dispatches whose
// bindings are the buffers in order and then the parameter block (docs/CONTRIBUTING.md), and
// readback. Output buffers start poisoned with NaN so that an element a kernel never writes shows.
import { WGSL } from './wgsl.js';

export const POISON_NAN = 0x7fc0dead; // gpu/tensor.h kPoisonNaN

// Opens a device, or returns { why } saying why WebGPU cannot be used here.
export async function openGpu() {
  if (!isSecureContext) return { why: 'WebGPU needs a secure context: open the page over https or from localhost' };
  if (!('gpu' in navigator)) return { why: 'this browser has no WebGPU (navigator.gpu is missing)' };
  let adapter = null;
  try {
    adapter = await navigator.gpu.requestAdapter({ powerPreference: 'high-performance' });
  } catch (e) {
    return { why: `requestAdapter failed: ${e.message}` };
  }
  if (!adapter) return { why: 'the browser offers no WebGPU adapter (blocklisted or no GPU)' };
  const wanted = ['timestamp-query', 'subgroups'].filter((f) => adapter.features.has(f));
  const limits = {};
  for (const k of ['maxComputeInvocationsPerWorkgroup', 'maxComputeWorkgroupSizeX', 'maxComputeWorkgroupSizeY',
                   'maxComputeWorkgroupStorageSize', 'maxStorageBufferBindingSize', 'maxBufferSize'])
    limits[k] = adapter.limits[k];
  const device = await adapter.requestDevice({ requiredFeatures: wanted, requiredLimits: limits });
  return { gpu: new Gpu(adapter, device) };
}

export class Gpu {
  constructor(adapter, device) {
    this.adapter = adapter;
    this.device = device;
    this.info = adapter.info || {};
    this.timestamps = device.features.has('timestamp-query');
    this.subgroups = device.features.has('subgroups');
    this.pipelines = new Map();
    this.lost = null;
    device.lost.then((l) => (this.lost = l.message || 'device lost'));
  }

  name() {
    const i = this.info;
    return [i.vendor, i.architecture, i.device, i.description].filter(Boolean).join(' ') || 'unknown adapter';
  }

  // A compute pipeline for a bundled kernel file, entry point and override constants (cached).
  // `expr` fills a map template's slot as ops/map.cpp does ('return WGC_EXPR;' -> 'return (expr);').
  async pipeline(file, { entry = 'main', constants = {}, expr = null } = {}) {
    const key = `${file}|${entry}|${JSON.stringify(constants)}|${expr}`;
    if (this.pipelines.has(key)) return this.pipelines.get(key);
    let code = WGSL[file];
    if (code === undefined) throw new Error(`no kernel ${file} in the bundle`);
    if (expr !== null) {
      const slot = 'return WGC_EXPR;';
      if (!code.includes(slot)) throw new Error(`${file} has no '${slot}' slot`);
      code = code.replace(slot, `return (${expr});`);
    }
    const module = this.device.createShaderModule({ label: file, code });
    const info = await module.getCompilationInfo();
    const errors = info.messages.filter((m) => m.type === 'error');
    if (errors.length) throw new Error(errors.map((m) => `${file}:${m.lineNum}:${m.linePos}: ${m.message}`).join('\n'));
    this.device.pushErrorScope('validation');
    const p = await this.device.createComputePipelineAsync({
      label: `${file}:${entry}`,
      layout: 'auto',
      compute: { module, entryPoint: entry, constants },
    });
    const err = await this.device.popErrorScope();
    if (err) throw new Error(`${file}:${entry}: ${err.message}`);
    this.pipelines.set(key, p);
    return p;
  }

  // A storage buffer holding `data` (a typed array), or `count` f32 values of NaN poison.
  buffer(dataOrCount) {
    const isData = typeof dataOrCount !== 'number';
    const bytes = isData ? dataOrCount.byteLength : dataOrCount * 4;
    const size = Math.max(16, Math.ceil(bytes / 16) * 16); // vec4 kernels bind whole vec4s
    const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
    const buf = this.device.createBuffer({ size, usage, mappedAtCreation: true });
    const view = new Uint32Array(buf.getMappedRange());
    view.fill(POISON_NAN);
    if (isData) new Uint8Array(view.buffer).set(new Uint8Array(dataOrCount.buffer, dataOrCount.byteOffset, bytes));
    buf.unmap();
    return buf;
  }

  // The parameter block: each value a 4-byte u32, or f32 when given as { f32: v }.
  params(values) {
    const dv = new DataView(new ArrayBuffer(Math.max(16, Math.ceil((values.length * 4) / 16) * 16)));
    values.forEach((v, i) => (typeof v === 'object' ? dv.setFloat32(i * 4, v.f32, true) : dv.setUint32(i * 4, v, true)));
    const buf = this.device.createBuffer({ size: dv.byteLength, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    this.device.queue.writeBuffer(buf, 0, dv.buffer);
    return buf;
  }

  // Records the dispatches [{pipeline, buffers, params, groups: [x, y, z]}] in one compute pass, submits,
  // and waits. Returns the pass's GPU time in ms from timestamp queries (null without them).
  async run(dispatches) {
    this.device.pushErrorScope('validation');
    const enc = this.device.createCommandEncoder();
    let qs = null, resolve = null, read = null;
    const desc = {};
    if (this.timestamps) {
      qs = this.device.createQuerySet({ type: 'timestamp', count: 2 });
      resolve = this.device.createBuffer({ size: 16, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
      read = this.device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
      desc.timestampWrites = { querySet: qs, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 };
    }
    const pass = enc.beginComputePass(desc);
    for (const d of dispatches) {
      const bufs = d.params ? [...d.buffers, d.params] : d.buffers;
      const group = this.device.createBindGroup({
        layout: d.pipeline.getBindGroupLayout(0),
        entries: bufs.map((b, i) => ({ binding: i, resource: { buffer: b } })),
      });
      pass.setPipeline(d.pipeline);
      pass.setBindGroup(0, group);
      pass.dispatchWorkgroups(...d.groups);
    }
    pass.end();
    if (qs) {
      enc.resolveQuerySet(qs, 0, 2, resolve, 0);
      enc.copyBufferToBuffer(resolve, 0, read, 0, 16);
    }
    this.device.queue.submit([enc.finish()]);
    const err = await this.device.popErrorScope();
    if (err) throw new Error(err.message);
    await this.device.queue.onSubmittedWorkDone();
    if (this.lost) throw new Error(`the GPU device was lost: ${this.lost}`);
    if (!qs) return null;
    await read.mapAsync(GPUMapMode.READ);
    const t = new BigUint64Array(read.getMappedRange());
    const ms = Number(t[1] - t[0]) / 1e6;
    read.unmap();
    [qs, resolve, read].forEach((o) => o.destroy());
    return ms;
  }

  // The first `count` f32 values of a buffer.
  async read(buf, count) {
    const bytes = count * 4;
    const staging = this.device.createBuffer({ size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const enc = this.device.createCommandEncoder();
    enc.copyBufferToBuffer(buf, 0, staging, 0, bytes);
    this.device.queue.submit([enc.finish()]);
    await staging.mapAsync(GPUMapMode.READ);
    const out = new Float32Array(staging.getMappedRange().slice(0));
    staging.unmap();
    staging.destroy();
    return out.subarray(0, count);
  }
}

export const ceilDiv = (a, b) => Math.ceil(a / b);

// A 1-D grid of `groups` workgroups, spilled into y past the per-dimension limit (ops' groups_1d).
export function groups1d(gpu, groups) {
  const max = gpu.device.limits.maxComputeWorkgroupsPerDimension;
  if (groups <= max) return [Math.max(groups, 1), 1, 1];
  const y = ceilDiv(groups, max);
  return [ceilDiv(groups, y), y, 1];
}
