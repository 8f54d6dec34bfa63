// Matrix-vector with 8-bit activations (one token; llama.cpp's MMVQ): y[y_off + r] =
// sum_u dot(W[row0 + r], x) (+ bias[row0 + r]) (+ y), the weights' quants and x's (q8_act.wgsl)
// multiplied with integer dot products (dot4I8Packed) a unit at a time (q8dot/*.wgsl: MV_UE
// elements, one or two blocks of 32), scaled per block. A group of TPR invocations takes R rows and strides over their
// units, UNROLL units per step (loads the compiler can issue together; the rest one by one); each
// unit's x is loaded once for the R rows. Sums with group_sum (reduce_sg.wgsl or reduce_wg.wgsl).
//
// SWIGLU (a prelude constant): the rows are a gate|up weight (gate rows 0 .. half - 1, up rows
// half ..), a workgroup computes gate and up rows 32w .. 32w + 31 (WG / TPR * R == 64) and writes
// silu(gate) * up quantized as x is (quant_act.wgsl's block w) into y (quants) and yd (d, sums).
//
// PF_K and PF_N (prelude constants): units per row loaded before x_prologue, and PF_K * R (at
// least 1). XS (a prelude constant): the columns, or 0 for p.cols. x_scale() (from the x file)
// multiplies each row's sum.
//
// ROPE (a prelude constant; R == 2): the rows are a fused QKV weight (p.heads query heads, then
// p.n_kv key and p.n_kv value heads of p.head_dim rows), or whole heads of it from head p.head0
// on (a part of other heads' type; y_off its first row), each group takes the two rows of one RoPE
// pair, and rope_store (matvec_q8_rope.wgsl) does rope_kv_append.wgsl's work on them: the same
// values, so the same results as linear_q8 followed by rope_kv_append.
//
// Preceded by a prelude (MV_HALF: the q8dot file's smaller units; SWIGLU, ROPE, P_BINDING: the
// uniform's binding, PF_K, PF_N, XS; XC, XSWZ, LATE with the x file), common.wgsl,
// rope_pair.wgsl, a weights/*.wgsl file (bindings 0, 1), an x file (LlmOps::matvec_x:
// q8_act_global.wgsl or q8_act_stage.wgsl, x quantized before at bindings 2, 3; q8_act_norm.wgsl,
// f32 x and a norm weight at 2, 3, quantized here by x_prologue), q8_act.wgsl, a q8dot/*.wgsl
// file, a reduce file and matvec_q8_rope.wgsl (ROPE) or matvec_q8_norope.wgsl.
@group(0) @binding(4) var<storage, read> bias: array<f32>;
@group(0) @binding(5) var<storage, read_write> y: array<u32>;  // f32 bits, or SWIGLU's quants
@group(0) @binding(6) var<storage, read_write> yd: array<vec2<u32>>;  // SWIGLU: (d, sums) per block; ROPE: (cos, sin)
struct P {
  rows: u32,
  cols: u32,
  row0: u32,
  y_off: u32,
  flags: u32,  // 1: add bias, 2: accumulate into y
  half: u32,   // SWIGLU: rows of the gate (the up rows follow)
  eps: f32,    // q8_act_norm.wgsl: the RMSNorm's epsilon
//!include "llm/rope_params_fields.wgsl"
  head0: u32,  // the weight's first head among the q, k and v heads (rows of whole heads)
}
@group(0) @binding(P_BINDING) var<uniform> p: P;
override WG: u32 = 256;
override TPR: u32 = 32;  // invocations per row group (a power of two)
override R: u32 = 2u;    // rows per group, at most R_MAX
override UNROLL: u32 = 1u;  // units per lane per step of the main loop
const R_MAX: u32 = 8u;

var<workgroup> red: array<f32, WG>;
var<workgroup> res: array<f32, 64>;  // SWIGLU: the workgroup's gate and up sums, then silu(g) * u

fn xq(i4: u32) -> vec4<f32> { return vec4<f32>(0.0); }  // unused here (w_chunk needs it)

// The columns: XS when the kernel was made for one width (the loops' trip counts then known to
// the compiler), else p.cols.
fn mv_cols() -> u32 {
  if (XS > 0u) { return XS; }
  return p.cols;
}

