// TopK (cpu/index_ops.h) by ranks: one invocation per element of x [outer][len][inner] counts the
// elements of its row that come before it (larger, or smaller with LARGEST = 0; equal values by
// position) and, when that rank is below k, writes its value (INDICES = 0) or its position
// (INDICES = 1, i32) to place rank of the output [outer][k][inner]: sorted, ties in position order.
// O(len) per element: rows of a few thousand (detection scores) take microseconds on a GPU.
struct Params {
  outer: u32,
  len: u32,
  inner: u32,
  k: u32,
}
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

override LARGEST: u32 = 1u;
override INDICES: u32 = 0u;
override WG: u32 = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let n = (wid.x + wid.y * nwg.x) * WG + lid;
  if (n >= p.outer * p.len * p.inner) { return; }
  let i = n % p.inner;
  let l = (n / p.inner) % p.len;
  let o = n / (p.inner * p.len);
  let base = o * p.len * p.inner + i;
  let v = x[n];
  var rank = 0u;
  for (var j = 0u; j < p.len && rank < p.k; j++) {
    let w = x[base + j * p.inner];
    var before: bool;
    if (LARGEST != 0u) {
      before = w > v || (w == v && j < l);
    } else {
      before = w < v || (w == v && j < l);
    }
    rank += select(0u, 1u, before);
  }
  if (rank >= p.k) { return; }
  let at = (o * p.k + rank) * p.inner + i;
  y[at] = select(bitcast<u32>(v), l, INDICES != 0u);
}
