// x (f32) quantized to 8 bits in blocks of 32, per token (llama.cpp's Q8_1 activations), for
// linear_batched_q8.wgsl: for block b of token t, d = max|x| / 127, q = round(x / d) (0 when the
// block is all zero), packed 4 per word in element order into qs[t * cols / 4 ..], and
// ds[t * nb + b] = (bitcast d, sum of the 32 q). One invocation per block; cols % 32 == 0.
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> qs: array<u32>;
@group(0) @binding(2) var<storage, read_write> ds: array<vec2<u32>>;
struct P {
  n: u32,
  cols: u32,
  x_stride: u32,
}
@group(0) @binding(3) var<uniform> p: P;
override WG: u32 = 64;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let nb = p.cols / 32u;
  let g = wg_linear(wid, nwg) * WG + lid;
  if (g >= p.n * nb) { return; }
  let t = g / nb;
  let b = g % nb;
  let xb = t * p.x_stride + 32u * b;
  var amax = 0.0;
  for (var i = 0u; i < 32u; i++) { amax = max(amax, abs(x[xb + i])); }
  let d = amax / 127.0;
  let inv = select(0.0, 1.0 / d, d > 0.0);
  var sum = 0i;
  for (var w = 0u; w < 8u; w++) {
    var word = 0u;
    for (var j = 0u; j < 4u; j++) {
      let q = i32(clamp(round(x[xb + 4u * w + j] * inv), -127.0, 127.0));
      sum += q;
      word |= (bitcast<u32>(q) & 0xffu) << (8u * j);
    }
    qs[(t * nb + b) * 8u + w] = word;
  }
  ds[t * nb + b] = vec2<u32>(bitcast<u32>(d), bitcast<u32>(sum));
}
