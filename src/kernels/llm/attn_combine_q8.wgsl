// Combines one token's flash-decoding partials (attn_combine.wgsl's layout [n_heads][n_splits]
// [HD + 2]) and writes the result quantized to 8 bits per block of 32 (quant_act.wgsl's layout:
// the o projection's input, heads back to back): one workgroup per head, one invocation per
// element, HD a multiple of 32. The splits' common max, weights exp(m_s - max) and sum are
// reduced once per head in workgroup memory (attn_merge.wgsl's merge_splits gives the same
// value, each invocation going over every split twice). Preceded by common.wgsl.
@group(0) @binding(0) var<storage, read> part: array<f32>;
@group(0) @binding(1) var<storage, read_write> qs: array<u32>;
@group(0) @binding(2) var<storage, read_write> ds: array<vec2<u32>>;
struct P {
  n_heads: u32,
  n_splits: u32,
}
@group(0) @binding(3) var<uniform> p: P;
override HD: u32 = 128;
override P2: u32 = 128;    // the least power of two >= HD (twice the reductions' first stride)
override MAXS: u32 = 64;   // splits this pipeline takes (>= n_splits)
var<workgroup> vals: array<f32, HD>;
var<workgroup> red: array<f32, HD>;
var<workgroup> wts: array<f32, MAXS>;

// red[0] = max (op 0) or sum (op 1) of red[0 .. HD), in a fixed tree order.
fn reduce(d: u32, op: u32) {
  for (var o = P2 / 2u; o > 0u; o /= 2u) {
    workgroupBarrier();
    if (d < o && d + o < HD) {
      if (op == 0u) {
        red[d] = max(red[d], red[d + o]);
      } else {
        red[d] += red[d + o];
      }
    }
  }
  workgroupBarrier();
}

@compute @workgroup_size(HD)
fn main(@builtin(local_invocation_index) d: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let h = wid.x;
  let ns = p.n_splits;
  let w = HD + 2u;
  let b = h * ns * w;
  var mx = -3.0e38;
  for (var s = d; s < ns; s += HD) { mx = max(mx, part[b + s * w + HD]); }
  red[d] = mx;
  reduce(d, 0u);
  mx = red[0];
  workgroupBarrier();
  var ls = 0.0;
  for (var s = d; s < ns; s += HD) {
    let f = exp(part[b + s * w + HD] - mx);
    wts[s] = f;
    ls += f * part[b + s * w + HD + 1u];
  }
  red[d] = ls;
  reduce(d, 1u);
  // four sums (splits s % 4), so that four loads are in flight, added in a fixed order
  var a = vec4<f32>(0.0);
  var s = 0u;
  for (; s + 4u <= ns; s += 4u) {
    a += vec4<f32>(wts[s], wts[s + 1u], wts[s + 2u], wts[s + 3u]) *
         vec4<f32>(part[b + s * w + d], part[b + (s + 1u) * w + d], part[b + (s + 2u) * w + d],
                   part[b + (s + 3u) * w + d]);
  }
  for (; s < ns; s++) { a.x += wts[s] * part[b + s * w + d]; }
  vals[d] = ((a.x + a.y) + (a.z + a.w)) / red[0];
  workgroupBarrier();
  if (d >= HD / 4u) { return; }
  let g0 = (d / 8u) * 32u;  // this word's block
  var amax = 0.0;
  for (var i = 0u; i < 32u; i++) { amax = max(amax, abs(vals[g0 + i])); }
  let dq = amax / 127.0;
  let id = select(0.0, 1.0 / dq, dq > 0.0);
  let v = vec4<f32>(vals[4u * d], vals[4u * d + 1u], vals[4u * d + 2u], vals[4u * d + 3u]);
  let q = bitcast<vec4<u32>>(vec4<i32>(clamp(round(v * id), vec4<f32>(-127.0), vec4<f32>(127.0)))) & vec4<u32>(0xffu);
  qs[h * (HD / 4u) + d] = q.x | (q.y << 8u) | (q.z << 16u) | (q.w << 24u);
  if (d % 8u == 0u) {
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
    ds[h * (HD / 32u) + d / 8u] = vec2<u32>(bitcast<u32>(dq), (bitcast<u32>(lo) & 0xffffu) | (bitcast<u32>(hi) << 16u));
  }
}
