// paged_attn_combine.wgsl and quant_act.wgsl (mode 0) in one pass: the splits of paged_attn.wgsl's
// partials [tok][n_heads][n_splits][HD + 2] for batch row tok at position positions[tok] (splits
// 0 .. pos / split_len, merge_splits' order), quantized to 8 bits per block of 32 into the o
// projection's input (quant_act.wgsl's layout, heads back to back: cols = n_heads * HD). One
// workgroup of HD invocations per (token, head), HD a multiple of 32. The same bits as the two
// passes: each element merged as paged_attn_combine does, each block quantized as quant_act does
// (d = max|v| / 127, q = round(v / d); the sums of integers in any order). Preceded by common.wgsl.
@group(0) @binding(0) var<storage, read> part: array<f32>;
@group(0) @binding(1) var<storage, read> positions: array<u32>;
@group(0) @binding(2) var<storage, read_write> qs: array<u32>;
@group(0) @binding(3) var<storage, read_write> ds: array<vec2<u32>>;
struct P {
  n: u32,
  n_heads: u32,
  n_splits: u32,
  head_dim: u32,  // HD (merge_splits takes it from here, as paged_attn_combine.wgsl)
  split_len: u32,
}
@group(0) @binding(4) var<uniform> p: P;
override HD: u32 = 128;
var<workgroup> vals: array<f32, HD>;
var<workgroup> sums: array<i32, HD / 4u>;
//!include "llm/attn_merge.wgsl"

@compute @workgroup_size(HD)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let th = wg_linear(wid, nwg);  // tok * n_heads + h
  if (th >= p.n * p.n_heads) { return; }
  let tok = th / p.n_heads;
  let ns = positions[tok] / p.split_len + 1u;
  vals[lid] = merge_splits(th * p.n_splits * (HD + 2u), ns, p.head_dim, lid);
  workgroupBarrier();
  let g0 = (lid / 8u) * 32u;  // word lid's block (words lid < HD / 4)
  var d = 0.0;
  var wi = 0u;
  if (lid < HD / 4u) {
    var amax = 0.0;
    for (var i = 0u; i < 32u; i++) { amax = max(amax, abs(vals[g0 + i])); }
    d = amax / 127.0;
    let id = select(0.0, 1.0 / d, d > 0.0);
    let v = vec4<f32>(vals[4u * lid], vals[4u * lid + 1u], vals[4u * lid + 2u], vals[4u * lid + 3u]);
    let q = vec4<i32>(clamp(round(v * id), vec4<f32>(-127.0), vec4<f32>(127.0)));
    sums[lid] = q.x + q.y + q.z + q.w;
    let b = bitcast<vec4<u32>>(q) & vec4<u32>(0xffu);
    wi = th * (HD / 4u) + lid;  // heads back to back: word wi of the token's quants
    qs[wi] = b.x | (b.y << 8u) | (b.z << 16u) | (b.w << 24u);
  }
  workgroupBarrier();
  if (lid < HD / 4u && lid % 8u == 0u) {
    let lo = sums[lid] + sums[lid + 1u] + sums[lid + 2u] + sums[lid + 3u];
    let hi = sums[lid + 4u] + sums[lid + 5u] + sums[lid + 6u] + sums[lid + 7u];
    ds[wi / 8u] = vec2<u32>(bitcast<u32>(d), (bitcast<u32>(lo) & 0xffffu) | (bitcast<u32>(hi) << 16u));
  }
}
