// Register-tiled flash attention for prefill (causal, GQA): the same rows, keys and result as
// flash_attn.wgsl, with both products as small register-tiled GEMMs.
//
// Workgroup (x, kvh, z): rows R = wid.x * 64 .. + 63 of kv head kvh, row R = (token t = R / G,
// head h = kvh * G + R % G), so the G query heads that share a kv head share every K/V tile.
// Keys of split z (keys z * split_len .. + split_len - 1, one split: all of them) in blocks of 64
// from the split's first key to the workgroup's last visible key. 256 / RV invocations,
// ty = lid % NY (NY = 16 / RV) owns the RV row quads ty * RV .. (rows 4 * RV * ty .. + 4 * RV - 1),
// tx = lid / NY owns keys tx * 4 .. + 3 of a block's scores S = Q K^T (4 * RV x 4 in registers,
// head_dim in chunks of 32 staged transposed in `wm`) and the output's vec4 columns tx + 16 * a
// (a < NO) of its rows. Online softmax on the scores in registers (each row's block max over its
// 16 invocations through wm); P through wm[PS ..] into P V, V staged in chunks of VK keys.
// Workgroup memory (32 KiB) is written in whole vec4s only; with DC4 16 the Q and K chunks take
// all of it, P's quarter included (written after the block's scores, read before the next
// block's staging, a barrier between each).
// A row's arithmetic depends only on its own position and data (keys in the same blocks of 64
// from each split's first key, masked keys adding exact zeros), not on the rows it shares a
// workgroup with. One split (partial = 0): o = acc / l. Several (partial = 1): the unnormalised
// acc, the max m and the sum l of each row and split, [n][n_heads][n_splits][HD + 2] floats at
// out, for attn_combine.wgsl (whose merge of one visible split is acc / l again).
// q[t * q_stride + q_off + h * HD + d]; caches [n_kv][max_ctx][HD] f32 from cache_off;
// o[t * o_stride + o_off + h * HD + d].
@group(0) @binding(0) var<storage, read> q4: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> k4: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> v4: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
//!include "llm/flash_attn_params.wgsl"
@group(0) @binding(4) var<uniform> p: P;
override HD: u32 = 128;  // head_dim, a multiple of 4, at most 256
override NO: u32 = 2;    // output vec4s per row and invocation: ceil(HD / 64); RV * NO <= 4
override VK: u32 = 32;   // keys per V chunk: a power of two dividing BK, VK * HD / 4 <= BUF4
override RV: u32 = 1;    // row quads per invocation: 1 (4 rows) or 2 (8 rows)
override WG: u32 = 256;  // invocations: 256 / RV
override DC4: u32 = 8;   // vec4s of head_dim per staged chunk of Q and K: 8 or 16
// The staged Q/K chunks hold head_dim element d of row quad g at d * 16 + (g ^ ((d / 4) & SWZ)):
// with SWZ 7 the transposed stores of a warp's 32 staging units (DC4 vec4 columns x 32 / DC4
// quads) fill all 8 vec4 slots of a bank row, a quarter (DC4 8) or an eighth (16) of the passes
// unswizzled (SWZ 0) takes; the reads stay one permutation of 16 consecutive vec4s.
override SWZ: u32 = 7;
const BQ = 64u;          // rows per workgroup
const BK = 64u;          // keys per block
const BUF4 = 1024u;      // vec4s of wm before P: a V chunk, or row statistics
const PS = 1024u;        // wm[PS + k * 16 + row / 4][row % 4]: P
const MASKED: f32 = -3.0e38;

var<workgroup> wm: array<vec4<f32>, 2048>;

