// In-place RMSNorm of each head vector (Qwen 3's q_norm / k_norm, applied before RoPE):
// row r is token t = r / heads, head h = r % heads, elements x[t * stride + off + h * hd + i].
// One workgroup per row; a shared-memory sum (head vectors are short: 64-256 elements).
@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
struct P {
  rows: u32,
  heads: u32,
  hd: u32,
  stride: u32,
  off: u32,
  eps: f32,
}
@group(0) @binding(2) var<uniform> p: P;
override WG: u32 = 64;
var<workgroup> red: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let r = wid.x + wid.y * nwg.x;
  if (r >= p.rows) { return; }  // the same for the whole workgroup
  let base = (r / p.heads) * p.stride + p.off + (r % p.heads) * p.hd;
  var s = 0.0;
  for (var i = lid; i < p.hd; i += WG) {
    let v = x[base + i];
    s += v * v;
  }
  red[lid] = s;
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k >>= 1u) {
    if (lid < k) { red[lid] += red[lid + k]; }
    workgroupBarrier();
  }
  let inv = inverseSqrt(red[0] / f32(p.hd) + p.eps);
  for (var i = lid; i < p.hd; i += WG) { x[base + i] = x[base + i] * inv * w[i]; }
}
