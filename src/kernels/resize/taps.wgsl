// Resize by taps (cpu/resize.h): x [outer][in_h][mid][in_w][inner] -> y [outer][out_h][mid][out_w]
// [inner], one output per invocation: the sum over the (index, weight) taps of its row and of its
// column (a table made on the host: floats, indices exact) of w_row * w_col * x; a row or column
// tap of index -1 (outside the input under tf_crop_and_resize) gives the extrapolation value.
struct Params {
  count: u32,
  outer: u32,
  in_h: u32,
  in_w: u32,
  out_h: u32,
  out_w: u32,
  mid: u32,
  inner: u32,
  taps_h: u32,
  taps_w: u32,
  w_table: u32,  // where the column taps start in the table (floats)
  extrapolation: f32,
}
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> table: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

override WG: u32 = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let n = (wid.x + wid.y * nwg.x) * WG + lid;
  if (n >= p.count) { return; }
  let i = n % p.inner;
  var r = n / p.inner;
  let ox = r % p.out_w;
  r = r / p.out_w;
  let m = r % p.mid;
  r = r / p.mid;
  let oy = r % p.out_h;
  let o = r / p.out_h;
  var acc = 0.0;
  for (var ty = 0u; ty < p.taps_h; ty++) {
    let t = 2u * (oy * p.taps_h + ty);
    let iy = table[t];
    if (iy < 0.0) {
      y[n] = p.extrapolation;
      return;
    }
    let row = ((o * p.in_h + u32(iy)) * p.mid + m) * p.in_w;
    var racc = 0.0;
    for (var tx = 0u; tx < p.taps_w; tx++) {
      let u = p.w_table + 2u * (ox * p.taps_w + tx);
      let ix = table[u];
      if (ix < 0.0) {
        y[n] = p.extrapolation;
        return;
      }
      racc += table[u + 1u] * x[(row + u32(ix)) * p.inner + i];
    }
    acc += table[t + 1u] * racc;
  }
  y[n] = acc;
}