fn qk_at(d: u32, g: u32) -> u32 { return d * 16u + (g ^ ((d / 4u) & SWZ)); }

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let HD4 = HD / 4u;
  let NY = 16u / RV;
  let G = p.n_heads / p.n_kv;
  let kvh = wid.y;
  let nrows = p.n * G;
  let r0 = wid.x * BQ;
  let ty = lid % NY;
  let tx = lid / NY;
  let cb = p.cache_off / 4u + kvh * p.max_ctx * HD4;
  let t_last = (min(r0 + BQ, nrows) - 1u) / G;
  let kv_end = p.start + t_last + 1u;
  let k_lo = wid.z * p.split_len;
  let k_hi = min(kv_end, k_lo + p.split_len);

  // the positions of this invocation's rows (for the mask)
  var qpos: array<vec4<u32>, 2>;
  for (var r = 0u; r < RV; r++) {
    for (var i = 0u; i < 4u; i++) { qpos[r][i] = p.start + min(r0 + (ty * RV + r) * 4u + i, nrows - 1u) / G; }
  }
  // the rows' running max (the same in the 16 invocations of a row group) and their sums over
  // this invocation's keys tx * 4 .. + 3 of each block
  var m = array<vec4<f32>, 2>(vec4<f32>(MASKED), vec4<f32>(MASKED));
  var lq = array<vec4<f32>, 2>(vec4<f32>(0.0), vec4<f32>(0.0));

  var acc: array<vec4<f32>, 16>;  // acc[i * NO + a]: row ty * 4 * RV + i, output vec4 tx + 16 * a
  for (var kb = k_lo; kb < k_hi; kb += BK) {
    // ---- S = Q K^T for the block, head_dim in chunks of DC4 vec4s, staged transposed
    // (qk_at(d, g): rows (keys) 4g .. 4g + 3 at d), each staging unit writing whole vec4s
    // s[c * RV + r][i]: key tx * 4 + c, row (ty * RV + r) * 4 + i (zeroed explicitly: a loop-body
    // var without an initializer kept the previous block's values on SwiftShader)
    var s: array<vec4<f32>, 8>;
    for (var j = 0u; j < 8u; j++) { s[j] = vec4<f32>(0.0); }
    for (var c0 = 0u; c0 < HD4; c0 += DC4) {
      workgroupBarrier();
      // staging unit u: 4 rows (Q, u < 16 * DC4) or 4 keys (K) of quad sg, head_dim vec4 sc of the chunk
      for (var u = lid; u < 32u * DC4; u += WG) {
        let sg = (u % (16u * DC4)) / DC4;
        let sc = u % DC4;
        let sk = u >= 16u * DC4;
        var x = array<vec4<f32>, 4>(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
        for (var i = 0u; i < 4u; i++) {
          if (c0 + sc < HD4) {
            if (sk) {
              let key = kb + sg * 4u + i;
              if (key < k_hi) { x[i] = k4[cb + key * HD4 + c0 + sc]; }
            } else {
              let R = min(r0 + sg * 4u + i, nrows - 1u);
              let h = kvh * G + R % G;
              x[i] = q4[((R / G) * p.q_stride + p.q_off + h * HD) / 4u + c0 + sc] * p.scale;
            }
          }
        }
        let base = select(0u, DC4 * 64u, sk);
        for (var j = 0u; j < 4u; j++) {
          wm[base + qk_at(4u * sc + j, sg)] = vec4<f32>(x[0][j], x[1][j], x[2][j], x[3][j]);
        }
      }
      workgroupBarrier();
      for (var d = 0u; d < 4u * DC4; d++) {
        let b = wm[DC4 * 64u + qk_at(d, tx)];
        for (var r = 0u; r < RV; r++) {
          let a = wm[qk_at(d, ty * RV + r)];
          s[r] += a * b.x;
          s[RV + r] += a * b.y;
          s[2u * RV + r] += a * b.z;
          s[3u * RV + r] += a * b.w;
        }
      }
    }
    // ---- online softmax over the block: the rows' max over their 16 invocations
    var bm = array<vec4<f32>, 2>(vec4<f32>(MASKED), vec4<f32>(MASKED));
    for (var c = 0u; c < 4u; c++) {
      let key = kb + tx * 4u + c;
      for (var r = 0u; r < RV; r++) {
        let j = c * RV + r;
        s[j] = select(s[j], vec4<f32>(MASKED), vec4<bool>(key >= k_hi) | (vec4<u32>(key) > qpos[r]));
        bm[r] = max(bm[r], s[j]);
      }
    }
    workgroupBarrier();
    for (var r = 0u; r < RV; r++) { wm[tx * 16u + ty * RV + r] = bm[r]; }
    workgroupBarrier();
    for (var r = 0u; r < RV; r++) {
      let g = ty * RV + r;
      var mb = m[r];
      for (var x = 0u; x < 16u; x++) { mb = max(mb, wm[x * 16u + g]); }
      let corr = exp(m[r] - mb);
      lq[r] *= corr;
      for (var c = 0u; c < 4u; c++) {
        let j = c * RV + r;
        let pe = select(exp(s[j] - mb), vec4<f32>(0.0), s[j] <= vec4<f32>(MASKED));
        wm[PS + (tx * 4u + c) * 16u + g] = pe;
        lq[r] += pe;
      }
      m[r] = mb;
      for (var i = 0u; i < 4u; i++) {
        for (var a = 0u; a < NO; a++) { acc[(r * 4u + i) * NO + a] *= corr[i]; }
      }
    }
    // ---- O += P V, V in chunks of VK keys
    for (var k0 = 0u; k0 < BK; k0 += VK) {
      workgroupBarrier();
      for (var e = lid; e < VK * HD4; e += WG) {
        let key = kb + k0 + e / HD4;
        var vv = vec4<f32>(0.0);
        if (key < k_hi) { vv = v4[cb + key * HD4 + e % HD4]; }
        wm[e] = vv;
      }
      workgroupBarrier();
      for (var k = 0u; k < VK; k++) {
        var pr: array<vec4<f32>, 2>;
        for (var r = 0u; r < RV; r++) { pr[r] = wm[PS + (k0 + k) * 16u + ty * RV + r]; }
        for (var a = 0u; a < NO; a++) {
          let col = tx + 16u * a;
          if (col < HD4) {
            let v = wm[k * HD4 + col];
            for (var r = 0u; r < RV; r++) {
              acc[(r * 4u) * NO + a] += pr[r].x * v;
              acc[(r * 4u + 1u) * NO + a] += pr[r].y * v;
              acc[(r * 4u + 2u) * NO + a] += pr[r].z * v;
              acc[(r * 4u + 3u) * NO + a] += pr[r].w * v;
            }
          }
        }
      }
    }
  }
  // ---- each row's sum from its 16 invocations (in key order), then the output or the partial
  workgroupBarrier();
  for (var r = 0u; r < RV; r++) { wm[tx * 16u + ty * RV + r] = lq[r]; }
  workgroupBarrier();
  for (var r = 0u; r < RV; r++) {
    var l = vec4<f32>(0.0);
    for (var x = 0u; x < 16u; x++) { l += wm[x * 16u + ty * RV + r]; }
    for (var i = 0u; i < 4u; i++) {
      let R = r0 + (ty * RV + r) * 4u + i;
      if (R < nrows) {
        let t = R / G;
        let h = kvh * G + R % G;
        var ob = t * p.o_stride + p.o_off + h * HD;
        if (p.partial != 0u) {
          ob = ((t * p.n_heads + h) * p.n_splits + wid.z) * (HD + 2u);
          if (tx == 0u) {
            out[ob + HD] = m[r][i];
            out[ob + HD + 1u] = l[i];
          }
        }
        for (var a = 0u; a < NO; a++) {
          let col = tx + 16u * a;
          if (col < HD4) {
            var v = acc[(r * 4u + i) * NO + a];
            if (p.partial == 0u) { v = v / l[i]; }
            out[ob + 4u * col] = v.x;
            out[ob + 4u * col + 1u] = v.y;
            out[ob + 4u * col + 2u] = v.z;
            out[ob + 4u * col + 3u] = v.w;
          }
        }
      }
    }
  }
}
