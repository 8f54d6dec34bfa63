// Matrix-vector (one token): y[y_off + r] = sum_k W[row0 + r, k] x[k] (+ bias[row0 + r]) (+ y).
// A group of TPR invocations takes R consecutive rows (WG / TPR * R rows per workgroup) and
// strides over their chunks (one vec4<u32> of weights each, coalesced across the group); the R
// rows' chunks at the same place are read together, so each x load serves R rows. Sums with
// group_sum (reduce_sg.wgsl or reduce_wg.wgsl).
// SWIGLU (a prelude constant): the rows are a gate|up weight (gate rows 0 .. rows / 2 - 1, up
// rows after them); a workgroup computes gate and up rows hw .. hw + h - 1 (2h = WG / TPR * R,
// at most 64) and writes y[hw + i] = silu(gate) * up.
// ROPE (a prelude constant; R even): the rows are a fused QKV weight (p.heads query heads, then
// p.n_kv key and p.n_kv value heads of p.head_dim rows); each group takes the two rows of R / 2
// consecutive RoPE pairs and rope_store (matvec_rope.wgsl) does rope_kv_append.wgsl's work on
// them: the same values, so the same results as the matvec followed by rope_kv_append.
// KS (a prelude constant, plain rows only): the columns are split into KS ranges of whole chunks,
// workgroup w taking rows of block w % blocks over range w / blocks; each writes its partial
// sums to y[range * rows + r] (no bias, y_off or accumulation: matvec_sum.wgsl adds the ranges
// in order and does those).
// XS (a prelude constant): the whole of x (of the workgroup's range: XN4 vec4s, zero past cols)
// is staged in workgroup memory once, laid out so that the lanes of a group read consecutive
// vec4s (no bank conflicts); else x is read from global memory, masked past cols where X_MASK.
// PF (a prelude constant, 0 .. UNROLL): the weights of each invocation's first PF steps of its
// first unrolled pass are loaded before x is prepared (x_prologue, the staging), so that they are
// in flight meanwhile; the same sums in the same order.
// x is read through x_load4 (matvec_x.wgsl: as it is; matvec_x_norm.wgsl: RMS-normalised, after
// x_prologue, or with X_LATE scaled at the end by x_scale; matvec_x_combine.wgsl: merged from
// flash-decoding partials, with XS). Preceded by a prelude (SWIGLU, ROPE, KS, XS, XN4, X_MASK,
// X_LATE, PF, PF_N, COLS, P_BINDING; XC_* for the combine), common.wgsl, rope_pair.wgsl, a
// weights/*.wgsl file (bindings 0, 1), a reduce file, one of those x files and matvec_rope.wgsl
// (ROPE: bindings 5-8) or matvec_q8_norope.wgsl.
//!include "llm/matvec_io.wgsl"
override WG: u32 = 256;
override TPR: u32 = 32;  // invocations per row (power of two)
override UNROLL: u32 = 2; // chunks in flight per invocation
override R: u32 = 1;      // rows per group, at most R_MAX
const R_MAX: u32 = 8u;
// Splitting the columns and the prefetch need x in one pass (the host never asks otherwise).
const_assert KS == 1u || !W_STAGE_X || XS;
const_assert PF == 0u || !W_STAGE_X || XS;
const_assert !X_LATE || XS;  // x_load4 once per element

var<workgroup> red: array<f32, WG>;
var<workgroup> res: array<f32, 64>;  // SWIGLU: the workgroup's gate and up sums
// With W_STAGE_X (per weight type), x is staged through shared memory in tiles of XT elements (zero past cols), one vec4 of
// padding every 8 so that lanes reading chunks of 32-64 elements apart hit different banks.
override XT: u32 = select(32u, max(2048u, W_CHUNK * TPR * 2u), W_STAGE_X && !XS);  // tiny when unused
var<workgroup> xs: array<vec4<f32>, XT / 4u + XT / 32u>;
var<private> tile4: u32;
// XS: x's vec4 i4 at xw[(i4 % XV) * XH + i4 / XV] (XV vec4s per weight chunk): lane-consecutive
// chunks read consecutive entries.
const XV: u32 = max(W_CHUNK / 4u, 1u);
const XH: u32 = (XN4 + XV - 1u) / XV;
var<workgroup> xw: array<vec4<f32>, select(1u, XH * XV, XS)>;
var<private> xs0: u32;  // KS: the first vec4 of x in xw (the workgroup's range)

// The weight's columns: COLS (a prelude constant: loop trip counts known to the compiler) or
// p.cols (COLS 0).
fn mv_cols() -> u32 {
  if (COLS > 0u) { return COLS; }
  return p.cols;
}

fn xq(i4: u32) -> vec4<f32> {
  if (XS) {
    let j = select(i4, i4 - xs0, KS > 1u);
    return xw[(j % XV) * XH + j / XV];
  }
  if (W_STAGE_X) {
    let j = i4 - tile4;
    return xs[j + j / 8u];
  }
  if (!X_MASK) { return x_load4(i4); }
  let e = vec4<u32>(4u * i4) + vec4<u32>(0u, 1u, 2u, 3u);
  return select(vec4<f32>(0.0), x_load4(i4), e < vec4<u32>(mv_cols()));
}

// Chunk c's dot product from its weights loaded before (wc_load): w_chunk's arithmetic.
fn w_dot(ch: WChunk, c: u32) -> f32 {
  var s = dot(wc_part(ch, 0u), xq(wc_xoff(c, 0u)));
  for (var j = 1u; j < W_PARTS; j++) { s += dot(wc_part(ch, j), xq(wc_xoff(c, j))); }
  return s;
}

