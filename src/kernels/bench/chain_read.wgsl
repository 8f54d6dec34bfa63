// The memory-bound link of a dependent chain (`wgc bench --ops gpu.chain-read`), shaped like a
// decode matvec: each dispatch streams a slice of weights it has not read before and adds the
// previous dispatch's small output. Workgroup g: next[g] = prev[g] + the wrapping u32 sum of the
// slice's vec4s g * WG + lid + k * (groups * WG) for k = 0, 1, ... (a grid stride, U loads in
// flight per step). The chain's last output is then the per-workgroup sum over every slice read.
struct Params {
  n4: u32,      // vec4s in the slice
  groups: u32,  // workgroups of the grid (1-D)
}

@group(0) @binding(0) var<storage, read> slice: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> prev: array<u32>;
@group(0) @binding(2) var<storage, read_write> next: array<u32>;
@group(0) @binding(3) var<uniform> p: Params;

override WG: u32 = 256u;
const U: u32 = 4u;

var<workgroup> sums: array<u32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let g = wid.x;
  let stride = p.groups * WG;
  var acc = vec4<u32>(0u);
  var i = g * WG + lid;
  while (p.n4 >= U * stride && i < p.n4 - (U - 1u) * stride) {
    let a0 = slice[i];
    let a1 = slice[i + stride];
    let a2 = slice[i + 2u * stride];
    let a3 = slice[i + 3u * stride];
    acc += (a0 + a1) + (a2 + a3);
    i += U * stride;
  }
  for (; i < p.n4; i += stride) { acc += slice[i]; }
  sums[lid] = acc.x + acc.y + acc.z + acc.w;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) { sums[lid] += sums[lid + s]; }
    workgroupBarrier();
  }
  if (lid == 0u) { next[g] = prev[g] + sums[0]; }
}
