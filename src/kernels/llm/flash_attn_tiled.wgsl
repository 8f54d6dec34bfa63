// Register-tiled flash attention for prefill (causal, GQA): the same rows, keys and result as
// flash_attn.wgsl with one split (partial = 0), with both products as small register-tiled GEMMs.
//
// Workgroup (x, kvh): rows R = wid.x * 64 .. + 63 of kv head kvh, row R = (token t = R / G, head
// h = kvh * G + R % G), so the G query heads that share a kv head share every K/V tile. Keys in
// blocks of 64 from 0 to the workgroup's last visible key. 256 invocations, ty = lid % 16 owns
// rows ty * 4 .. + 3, tx = lid / 16 owns keys tx * 4 .. + 3 of a block's scores S = Q K^T (4 x 4
// in registers, head_dim in chunks of 32 staged transposed in `buf`) and the output's vec4
// columns tx + 16 * a (a < NO) of its 4 rows. Online softmax on the scores in registers (each
// row's block max over its 16 invocations through buf); P through `ps` into P V, V staged in
// chunks of VK keys. Workgroup memory is written in whole vec4s only.
// A row's arithmetic depends only on its own position and data (keys in the same blocks of 64
// from 0, masked keys adding exact zeros), not on the rows it shares a workgroup with.
// q[t * q_stride + q_off + h * HD + d]; caches [n_kv][max_ctx][HD] f32 from cache_off;
// o[t * o_stride + o_off + h * HD + d].
@group(0) @binding(0) var<storage, read> q4: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> k4: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> v4: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
//!include "llm/flash_attn_params.wgsl"
@group(0) @binding(4) var<uniform> p: P;
override HD: u32 = 128;  // head_dim, a multiple of 4, at most 256
override NO: u32 = 2;    // output vec4s per row and invocation: ceil(HD / 64)
override VK: u32 = 32;   // keys per V chunk: a power of two dividing BK, VK * HD / 4 <= BUF4
const BQ = 64u;          // rows per workgroup
const BK = 64u;          // keys per block
const DC4 = 8u;          // vec4s of head_dim per staged chunk of Q and K
const BUF4 = 1024u;      // vec4s of buf (16 KiB): the Q and K chunks, or a V chunk, or row statistics
const MASKED: f32 = -3.0e38;

