// Combines one token's flash-decoding partials (attn_combine.wgsl's layout [n_heads][n_splits]
// [HD + 2]) and writes the result quantized to 8 bits per block of 32 (quant_act.wgsl's layout:
// the o projection's input, heads back to back): one workgroup per head, SP invocations per
// element (invocation j merges splits j, j + SP, .. with attn_merge.wgsl's merge_strided, then
// invocation 0 merges the SP results the same way: SP = 1 adds exactly as merge_splits; more run
// the splits' loads side by side), HD a multiple of 32. Preceded by common.wgsl.
@group(0) @binding(0) var<storage, read> part: array<f32>;
@group(0) @binding(1) var<storage, read_write> qs: array<u32>;
@group(0) @binding(2) var<storage, read_write> ds: array<vec2<u32>>;
struct P {
  n_heads: u32,
  n_splits: u32,
}
@group(0) @binding(3) var<uniform> p: P;
override HD: u32 = 128;
override SP: u32 = 1;
var<workgroup> vals: array<f32, HD>;
var<workgroup> pm: array<f32, HD * SP>;  // each invocation's max, sum of weights and weighted sum
var<workgroup> pl: array<f32, HD * SP>;
var<workgroup> pa: array<f32, HD * SP>;
//!include "llm/attn_merge.wgsl"

@compute @workgroup_size(HD * SP)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let h = wid.x;
  let d = lid % HD;
  let j = lid / HD;
  let r = merge_strided(h * p.n_splits * (HD + 2u), j, SP, p.n_splits, HD, d);
  if (SP == 1u) {
    vals[d] = r.z / r.y;
  } else {
    pm[lid] = r.x;
    pl[lid] = r.y;
    pa[lid] = r.z;
    workgroupBarrier();
    if (j == 0u) {
      var m2 = -3.0e38;
      for (var k = 0u; k < SP; k++) { m2 = max(m2, pm[k * HD + d]); }
      var l2 = 0.0;
      var a2 = 0.0;
      for (var k = 0u; k < SP; k++) {
        let f = exp(pm[k * HD + d] - m2);
        l2 += f * pl[k * HD + d];
        a2 += f * pa[k * HD + d];
      }
      vals[d] = a2 / l2;
    }
  }
  workgroupBarrier();
  if (lid >= HD / 4u) { return; }
  let g0 = (lid / 8u) * 32u;  // this word's block
  var amax = 0.0;
  for (var i = 0u; i < 32u; i++) { amax = max(amax, abs(vals[g0 + i])); }
  let dq = amax / 127.0;
  let id = select(0.0, 1.0 / dq, dq > 0.0);
  let v = vec4<f32>(vals[4u * lid], vals[4u * lid + 1u], vals[4u * lid + 2u], vals[4u * lid + 3u]);
  let q = bitcast<vec4<u32>>(vec4<i32>(clamp(round(v * id), vec4<f32>(-127.0), vec4<f32>(127.0)))) & vec4<u32>(0xffu);
  qs[h * (HD / 4u) + lid] = q.x | (q.y << 8u) | (q.z << 16u) | (q.w << 24u);
  if (lid % 8u == 0u) {
    var lo = 0i;
    var hi = 0i;
    for (var i = 0u; i < 32u; i++) {
      let qi = i32(clamp(round(vals[g0 + i] * id), -127.0, 127.0));
      if (i < 16u) {
        lo += qi;
      } else {
        hi += qi;
      }
    }
    ds[h * (HD / 32u) + lid / 8u] = vec2<u32>(bitcast<u32>(dq), (bitcast<u32>(lo) & 0xffffu) | (bitcast<u32>(hi) << 16u));
  }
}
