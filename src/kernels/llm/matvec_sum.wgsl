// The second pass of a matvec with its columns split (matvec.wgsl with KS): y[y_off + r] = the
// ranges' partial sums part[k * rows + r] added in range order (+ bias[row0 + r]) (+ y), one
// invocation per row: the same order whatever else runs. Preceded by common.wgsl.
@group(0) @binding(0) var<storage, read> part: array<f32>;
@group(0) @binding(1) var<storage, read> bias: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
struct P {
  rows: u32,
  splits: u32,
  row0: u32,
  y_off: u32,
  flags: u32,  // 1: add bias, 2: accumulate into y
}
@group(0) @binding(3) var<uniform> p: P;
override WG: u32 = 256;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let r = wg_linear(wid, nwg) * WG + lid;
  if (r >= p.rows) { return; }
  var o = part[r];
  for (var k = 1u; k < p.splits; k++) { o += part[k * p.rows + r]; }
  if ((p.flags & 1u) != 0u) { o += bias[p.row0 + r]; }
  let yi = p.y_off + r;
  if ((p.flags & 2u) != 0u) { o += y[yi]; }
  y[yi] = o;
}
