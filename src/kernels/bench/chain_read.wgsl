// The memory-bound link of a dependent chain (`wgc bench --ops gpu.chain-read`), shaped like a
// decode matvec: each dispatch streams a slice of weights it has not read before and adds the
// previous dispatch's small output. Workgroup g: next[g] = prev[g] + the wrapping u32 sum of the
// vec4s it read; the chain's last output is then the per-workgroup sum over every slice read.
// PATTERN says which vec4s workgroup g reads, and in what order (all patterns read every vec4 of
// the slice once; they differ in how many separate streams are open at a time):
//   0 (grid): g * WG + lid + k * (groups * WG), k = 0, 1, ...: at each step the whole grid reads
//     one contiguous window, U loads in flight per invocation;
//   1 (rows): the slice as rows of ROW4 vec4s; workgroup g takes rows RPW * g .. + RPW - 1, each
//     32-lane group two of them, lane l their vec4s l, l + 32, ... with U per row in flight (the
//     one-token matvec's order: every row of the slice is a stream of its own);
//   2 (block): the same RPW rows as one contiguous block read with a workgroup stride, 2 U loads
//     in flight (what a weight layout tiled by workgroup would give the matvec).
struct Params {
  n4: u32,      // vec4s in the slice
  groups: u32,  // workgroups of the grid (1-D)
}

@group(0) @binding(0) var<storage, read> slice: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> prev: array<u32>;
@group(0) @binding(2) var<storage, read_write> next: array<u32>;
@group(0) @binding(3) var<uniform> p: Params;

override WG: u32 = 256u;
override PATTERN: u32 = 0u;
override ROW4: u32 = 512u;  // rows, block: vec4s per row
const U: u32 = 4u;
const TPR: u32 = 32u;  // rows: invocations per row group
const RPG: u32 = 2u;   // rows: rows per row group
override RPW: u32 = WG / TPR * RPG;  // rows, block: rows per workgroup

var<workgroup> sums: array<u32, WG>;

fn read_grid(g: u32, lid: u32) -> vec4<u32> {
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
  return acc;
}

fn read_rows(g: u32, lid: u32) -> vec4<u32> {
  let r0 = (g * (WG / TPR) + lid / TPR) * RPG;
  var acc = vec4<u32>(0u);
  var c = lid % TPR;
  for (; c + (U - 1u) * TPR < ROW4; c += U * TPR) {
    for (var u = 0u; u < RPG; u++) {
      for (var k = 0u; k < U; k++) { acc += slice[(r0 + u) * ROW4 + c + k * TPR]; }
    }
  }
  for (; c < ROW4; c += TPR) {
    for (var u = 0u; u < RPG; u++) { acc += slice[(r0 + u) * ROW4 + c]; }
  }
  return acc;
}

fn read_block(g: u32, lid: u32) -> vec4<u32> {
  let n = RPW * ROW4;
  let base = g * n;
  var acc = vec4<u32>(0u);
  var i = lid;
  for (; i + (2u * U - 1u) * WG < n; i += 2u * U * WG) {
    for (var k = 0u; k < 2u * U; k++) { acc += slice[base + i + k * WG]; }
  }
  for (; i < n; i += WG) { acc += slice[base + i]; }
  return acc;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let g = wid.x;
  var acc: vec4<u32>;
  if (PATTERN == 1u) {
    acc = read_rows(g, lid);
  } else if (PATTERN == 2u) {
    acc = read_block(g, lid);
  } else {
    acc = read_grid(g, lid);
  }
  sums[lid] = acc.x + acc.y + acc.z + acc.w;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) { sums[lid] += sums[lid + s]; }
    workgroupBarrier();
  }
  if (lid == 0u) { next[g] = prev[g] + sums[0]; }
}
