// A dispatch that writes no buffer (`wgc bench --ops gpu.dispatch`, version read-only-grid): one
// read-only binding, so Dawn has no write to order it after and needs no barrier before it. The
// load goes to workgroup memory (the compiler may drop it: what is measured is the dispatch).
struct Params {
  n: u32,
}

@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<uniform> p: Params;

override WG: u32 = 256u;

var<workgroup> scratch: array<u32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.x + wid.y * nwg.x) * WG + lid;
  if (i >= p.n) { return; }
  scratch[lid] = src[i];
}
