// Matrix-vector (one token), matvec.wgsl's "kx" schedule for the float weights (F16, BF16, F32):
// the columns are split across the whole workgroup and each invocation keeps its share of x in
// registers, so x is read once per workgroup with no staging barrier and the weight loads start
// at once; the workgroup takes tiles of T rows (tile wg, wg + groups, ...), each invocation
// loading RB rows' chunks at a time (its CPL chunks of each: chunk lid + j * WG), and a tile's
// sums are reduced by a transposed butterfly inside each subgroup (log2 T shuffles per value
// instead of a subgroupAdd per row) and then across the subgroups in subgroup order.
// Same bindings, parameters and epilogues as matvec.wgsl: plain rows (y[y_off + r] = W x
// (+ bias) (+ y)), SWIGLU (gate rows 0 .. rows / 2 - 1, up rows after them: a tile is T / 2 gate
// rows and the same up rows, y[i] = silu(gate) * up) and ROPE (a tile is T / 2 RoPE pairs,
// rope_store on each). x comes through x_load4, each element once per workgroup (XS's contract:
// matvec_x.wgsl, matvec_x_norm.wgsl with X_LATE, matvec_x_combine.wgsl), after x_prologue.
// The first pass's weights are loaded before x_prologue and x, and each later tile's before the
// sums of the tile before; with DB each pass's loads are issued before the pass before is summed.
// XE: x_scale (the late norm's workgroup reduction) right after x is loaded, while the first
// pass's weights are in flight, rather than after the first tile's dot products.
// EP: each tile's epilogue loads (RoPE's (cos, sin), bias, the y it accumulates into) issued at
// the tile's start, with its weights, rather than after its sums (a one-tile workgroup's last
// dependent loads).
// Preceded by a prelude (SWIGLU, ROPE, XS, X_MASK, X_LATE, COLS, NCH, CPL, T, RB, DB, XE, EP, KSG (the
// subgroup size, as a constant: the butterfly's loops unrolled), LT, LSG, P_BINDING;
// XC_* for the combine), common.wgsl, rope_pair.wgsl, a weights/*.wgsl file (bindings 0, 1),
// reduce_sg.wgsl, an x file and matvec_rope.wgsl (ROPE: bindings 5-8) or matvec_q8_norope.wgsl.
//!include "llm/matvec_io.wgsl"
override WG: u32 = 256;
const_assert COLS > 0u && NCH == (COLS + W_CHUNK - 1u) / W_CHUNK && !W_STAGE_X;
const_assert T >= 2u && T <= 32u && (T & (T - 1u)) == 0u && T % RB == 0u;
const XPL: u32 = CPL * W_PARTS;  // x vec4s per invocation
const BF: u32 = min(LT, LSG);     // the butterfly's halvings (LT, LSG: log2 of T and of KSG)
override FULL: bool = NCH % WG == 0u;  // every invocation's chunks are real (no clamp)

var<workgroup> red: array<f32, WG>;                      // group_sum's (x_scale)
var<workgroup> part: array<f32, 2u * (WG / KSG) * T>;  // the subgroups' row sums, two tiles
var<private> xr: array<vec4<f32>, XPL>;
var<private> acc: array<f32, T>;

fn mv_cols() -> u32 { return COLS; }
// The weights file's w_chunk reads x through xq (unused here: chunks go through wc_load / wc_part).
fn xq(i4: u32) -> vec4<f32> { return x4[i4]; }

// Chunk j of this invocation (clamped to the last: its x is zero).
fn kx_chunk(lid: u32, j: u32) -> u32 {
  if (FULL) { return lid + j * WG; }
  return min(lid + j * WG, NCH - 1u);
}

fn load_x(lid: u32) {
  let nx4 = (COLS + 3u) / 4u;
  for (var j = 0u; j < CPL; j++) {
    let c = lid + j * WG;
    for (var q = 0u; q < W_PARTS; q++) {
      let i4 = wc_xoff(c, q);
      var v = vec4<f32>(0.0);
      if (c < NCH && i4 < nx4) {
        v = x_load4(i4);
        if (X_MASK) {
          let e = vec4<u32>(4u * i4) + vec4<u32>(0u, 1u, 2u, 3u);
          v = select(vec4<f32>(0.0), v, e < vec4<u32>(COLS));
        }
      }
      xr[j * W_PARTS + q] = v;
    }
  }
}