// ROPE: row u (0, 1) of RoPE pair pi.
fn rope_row(pi: u32, u: u32) -> u32 { return rope_pair_row(pi, u, p.head_dim, (p.rflags & 2u) != 0u); }

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  var wg = wg_linear(wid, nwg);
  let lane = lid % TPR;
  w_setup(mv_cols());
  let nch = w_nchunks(mv_cols());
  var cb = 0u;  // the workgroup's chunks cb .. ce - 1
  var ce = nch;
  var ks = 0u;
  if (KS > 1u) {
    let blocks = (p.rows + WG / TPR * R - 1u) / (WG / TPR * R);
    ks = wg / blocks;
    wg = wg % blocks;
    let cps = (nch + KS - 1u) / KS;
    cb = min(ks * cps, nch);
    ce = min(cb + cps, nch);
    xs0 = cb * XV;
  }
  let swh = WG / TPR * R / 2u;  // SWIGLU: gate rows per workgroup
  var rows: array<u32, R_MAX>;
  var rl: array<u32, R_MAX>;  // the rows' indices from row0 (past p.rows: none)
  for (var u = 0u; u < R; u++) {
    let lr = (lid / TPR) * R + u;
    if (SWIGLU) {
      rl[u] = select(swh * wg + lr, p.rows / 2u + swh * wg + lr - swh, lr >= swh);
    } else if (ROPE) {
      rl[u] = rope_row((wg * (WG / TPR) + lid / TPR) * (R / 2u) + u / 2u, u % 2u);
    } else {
      rl[u] = wg * (WG / TPR * R) + lr;
    }
    rows[u] = p.row0 + min(rl[u], p.rows - 1u);
  }
  // PF: the first unrolled pass's weights (where this invocation makes a whole one), before x.
  let pf = PF > 0u && cb + lane + (UNROLL - 1u) * TPR < ce;
  var pre: array<WChunk, PF_N>;  // PF_N (prelude): PF * R, at least 1
  if (pf) {
    for (var k = 0u; k < PF; k++) {
      for (var u = 0u; u < R; u++) { pre[k * R + u] = wc_load(rows[u], cb + lane + k * TPR); }
    }
  }
  x_prologue(lid);
  if (XS) {
    for (var i = lid; i < XH * XV; i += WG) {
      var v = vec4<f32>(0.0);
      let g = xs0 + i;
      if (g < (mv_cols() + 3u) / 4u) {
        let e = vec4<u32>(4u * g) + vec4<u32>(0u, 1u, 2u, 3u);
        v = select(vec4<f32>(0.0), x_load4(g), e < vec4<u32>(mv_cols()));
      }
      xw[(i % XV) * XH + i / XV] = v;
    }
    workgroupBarrier();
  }
  let nx4 = (mv_cols() + 3u) / 4u;
  var acc: array<f32, R_MAX>;
  var c = cb + lane;
  if (pf) {
    for (var k = 0u; k < UNROLL; k++) {
      for (var u = 0u; u < R; u++) {
        if (k < PF) {
          acc[u] += w_dot(pre[k * R + u], c + k * TPR);
        } else {
          acc[u] += w_chunk(rows[u], c + k * TPR);
        }
      }
    }
    c += TPR * UNROLL;
  }
  let span = select(nch * W_CHUNK, XT, W_STAGE_X && !XS);  // one pass when x is read from global memory
  for (var t0 = 0u; t0 < nch * W_CHUNK; t0 += span) {
    if (W_STAGE_X && !XS) {
      workgroupBarrier();
      for (var i = lid; i < XT / 4u; i += WG) {
        let g4 = t0 / 4u + i;
        var v = vec4<f32>(0.0);
        if (g4 < nx4) {
          let e = vec4<u32>(4u * g4) + vec4<u32>(0u, 1u, 2u, 3u);
          v = select(vec4<f32>(0.0), x_load4(g4), e < vec4<u32>(mv_cols()));
        }
        xs[i + i / 8u] = v;
      }
      workgroupBarrier();
      tile4 = t0 / 4u;
      c = t0 / W_CHUNK + lane;
    }
    let c1 = min((t0 + span) / W_CHUNK, ce);
    for (; c + (UNROLL - 1u) * TPR < c1; c += TPR * UNROLL) {
      for (var k = 0u; k < UNROLL; k++) {
        for (var u = 0u; u < R; u++) { acc[u] += w_chunk(rows[u], c + k * TPR); }
      }
    }
    for (; c < c1; c += TPR) {
      for (var u = 0u; u < R; u++) { acc[u] += w_chunk(rows[u], c); }
    }
  }
  let xsc = x_scale(lid);
  var outs: array<f32, R_MAX>;
  for (var u = 0u; u < R; u++) {
    let s = group_sum(acc[u], lid, TPR) * xsc;
    if (SWIGLU) {
      if (lane == 0u) { res[(lid / TPR) * R + u] = s; }
    } else if (KS > 1u) {
      if (lane == 0u && rl[u] < p.rows) { y[ks * p.rows + rl[u]] = s; }
    } else if (lane == 0u && rl[u] < p.rows) {
      var o = s;
      if ((p.flags & 1u) != 0u) { o += bias[rows[u]]; }
      let yi = p.y_off + rl[u];
      if ((p.flags & 2u) != 0u) { o += y[yi]; }
      y[yi] = o;
      outs[u] = o;
    }
  }
  if (ROPE && lane == 0u) {
    for (var u = 0u; u < R; u += 2u) {
      if (rl[u] < p.rows) { rope_store(rl[u], rl[u + 1u], outs[u], outs[u + 1u]); }
    }
  }
  if (SWIGLU) {
    workgroupBarrier();
    if (lid < swh) {
      let gv = res[lid];
      y[swh * wg + lid] = gv / (1.0 + exp(-gv)) * res[swh + lid];
    }
  }
}
