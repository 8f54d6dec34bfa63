// Gather with run-time indices (cpu/index_ops.h), any 4-byte element type: y[p][j][q] =
// x[p][index[j]][q]; negative indices count from the end, indices outside [-len, len) read the
// nearest end (a kernel cannot stop the run).
struct Params {
  count: u32,  // outputs
  len: u32,
  post: u32,
  indices: u32,
}
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read> index: array<i32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;
@group(0) @binding(3) var<uniform> p: Params;

override WG: u32 = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let n = (wid.x + wid.y * nwg.x) * WG + lid;
  if (n >= p.count) { return; }
  let q = n % p.post;
  let r = n / p.post;
  let j = r % p.indices;
  let pre = r / p.indices;
  var k = index[j];
  if (k < 0) { k += i32(p.len); }
  k = clamp(k, 0, i32(p.len) - 1);
  y[n] = x[(pre * p.len + u32(k)) * p.post + q];
}
