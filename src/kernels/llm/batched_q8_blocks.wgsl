// The batched-q8 linears' bindings, parameters and weight blocks (linear_batched_q8.wgsl,
// linear_batched_q8_mv.wgsl): one copy of the per-block arithmetic, so that the kernels give the
// same bits. Needs TR, Q4, I2F and P_BINDING from the prelude. Bindings: 0 weight words, 1 scales
// (f16 pairs), 2 x words, 3 x (d, the block's two 16-bit half sums) per block, 4 bias, 5 y, then
// the params at P_BINDING.
@group(0) @binding(0) var<storage, read> wq: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> ws: array<u32>;
@group(0) @binding(2) var<storage, read> xq: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> xds: array<vec2<u32>>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;
@group(0) @binding(5) var<storage, read_write> y: array<f32>;
struct P {
  n: u32,  // tokens
  rows: u32,
  cols: u32,
  row0: u32,
  x_stride: u32,  // unused: x comes quantized, [n][cols]
  y_stride: u32,
  y_off: u32,
  flags: u32,  // 1: add bias, 2: accumulate into y
//!include "llm/rope_params_fields.wgsl"
}
@group(0) @binding(P_BINDING) var<uniform> p: P;

fn w_scale(row: u32, nb: u32, b: u32) -> f32 {
  let i = row * nb + b;
  return half_at(ws[i / 2u], i);
}

// The quants of block b of 4 rows as 8 words of 4 signed bytes each (element order as x's), and
// their scales.
struct WBlock {
  q: array<array<u32, 8>, TR>,
  d: vec4<f32>,  // components TR.. unused (0)
}

fn load_block(rows: array<u32, 4>, nb: u32, b: u32) -> WBlock {
  var o: WBlock;
  let rs4 = select(nb * 2u, nb, Q4);  // vec4<u32> per weight row
  for (var r = 0u; r < TR; r++) {
    if (Q4) {
      let v = wq[rows[r] * rs4 + b];
      for (var i = 0u; i < 4u; i++) {
        o.q[r][i] = v[i] & 0x0f0f0f0fu;
        o.q[r][i + 4u] = (v[i] >> 4u) & 0x0f0f0f0fu;
      }
    } else {
      let v0 = wq[rows[r] * rs4 + 2u * b];
      let v1 = wq[rows[r] * rs4 + 2u * b + 1u];
      for (var i = 0u; i < 4u; i++) {
        o.q[r][i] = v0[i];
        o.q[r][i + 4u] = v1[i];
      }
    }
    o.d[r] = w_scale(rows[r], nb, b);
  }
  return o;
}

// A block of x's (d, the two 16-bit half sums of its quants) as the kernels keep it: (d, the sum
// as a float) or, with I2F, (d, the bits of 0x4B400000 - 8 * sum (Q4_0) or 0x4B400000 (Q8_0)).
fn x_block_ds(e: vec2<u32>) -> vec2<f32> {
  let sum = (bitcast<i32>(e.y << 16u) >> 16u) + (bitcast<i32>(e.y) >> 16u);  // halves sign-extended
  if (I2F) { return vec2<f32>(bitcast<f32>(e.x), bitcast<f32>(0x4B400000 - select(0, 8 * sum, Q4))); }
  return vec2<f32>(bitcast<f32>(e.x), f32(sum));
}

// Block `cur`'s products with one token's x block (its 32 quants in xa, xb; e from x_block_ds), per
// row: f32(sum_i qw * qx) (less 8 * the quants' sum for Q4_0) times x's d. The caller adds
// fma(cur.d, terms, acc): every batched-q8 kernel's arithmetic per block.
fn block_terms(cur: WBlock, xa: vec4<u32>, xb: vec4<u32>, e: vec2<f32>) -> vec4<f32> {
  var s = vec4<i32>(0);
  for (var r = 0u; r < TR; r++) {
    var d = dot4I8Packed(cur.q[r][0], xa.x) + dot4I8Packed(cur.q[r][1], xa.y) + dot4I8Packed(cur.q[r][2], xa.z) +
            dot4I8Packed(cur.q[r][3], xa.w);
    d += dot4I8Packed(cur.q[r][4], xb.x) + dot4I8Packed(cur.q[r][5], xb.y) + dot4I8Packed(cur.q[r][6], xb.z) +
         dot4I8Packed(cur.q[r][7], xb.w);
    s[r] = d;
  }
  var f: vec4<f32>;
  if (I2F) {
    f = bitcast<vec4<f32>>(s + vec4<i32>(bitcast<i32>(e.y))) - vec4<f32>(12582912.0);
  } else {
    f = vec4<f32>(s);
    if (Q4) { f = f - 8.0 * e.y; }
  }
  return f * e.x;
}
