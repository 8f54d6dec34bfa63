// Bidirectional (encoder) attention over packed sequences, GQA: the query of token t, head h sees
// the keys and values of rows ranges[2t] .. ranges[2t+1] - 1 (its own sequence, every position,
// no causal mask), read straight from the projections' output (no cache). Several sequences of
// different lengths go back to back in one dispatch without padding.
//
// qkv[row * stride + q_off + h * hd + d] (queries), k_off + g * hd (keys, g = h / (n_heads / n_kv)),
// v_off likewise; out[t * o_stride + o_off + h * hd + d]. One workgroup per (t, h): the scaled query
// staged in workgroup memory, keys in chunks of WG (one per invocation: its score), online softmax
// (running max m and sum l, the accumulator rescaled by exp(m_old - m_new) per chunk), each
// invocation owning output dims lid, lid + WG, .. (hd <= WG * NA). CPU reference:
// cpu/llm/encoder_attention.h.
struct P {
  n_tokens: u32,
  n_heads: u32,
  n_kv: u32,
  hd: u32,
  stride: u32,
  q_off: u32,
  k_off: u32,
  v_off: u32,
  o_stride: u32,
  o_off: u32,
  scale: f32,
  pad0: u32,
}
@group(0) @binding(0) var<storage, read> qkv: array<f32>;
@group(0) @binding(1) var<storage, read> ranges: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: P;

const WG: u32 = 64u;
const NA: u32 = 4u;  // output dims per invocation: head_dim <= 256
const MASKED: f32 = -3.0e38;

var<workgroup> qs: array<f32, 256>;
var<workgroup> ps: array<f32, WG>;
var<workgroup> red: array<f32, WG>;

fn wg_max(v: f32, lid: u32) -> f32 {
  red[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s / 2u) {
    if (lid < s) { red[lid] = max(red[lid], red[lid + s]); }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}

fn wg_sum(v: f32, lid: u32) -> f32 {
  red[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s / 2u) {
    if (lid < s) { red[lid] += red[lid + s]; }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let r = wid.x + wid.y * nwg.x;
  if (r >= p.n_tokens * p.n_heads) { return; }
  let t = r / p.n_heads;
  let h = r % p.n_heads;
  let g = h / (p.n_heads / p.n_kv);
  for (var d = lid; d < p.hd; d += WG) { qs[d] = qkv[t * p.stride + p.q_off + h * p.hd + d] * p.scale; }
  workgroupBarrier();
  let k0 = ranges[2u * t];
  let k1 = ranges[2u * t + 1u];
  let kb = p.k_off + g * p.hd;
  let vb = p.v_off + g * p.hd;
  var m = MASKED;
  var l = 0.0;
  var acc: array<f32, NA>;
  for (var c = k0; c < k1; c += WG) {
    let j = c + lid;
    var s = MASKED;
    if (j < k1) {
      s = 0.0;
      let base = j * p.stride + kb;
      for (var d = 0u; d < p.hd; d++) { s += qs[d] * qkv[base + d]; }
    }
    let m_new = max(m, wg_max(s, lid));
    var pj = 0.0;
    if (j < k1) { pj = exp(s - m_new); }
    ps[lid] = pj;
    let corr = exp(m - m_new);
    l = l * corr + wg_sum(pj, lid);  // its barriers also publish ps
    let n = min(WG, k1 - c);
    for (var a = 0u; a < NA; a++) {
      let d = lid + a * WG;
      if (d < p.hd) {
        var sum = acc[a] * corr;
        for (var jj = 0u; jj < n; jj++) { sum += ps[jj] * qkv[(c + jj) * p.stride + vb + d]; }
        acc[a] = sum;
      }
    }
    m = m_new;
    workgroupBarrier();  // ps is rewritten by the next chunk
  }
  for (var a = 0u; a < NA; a++) {
    let d = lid + a * WG;
    if (d < p.hd) { out[t * p.o_stride + p.o_off + h * p.hd + d] = acc[a] / l; }
  }
}
