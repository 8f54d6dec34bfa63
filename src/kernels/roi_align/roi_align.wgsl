// RoiAlign (cpu/detect.h): one invocation per output element [roi][c][ph][pw]; the roi's bin cut
// into a grid of bilinear samples, averaged (MAX 0) or the largest weighted corner (MAX 1). The
// same float arithmetic as the CPU reference, in the same order, so that the samples land on the
// same pixels.
struct Params {
  count: u32,
  n: u32,
  c: u32,
  h: u32,
  w: u32,
  out_h: u32,
  out_w: u32,
  sampling_ratio: u32,  // 0: ceil(bin extent), at most MAX_GRID
  spatial_scale: f32,
  offset: f32,  // 0.5 for half_pixel, else 0 (and rois at least 1 x 1)
  pad0: u32,
  pad1: u32,
}
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> rois: array<f32>;
@group(0) @binding(2) var<storage, read> batch_index: array<i32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;

override WG: u32 = 256u;
override MAX: u32 = 0u;
override MAX_GRID: u32 = 64u;

fn grid(extent: f32) -> u32 {
  if (p.sampling_ratio > 0u) { return min(p.sampling_ratio, MAX_GRID); }
  let g = ceil(extent);
  if (g <= 0.0) { return 0u; }
  if (g >= f32(MAX_GRID)) { return MAX_GRID; }
  return u32(g);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let o = (wid.x + wid.y * nwg.x) * WG + lid;
  if (o >= p.count) { return; }
  let pw = o % p.out_w;
  let ph = (o / p.out_w) % p.out_h;
  let ch = (o / (p.out_w * p.out_h)) % p.c;
  let r = o / (p.out_w * p.out_h * p.c);
  let b = u32(clamp(batch_index[r], 0, i32(p.n) - 1));
  let x0 = rois[4u * r] * p.spatial_scale - p.offset;
  let y0 = rois[4u * r + 1u] * p.spatial_scale - p.offset;
  var rw = rois[4u * r + 2u] * p.spatial_scale - p.offset - x0;
  var rh = rois[4u * r + 3u] * p.spatial_scale - p.offset - y0;
  if (p.offset == 0.0) {
    rw = max(rw, 1.0);
    rh = max(rh, 1.0);
  }
  let bh = rh / f32(p.out_h);
  let bw = rw / f32(p.out_w);
  let gh = grid(bh);
  let gw = grid(bw);
  let plane = (b * p.c + ch) * p.h * p.w;
  var acc = 0.0;
  var first = true;
  for (var iy = 0u; iy < gh; iy++) {
    let sy = y0 + f32(ph) * bh + (f32(iy) + 0.5) * bh / f32(gh);
    for (var ix = 0u; ix < gw; ix++) {
      let sx = x0 + f32(pw) * bw + (f32(ix) + 0.5) * bw / f32(gw);
      var v = vec4<f32>(0.0);
      if (!(sy < -1.0 || sy > f32(p.h) || sx < -1.0 || sx > f32(p.w))) {
        var yy = max(sy, 0.0);
        var xx = max(sx, 0.0);
        var yl = u32(yy);
        var xl = u32(xx);
        var yh = yl + 1u;
        var xh = xl + 1u;
        if (yl >= p.h - 1u) { yl = p.h - 1u; yh = yl; yy = f32(yl); }
        if (xl >= p.w - 1u) { xl = p.w - 1u; xh = xl; xx = f32(xl); }
        let ly = yy - f32(yl);
        let lx = xx - f32(xl);
        let hy = 1.0 - ly;
        let hx = 1.0 - lx;
        v = vec4<f32>((hy * hx) * x[plane + yl * p.w + xl], (hy * lx) * x[plane + yl * p.w + xh],
                      (ly * hx) * x[plane + yh * p.w + xl], (ly * lx) * x[plane + yh * p.w + xh]);
      }
      if (MAX == 1u) {
        let m = max(max(v.x, v.y), max(v.z, v.w));
        acc = select(max(acc, m), m, first);
        first = false;
      } else {
        acc += (v.x + v.y) + (v.z + v.w);
      }
    }
  }
  if (MAX == 0u) { acc = acc / max(f32(gh) * f32(gw), 1.0); }
  y[o] = acc;
}