// The weight row of tile row r of tile t (clamped to the weight), and whether it is real.
fn tile_row(t: u32, r: u32) -> vec2<u32> {
  var rl: u32;
  var ok: bool;
  if (SWIGLU) {
    let n = p.rows / 2u;
    let gi = t * (T / 2u) + r % (T / 2u);
    ok = gi < n;
    rl = select(gi, n + gi, r >= T / 2u);
  } else if (ROPE) {
    let pi = t * (T / 2u) + r / 2u;
    ok = pi < p.rows / 2u;
    rl = rope_row(min(pi, p.rows / 2u - 1u), r % 2u);
  } else {
    rl = t * T + r;
    ok = rl < p.rows;
  }
  return vec2<u32>(p.row0 + min(rl, p.rows - 1u), select(0u, 1u, ok));
}

// ROPE: row u (0, 1) of RoPE pair pi.
fn rope_row(pi: u32, u: u32) -> u32 { return rope_pair_row(pi, u, p.head_dim, (p.rflags & 2u) != 0u); }

// This invocation's chunks of pass q's RB rows of tile t.
fn load_pass(t: u32, q: u32, lid: u32) -> array<WChunk, RB * CPL> {
  var wb: array<WChunk, RB * CPL>;
  for (var r = 0u; r < RB; r++) {
    let row = tile_row(t, q * RB + r).x;
    for (var j = 0u; j < CPL; j++) { wb[r * CPL + j] = wc_load(row, kx_chunk(lid, j)); }
  }
  return wb;
}

// What a tile's epilogue lane adds to its rows' sums and rotates them by: RoPE's (cos, sin) of
// its pair (ROPE), the bias and the y it accumulates into, of its pair (ROPE) or its row (.x).
struct Epi {
  cs: vec2<f32>,
  bias: vec2<f32>,
  acc: vec2<f32>,
}

// Lane lid's Epi for tile t (ROPE: lanes below T / 2, a pair each; plain rows: lanes below T).
fn epi_load(t: u32, lid: u32) -> Epi {
  var e = Epi(vec2<f32>(1.0, 0.0), vec2<f32>(0.0), vec2<f32>(0.0));
  var ra: u32;
  var rb: u32;
  if (ROPE) {
    if (lid >= T / 2u) { return e; }
    ra = tile_row(t, 2u * lid).x - p.row0;
    rb = tile_row(t, 2u * lid + 1u).x - p.row0;
    if (rope_rotated(ra)) { e.cs = rope_cs_of(ra); }
  } else {
    if (SWIGLU || lid >= T) { return e; }
    ra = min(t * T + lid, p.rows - 1u);
    rb = ra;
  }
  if ((p.flags & 1u) != 0u) { e.bias = vec2<f32>(bias[p.row0 + ra], bias[p.row0 + rb]); }
  if ((p.flags & 2u) != 0u) { e.acc = vec2<f32>(y[p.y_off + ra], y[p.y_off + rb]); }
  return e;
}