var<workgroup> buf: array<vec4<f32>, BUF4>;
var<workgroup> ps: array<vec4<f32>, BK * BQ / 4u>;  // ps[k * 16 + row / 4][row % 4]: P

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let HD4 = HD / 4u;
  let G = p.n_heads / p.n_kv;
  let kvh = wid.y;
  let nrows = p.n * G;
  let r0 = wid.x * BQ;
  let ty = lid % 16u;
  let tx = lid / 16u;
  let cb = p.cache_off / 4u + kvh * p.max_ctx * HD4;
  let t_last = (min(r0 + BQ, nrows) - 1u) / G;
  let kv_end = min(p.start + p.n, p.start + t_last + 1u);

  // the positions of this invocation's 4 rows (for the mask)
  var qpos: vec4<u32>;
  for (var i = 0u; i < 4u; i++) { qpos[i] = p.start + min(r0 + ty * 4u + i, nrows - 1u) / G; }
  var m = vec4<f32>(MASKED);  // the 4 rows' running max (the same in the 16 invocations of a row group)
  var lq = vec4<f32>(0.0);    // their sums over this invocation's keys tx * 4 .. + 3 of each block
  // staging role: 4 rows (Q, lid < 128) or 4 keys (K) of group sg, head_dim vec4 sc of the chunk
  let sg = (lid % 128u) / DC4;
  let sc = lid % DC4;
  let sk = lid >= 128u;

  var acc: array<vec4<f32>, 16>;  // acc[i * 4 + a]: row ty * 4 + i, output vec4 tx + 16 * a
  for (var kb = 0u; kb < kv_end; kb += BK) {
    // ---- S = Q K^T for the block, head_dim in chunks of DC4 vec4s, staged transposed
    // (buf[d * 16 + g]: rows (keys) 4g .. 4g + 3 at d), each invocation writing whole vec4s
    // s[c][i]: key tx * 4 + c, row ty * 4 + i (zeroed explicitly: a loop-body var without an
    // initializer kept the previous block's values on SwiftShader)
    var s = array<vec4<f32>, 4>(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    for (var c0 = 0u; c0 < HD4; c0 += DC4) {
      workgroupBarrier();
      var x = array<vec4<f32>, 4>(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
      for (var i = 0u; i < 4u; i++) {
        if (c0 + sc < HD4) {
          if (sk) {
            let key = kb + sg * 4u + i;
            if (key < kv_end) { x[i] = k4[cb + key * HD4 + c0 + sc]; }
          } else {
            let R = min(r0 + sg * 4u + i, nrows - 1u);
            let h = kvh * G + R % G;
            x[i] = q4[((R / G) * p.q_stride + p.q_off + h * HD) / 4u + c0 + sc] * p.scale;
          }
        }
      }
      let base = select(0u, DC4 * 64u, sk);
      for (var j = 0u; j < 4u; j++) { buf[base + (4u * sc + j) * 16u + sg] = vec4<f32>(x[0][j], x[1][j], x[2][j], x[3][j]); }
      workgroupBarrier();
      for (var d = 0u; d < 4u * DC4; d++) {
        let a = buf[d * 16u + ty];
        let b = buf[DC4 * 64u + d * 16u + tx];
        s[0] += a * b.x;
        s[1] += a * b.y;
        s[2] += a * b.z;
        s[3] += a * b.w;
      }
    }
    // ---- online softmax over the block: the 4 rows' max over their 16 invocations
    var bm = vec4<f32>(MASKED);
    for (var c = 0u; c < 4u; c++) {
      let key = kb + tx * 4u + c;
      s[c] = select(s[c], vec4<f32>(MASKED), vec4<bool>(key >= kv_end) | (vec4<u32>(key) > qpos));
      bm = max(bm, s[c]);
    }
    workgroupBarrier();
    buf[tx * 16u + ty] = bm;
    workgroupBarrier();
    var mb = m;
    for (var x = 0u; x < 16u; x++) { mb = max(mb, buf[x * 16u + ty]); }
    let corr = exp(m - mb);
    lq *= corr;
    for (var c = 0u; c < 4u; c++) {
      let pe = select(exp(s[c] - mb), vec4<f32>(0.0), s[c] <= vec4<f32>(MASKED));
      ps[(tx * 4u + c) * 16u + ty] = pe;
      lq += pe;
    }
    m = mb;
    for (var i = 0u; i < 4u; i++) {
      for (var a = 0u; a < NO; a++) { acc[i * 4u + a] *= corr[i]; }
    }
    // ---- O += P V, V in chunks of VK keys
    for (var k0 = 0u; k0 < BK; k0 += VK) {
      workgroupBarrier();
      for (var e = lid; e < VK * HD4; e += 256u) {
        let key = kb + k0 + e / HD4;
        var vv = vec4<f32>(0.0);
        if (key < kv_end) { vv = v4[cb + key * HD4 + e % HD4]; }
        buf[e] = vv;
      }
      workgroupBarrier();
      for (var k = 0u; k < VK; k++) {
        let pr = ps[(k0 + k) * 16u + ty];
        for (var a = 0u; a < NO; a++) {
          let col = tx + 16u * a;
          if (col < HD4) {
            let v = buf[k * HD4 + col];
            acc[a] += pr.x * v;
            acc[4u + a] += pr.y * v;
            acc[8u + a] += pr.z * v;
            acc[12u + a] += pr.w * v;
          }
        }
      }
    }
  }
  // ---- each row's sum from its 16 invocations (in key order), then the output
  workgroupBarrier();
  buf[tx * 16u + ty] = lq;
  workgroupBarrier();
  var l = vec4<f32>(0.0);
  for (var x = 0u; x < 16u; x++) { l += buf[x * 16u + ty]; }
  for (var i = 0u; i < 4u; i++) {
    let row = ty * 4u + i;
    let R = r0 + row;
    if (R >= nrows) { break; }
    let inv = 1.0 / l[i];
    let t = R / G;
    let h = kvh * G + R % G;
    let ob = t * p.o_stride + p.o_off + h * HD;
    for (var a = 0u; a < NO; a++) {
      let col = tx + 16u * a;
      if (col < HD4) {
        let v = acc[i * 4u + a] * inv;
        out[ob + 4u * col] = v.x;
        out[ob + 4u * col + 1u] = v.y;
        out[ob + 4u * col + 2u] = v.z;
        out[ob + 4u * col + 3u] = v.w;
      }
    }
  }
}
