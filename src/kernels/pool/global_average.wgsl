// Global average pooling: one workgroup per (n, c) plane, a strided sum per invocation, then a
// tree in workgroup memory.
@group(0) @binding(0) var<storage, read> X: array<f32>;
@group(0) @binding(1) var<storage, read_write> Y: array<f32>;
struct Params { planes: u32, hw: u32 }
@group(0) @binding(2) var<uniform> p: Params;

const WG = 64u;
var<workgroup> part: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let plane = wid.x + wid.y * nwg.x;  // uniform: the early return keeps the barriers uniform
  if (plane >= p.planes) { return; }
  var acc = 0.0;
  for (var i = lid; i < p.hw; i += WG) { acc += X[plane * p.hw + i]; }
  part[lid] = acc;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s /= 2u) {
    if (lid < s) { part[lid] += part[lid + s]; }
    workgroupBarrier();
  }
  if (lid == 0u) { Y[plane] = part[0] / f32(p.hw); }
}
