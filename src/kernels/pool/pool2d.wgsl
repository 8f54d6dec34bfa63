// Max / average pooling, one invocation per output element (ONNX MaxPool / AveragePool; see
// cpu/conv.h for the ceil-mode and count_include_pad rules this follows).
@group(0) @binding(0) var<storage, read> X: array<f32>;
@group(0) @binding(1) var<storage, read_write> Y: array<f32>;
struct Params {
  planes: u32, h: u32, w: u32, oh: u32,
  ow: u32, kh: u32, kw: u32, stride_h: u32,
  stride_w: u32, dil_h: u32, dil_w: u32, pad_top: u32,
  pad_left: u32, pad_bottom: u32, pad_right: u32, count_include_pad: u32,
}
@group(0) @binding(2) var<uniform> p: Params;

override MAX: bool = true;  // false: average
const WG = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.x + wid.y * nwg.x) * WG + lid;
  if (i >= p.planes * p.oh * p.ow) { return; }
  let ox = i % p.ow;
  let oy = (i / p.ow) % p.oh;
  let base = (i / (p.ow * p.oh)) * p.h * p.w;
  let iy0 = i32(oy * p.stride_h) - i32(p.pad_top);
  let ix0 = i32(ox * p.stride_w) - i32(p.pad_left);
  var acc = select(0.0, bitcast<f32>(0xff7fffffu), MAX);  // -FLT_MAX (ONNX Runtime)
  var count = 0u;
  var padded = 0u;
  for (var r = 0u; r < p.kh; r++) {
    let iy = iy0 + i32(r * p.dil_h);
    if (iy >= i32(p.h + p.pad_bottom)) { break; }
    for (var c = 0u; c < p.kw; c++) {
      let ix = ix0 + i32(c * p.dil_w);
      if (ix >= i32(p.w + p.pad_right)) { break; }
      padded++;
      if (iy < 0 || iy >= i32(p.h) || ix < 0 || ix >= i32(p.w)) { continue; }
      let v = X[base + u32(iy) * p.w + u32(ix)];
      if (MAX) { acc = max(acc, v); } else { acc += v; }
      count++;
    }
  }
  if (!MAX) { acc /= f32(max(1u, select(count, padded, p.count_include_pad != 0u))); }
  Y[i] = acc;
}
