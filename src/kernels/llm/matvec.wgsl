// Matrix-vector (one token): y[y_off + r] = sum_k W[row0 + r, k] x[k] (+ bias[row0 + r]) (+ y).
// A group of TPR invocations takes R consecutive rows (WG / TPR * R rows per workgroup) and
// strides over their chunks (one vec4<u32> of weights each, coalesced across the group); the R
// rows' chunks at the same place are read together, so each x load serves R rows. Sums with
// group_sum (reduce_sg.wgsl or reduce_wg.wgsl).
// SWIGLU (a prelude constant): the rows are a gate|up weight (gate rows 0 .. rows / 2 - 1, up
// rows after them); a workgroup computes gate and up rows 32w .. 32w + 31 (WG / TPR * R == 64)
// and writes y[32w + i] = silu(gate) * up.
// x is read through x_load4 (matvec_x.wgsl: as it is; matvec_x_norm.wgsl: RMS-normalised, after
// x_prologue). Preceded by a prelude (SWIGLU), common.wgsl, a weights/*.wgsl file (bindings 0,
// 1), a reduce file and one of those two.
@group(0) @binding(2) var<storage, read> x4: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
//!include "llm/linear_params.wgsl"
override WG: u32 = 256;
override TPR: u32 = 32;  // invocations per row (power of two)
override UNROLL: u32 = 2; // chunks in flight per invocation
override R: u32 = 1;      // rows per group, at most R_MAX
const R_MAX: u32 = 8u;

var<workgroup> red: array<f32, WG>;
var<workgroup> res: array<f32, 64>;  // SWIGLU: the workgroup's gate and up sums
// With W_STAGE_X (per weight type), x is staged through shared memory in tiles of XT elements (zero past cols), one vec4 of
// padding every 8 so that lanes reading chunks of 32-64 elements apart hit different banks.
override XT: u32 = select(32u, max(2048u, W_CHUNK * TPR * 2u), W_STAGE_X);  // tiny when unused
var<workgroup> xs: array<vec4<f32>, XT / 4u + XT / 32u>;
var<private> tile4: u32;

fn xq(i4: u32) -> vec4<f32> {
  if (W_STAGE_X) {
    let j = i4 - tile4;
    return xs[j + j / 8u];
  }
  if (!W_PADDED) { return x_load4(i4); }
  let e = vec4<u32>(4u * i4) + vec4<u32>(0u, 1u, 2u, 3u);
  return select(vec4<f32>(0.0), x_load4(i4), e < vec4<u32>(p.cols));
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let wg = wg_linear(wid, nwg);
  let rl0 = (wg * (WG / TPR) + lid / TPR) * R;  // the group's first row
  let lane = lid % TPR;
  var rows: array<u32, R_MAX>;
  for (var u = 0u; u < R; u++) {
    var rl = rl0 + u;
    if (SWIGLU) {
      let lr = (lid / TPR) * R + u;
      rl = select(32u * wg + lr, p.rows / 2u + 32u * wg + lr - 32u, lr >= 32u);
    }
    rows[u] = p.row0 + min(rl, p.rows - 1u);
  }
  x_prologue(lid);
  w_setup(p.cols);
  let nch = w_nchunks(p.cols);
  let nx4 = (p.cols + 3u) / 4u;
  var acc: array<f32, R_MAX>;
  let span = select(nch * W_CHUNK, XT, W_STAGE_X);  // one pass when x is read from global memory
  for (var t0 = 0u; t0 < nch * W_CHUNK; t0 += span) {
    if (W_STAGE_X) {
      workgroupBarrier();
      for (var i = lid; i < XT / 4u; i += WG) {
        let g4 = t0 / 4u + i;
        var v = vec4<f32>(0.0);
        if (g4 < nx4) {
          let e = vec4<u32>(4u * g4) + vec4<u32>(0u, 1u, 2u, 3u);
          v = select(vec4<f32>(0.0), x_load4(g4), e < vec4<u32>(p.cols));
        }
        xs[i + i / 8u] = v;
      }
      workgroupBarrier();
      tile4 = t0 / 4u;
    }
    let c1 = min((t0 + span) / W_CHUNK, nch);
    var c = t0 / W_CHUNK + lane;
    for (; c + (UNROLL - 1u) * TPR < c1; c += TPR * UNROLL) {
      for (var k = 0u; k < UNROLL; k++) {
        for (var u = 0u; u < R; u++) { acc[u] += w_chunk(rows[u], c + k * TPR); }
      }
    }
    for (; c < c1; c += TPR) {
      for (var u = 0u; u < R; u++) { acc[u] += w_chunk(rows[u], c); }
    }
  }
  for (var u = 0u; u < R; u++) {
    let s = group_sum(acc[u], lid, TPR);
    if (SWIGLU) {
      if (lane == 0u) { res[(lid / TPR) * R + u] = s; }
    } else if (lane == 0u && rl0 + u < p.rows) {
      var o = s;
      if ((p.flags & 1u) != 0u) { o += bias[rows[u]]; }
      let yi = p.y_off + rl0 + u;
      if ((p.flags & 2u) != 0u) { o += y[yi]; }
      y[yi] = o;
    }
  }
  if (SWIGLU) {
    workgroupBarrier();
    if (lid < 32u) {
      let gv = res[lid];
      y[32u * wg + lid] = gv / (1.0 + exp(-gv)) * res[32u + lid];
    }
  }
}