// ROPE: row u (0, 1) of RoPE pair pi.
fn rope_row(pi: u32, u: u32) -> u32 { return rope_pair_row(pi, u, p.head_dim, (p.rflags & 2u) != 0u); }

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let wg = wg_linear(wid, nwg);
  let g = lid / TPR;
  let lane = lid % TPR;
  var rows: array<u32, R_MAX>;
  var rl: array<u32, R_MAX>;  // the rows' indices from row0 (past p.rows: none)
  for (var u = 0u; u < R; u++) {
    let lr = g * R + u;
    if (SWIGLU) {
      rl[u] = select(32u * wg + lr, p.half + 32u * wg + lr - 32u, lr >= 32u);
    } else if (ROPE) {
      rl[u] = rope_row(wg * (WG / TPR) + g, u);
    } else {
      rl[u] = wg * (WG / TPR * R) + lr;
    }
    rows[u] = p.row0 + min(rl[u], p.rows - 1u);
  }
  w_setup(mv_cols());
  let nu = mv_cols() / MV_UE;
  var acc: array<f32, R_MAX>;
  var un = lane;
  // PF_K (a prelude constant, 0 .. UNROLL) units of each row loaded before x_prologue, so that
  // they are in flight while the workgroup prepares x (indices clamped: a lane with fewer units
  // loads one twice and drops it), then dotted in the main loop's order.
  var wf: array<WV, PF_N>;
  for (var k = 0u; k < PF_K; k++) {
    for (var u = 0u; u < R; u++) { wf[k * R + u] = v_load(rows[u], min(un + k * TPR, nu - 1u)); }
  }
  x_prologue(lid);
  if (PF_K > 0u) {
    for (var k = 0u; k < PF_K; k++) {
      if (un + k * TPR < nu) {
        let xu = u_x(un + k * TPR);
        for (var u = 0u; u < R; u++) { acc[u] += u_dotw(wf[k * R + u], xu); }
      }
    }
    un += PF_K * TPR;
  }
  for (; un + (UNROLL - 1u) * TPR < nu; un += UNROLL * TPR) {
    for (var k = 0u; k < UNROLL; k++) {
      let xu = u_x(un + k * TPR);
      for (var u = 0u; u < R; u++) { acc[u] += u_dotw(v_load(rows[u], un + k * TPR), xu); }
    }
  }
  for (; un < nu; un += TPR) {
    let xu = u_x(un);
    for (var u = 0u; u < R; u++) { acc[u] += u_dotw(v_load(rows[u], un), xu); }
  }
  var outs: array<f32, R_MAX>;
  for (var u = 0u; u < R; u++) {
    let s = group_sum(acc[u], lid, TPR) * x_scale();
    if (lane == 0u) {
      if (SWIGLU) {
        res[g * R + u] = s;
      } else if (rl[u] < p.rows) {
        var o = s;
        if ((p.flags & 1u) != 0u) { o += bias[rows[u]]; }
        let yi = p.y_off + rl[u];
        if ((p.flags & 2u) != 0u) { o += bitcast<f32>(y[yi]); }
        y[yi] = bitcast<u32>(o);
        outs[u] = o;
      }
    }
  }
  if (ROPE && lane == 0u && rl[0] < p.rows) { rope_store(rl[0], rl[1], outs[0], outs[1]); }
  if (SWIGLU) {
    workgroupBarrier();
    var a = 0.0;
    if (lid < 32u) {
      let gv = res[lid];
      a = gv / (1.0 + exp(-gv)) * res[32u + lid];
    }
    workgroupBarrier();
    if (lid < 32u) { res[lid] = a; }
    workgroupBarrier();
    if (lid < 8u) {
      var amax = 0.0;
      for (var i = 0u; i < 32u; i++) { amax = max(amax, abs(res[i])); }
      let d = amax / 127.0;
      let id = select(0.0, 1.0 / d, d > 0.0);
      let v = vec4<f32>(res[4u * lid], res[4u * lid + 1u], res[4u * lid + 2u], res[4u * lid + 3u]);
      let q = bitcast<vec4<u32>>(vec4<i32>(clamp(round(v * id), vec4<f32>(-127.0), vec4<f32>(127.0)))) & vec4<u32>(0xffu);
      y[8u * wg + lid] = q.x | (q.y << 8u) | (q.z << 16u) | (q.w << 24u);
      if (lid == 0u) {
        var lo = 0i;
        var hi = 0i;
        for (var i = 0u; i < 32u; i++) {
          let qi = i32(clamp(round(res[i] * id), -127.0, 127.0));
          if (i < 16u) {
            lo += qi;
          } else {
            hi += qi;
          }
        }
        yd[wg] = vec2<u32>(bitcast<u32>(d), (bitcast<u32>(lo) & 0xffffu) | (bitcast<u32>(hi) << 16u));
      }
    }
  }
}
