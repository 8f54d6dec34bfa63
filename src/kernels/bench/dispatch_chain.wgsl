// The dispatch floor (`wgc bench --ops gpu.dispatch`): a kernel that does almost nothing but read
// the buffer the dispatch before it wrote and write its own, so a chain of them measures what a
// dependent dispatch costs by itself. next[i] = prev[i] + 1 over a 1-D grid of p.n elements.
struct Params {
  n: u32,
}

@group(0) @binding(0) var<storage, read> prev: array<u32>;
@group(0) @binding(1) var<storage, read_write> next: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

override WG: u32 = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.x + wid.y * nwg.x) * WG + lid;
  if (i >= p.n) { return; }
  next[i] = prev[i] + 1u;
}
