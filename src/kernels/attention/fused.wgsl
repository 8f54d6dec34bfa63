// Fused attention (cpu/fused_attention.h): out[row] = softmax(scale * q[row] . Kt + mask) x V, one
// workgroup per (batch entry, query row), the scores never written to memory. Pass 1: each
// invocation takes every WG-th key, keeping a running maximum and sum of exponentials (online
// softmax), and the workgroup combines them. Pass 2: the keys in chunks of WG, each invocation
// scoring one key of the chunk into workgroup memory, then every invocation adding the chunk's
// weighted value rows into its own output columns (CPT per invocation; wider rows take more
// column blocks, each scoring the keys again). Keys scored -inf contribute nothing; a row of only
// those gives NaN, as softmax does.
struct Params {
  rows: u32,
  lq: u32,
  lk: u32,
  d: u32,
  dv: u32,
  m_row: u32,
  m_col: u32,
  has_mask: u32,
  scale: f32,
  neg_inf: f32,  // -inf from the host (WGSL's constant expressions cannot hold it)
  pad1: u32,
  pad2: u32,
  batch: vec4<u32>,
  qs: vec4<u32>,
  ks: vec4<u32>,
  vs: vec4<u32>,
  ms: vec4<u32>,
}
@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> kt: array<f32>;
@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(3) var<storage, read> mask: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<uniform> p: Params;

override WG: u32 = 64u;
const CPT: u32 = 4u;  // output columns per invocation per column block

var<workgroup> red_m: array<f32, WG>;
var<workgroup> red_l: array<f32, WG>;
var<workgroup> sc: array<f32, WG>;

fn score(qo: u32, ko: u32, mo: u32, i: u32, j: u32) -> f32 {
  var acc = 0.0;
  for (var k = 0u; k < p.d; k++) { acc += q[qo + i * p.d + k] * kt[ko + k * p.lk + j]; }
  acc *= p.scale;
  if (p.has_mask == 1u) { acc += mask[mo + i * p.m_row + j * p.m_col]; }
  return acc;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let r = wid.x + wid.y * nwg.x;
  if (r >= p.rows) { return; }
  let NEG_INF = p.neg_inf;
  let b = r / p.lq;
  let i = r % p.lq;
  var rest = b;
  var qo = 0u;
  var ko = 0u;
  var vo = 0u;
  var mo = 0u;
  for (var t = 0u; t < 4u; t++) {
    let dim = 3u - t;
    let c = rest % p.batch[dim];
    rest = rest / p.batch[dim];
    qo += c * p.qs[dim];
    ko += c * p.ks[dim];
    vo += c * p.vs[dim];
    mo += c * p.ms[dim];
  }

  // Pass 1: the row's largest score and sum of exponentials.
  var m = NEG_INF;
  var l = 0.0;
  for (var j = lid; j < p.lk; j += WG) {
    let s = score(qo, ko, mo, i, j);
    if (s == NEG_INF) { continue; }
    if (s > m) {
      l = l * exp(m - s) + 1.0;
      m = s;
    } else {
      l += exp(s - m);
    }
  }
  red_m[lid] = m;
  red_l[lid] = l;
  workgroupBarrier();
  for (var h = WG / 2u; h > 0u; h = h / 2u) {
    if (lid < h) {
      let m1 = red_m[lid];
      let m2 = red_m[lid + h];
      let mm = max(m1, m2);
      if (mm != p.neg_inf) {
        red_l[lid] = red_l[lid] * exp(m1 - mm) + red_l[lid + h] * exp(m2 - mm);
      }
      red_m[lid] = mm;
    }
    workgroupBarrier();
  }
  let M = red_m[0];
  let L = red_l[0];

  // Pass 2: the weighted sum of value rows, CPT columns per invocation per block.
  let block = WG * CPT;
  let nblocks = (p.dv + block - 1u) / block;
  for (var cb = 0u; cb < nblocks; cb++) {
    var acc: array<f32, CPT>;
    for (var t = 0u; t < CPT; t++) { acc[t] = 0.0; }
    for (var j0 = 0u; j0 < p.lk; j0 += WG) {
      let j = j0 + lid;
      var w = 0.0;
      if (j < p.lk) {
        let s = score(qo, ko, mo, i, j);
        w = select(exp(s - M), 0.0, s == NEG_INF);
      }
      workgroupBarrier();
      sc[lid] = w;
      workgroupBarrier();
      let n = min(WG, p.lk - j0);
      for (var u = 0u; u < n; u++) {
        let pw = sc[u];
        let row = vo + (j0 + u) * p.dv;
        for (var t = 0u; t < CPT; t++) {
          let c = cb * block + t * WG + lid;
          if (c < p.dv) { acc[t] += pw * v[row + c]; }
        }
      }
    }
    for (var t = 0u; t < CPT; t++) {
      let c = cb * block + t * WG + lid;
      if (c < p.dv) { out[r * p.dv + c] = acc[t] / L; }
    }
  }
}