// Tile row r's sum over the subgroups (buffer b), in subgroup order.
fn row_sum(b: u32, r: u32) -> f32 {
  var s = 0.0;
  for (var g = 0u; g < WG / KSG; g++) { s += part[(b * (WG / KSG) + g) * T + r]; }
  return s;
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let g0 = wg_linear(wid, nwg);
  let ng = nwg.x * nwg.y;
  w_setup(COLS);
  var tiles: u32;
  if (SWIGLU || ROPE) {
    tiles = (p.rows / 2u + T / 2u - 1u) / (T / 2u);
  } else {
    tiles = (p.rows + T - 1u) / T;
  }
  // The first pass's weights, in flight while x is prepared.
  var wb = load_pass(g0, 0u, lid);
  x_prologue(lid);
  load_x(lid);
  let sl = lid % KSG;
  let sgi = lid / KSG;
  var xsc = 1.0;
  if (XE) { xsc = x_scale(lid); }
  var buf = 0u;
  for (var t = g0; t < tiles; t += ng) {
    var epi: Epi;
    if (EP) { epi = epi_load(t, lid); }
    for (var r = 0u; r < T; r++) { acc[r] = 0.0; }
    for (var q = 0u; q < T / RB; q++) {
      // (pass 0: loaded before x, or during the tile before)
      var nb: array<WChunk, RB * CPL>;
      if (DB) {  // the next pass (or the next tile's first) in flight during this one's math
        if (q + 1u < T / RB) {
          nb = load_pass(t, q + 1u, lid);
        } else if (t + ng < tiles) {
          nb = load_pass(t + ng, 0u, lid);
        }
      } else if (q > 0u) {
        wb = load_pass(t, q, lid);
      }
      for (var r = 0u; r < RB; r++) {
        var s = 0.0;
        for (var j = 0u; j < CPL; j++) {
          for (var k = 0u; k < W_PARTS; k++) { s += dot(wc_part(wb[r * CPL + j], k), xr[j * W_PARTS + k]); }
        }
        acc[q * RB + r] += s;
      }
      if (DB) { wb = nb; }
    }
    // The next tile's first pass, in flight during this tile's sums.
    if (!DB && t + ng < tiles) { wb = load_pass(t + ng, 0u, lid); }
    if (!XE && t == g0) { xsc = x_scale(lid); }
    // Transposed butterfly: at each step the lanes whose mask bit is set keep the upper half of
    // their values and send the lower half; after min(T, SG) halvings lane l holds rows
    // l * T / SG .. (+ T / SG - 1) (T >= SG), or row l / (SG / T) summed over its group of
    // SG / T lanes and then over the groups (T < SG).
    for (var st = 0u; st < BF; st++) {
      let h = T >> (st + 1u);
      let m = KSG >> (st + 1u);
      let up = (sl & m) != 0u;
      for (var i = 0u; i < T / 2u; i++) {
        if (i < h) {
          let send = select(acc[i + h], acc[i], up);
          let keep = select(acc[i], acc[i + h], up);
          acc[i] = keep + subgroupShuffleXor(send, m);
        }
      }
    }
    for (var st = BF; st < LSG; st++) { acc[0] += subgroupShuffleXor(acc[0], KSG >> (st + 1u)); }
    let per = max(T / KSG, 1u);
    let spread = max(KSG / T, 1u);
    if (sl % spread == 0u) {
      let r0 = sl / spread * per;
      for (var i = 0u; i < per; i++) { part[(buf * (WG / KSG) + sgi) * T + r0 + i] = acc[i]; }
    }
    workgroupBarrier();
    if (!EP) { epi = epi_load(t, lid); }
    if (SWIGLU) {
      if (lid < T / 2u && tile_row(t, lid).y == 1u) {
        let gv = row_sum(buf, lid) * xsc;
        y[t * (T / 2u) + lid] = gv / (1.0 + exp(-gv)) * (row_sum(buf, lid + T / 2u) * xsc);
      }
    } else if (ROPE) {
      if (lid < T / 2u && tile_row(t, 2u * lid).y == 1u) {
        let ra = tile_row(t, 2u * lid).x - p.row0;
        let rb = tile_row(t, 2u * lid + 1u).x - p.row0;
        var oa = row_sum(buf, 2u * lid) * xsc;
        var ob = row_sum(buf, 2u * lid + 1u) * xsc;
        if ((p.flags & 1u) != 0u) {
          oa += epi.bias.x;
          ob += epi.bias.y;
        }
        if ((p.flags & 2u) != 0u) {
          oa += epi.acc.x;
          ob += epi.acc.y;
        }
        y[p.y_off + ra] = oa;
        y[p.y_off + rb] = ob;
        rope_store_cs(ra, rb, oa, ob, epi.cs);
      }
    } else if (lid < T && tile_row(t, lid).y == 1u) {
      let rl = t * T + lid;
      var o = row_sum(buf, lid) * xsc;
      if ((p.flags & 1u) != 0u) { o += epi.bias.x; }
      if ((p.flags & 2u) != 0u) { o += epi.acc.x; }
      y[p.y_off + rl] = o;
    }
    buf = 1u - buf;
  }
}
