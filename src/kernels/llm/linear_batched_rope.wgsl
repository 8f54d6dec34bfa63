// linear_batched_q8.wgsl's ROPE epilogue: rope_kv_append.wgsl's work for the step's tokens, on the
// outputs of a fused QKV weight (p.heads query heads, then p.n_kv key heads, then as many value
// heads, p.head_dim rows each). Each row group takes TR / 2 RoPE pairs (numbered head by head),
// so the lane that adds up a token's sums holds both halves of each pair: query pairs rotated
// into y, key pairs rotated into k_cache, value pairs copied into v_cache, at the token's cache
// row (positions[n + t] with rflags & 4, else pos0 + t), rotated by position positions[t] (rflags
// & 1, else pos0 + t; clamped to max_pos - 1); key and value pairs are also stored in y as they
// are (as rope_kv_append leaves them). The same arithmetic as the linear then rope_kv_append.
//!include "llm/rope_pair.wgsl"
@group(0) @binding(6) var<storage, read> cs: array<vec2<f32>>;  // the RoPE table's (cos, sin)
@group(0) @binding(7) var<storage, read> positions: array<u32>;
@group(0) @binding(8) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(9) var<storage, read_write> v_cache: array<f32>;

// The rows of row group gg's TR / 2 pairs (past the last pair: the last pair's).
fn rope_rows(gg: u32) -> array<u32, 4> {
  var rows: array<u32, 4>;
  for (var j = 0u; j < TR / 2u; j++) {
    let pi = min(gg * (TR / 2u) + j, p.rows / 2u - 1u);
    rows[2u * j] = rope_pair_row(pi, 0u, p.head_dim, (p.rflags & 2u) != 0u);
    rows[2u * j + 1u] = rope_pair_row(pi, 1u, p.head_dim, (p.rflags & 2u) != 0u);
  }
  return rows;
}

// Token tok's outputs v of row group gg (rows from rope_rows).
fn rope_store_rows(tok: u32, gg: u32, rows: array<u32, 4>, v: vec4<f32>) {
  let hd = p.head_dim;
  let half = hd / 2u;
  var crow = p.pos0 + tok;
  if ((p.rflags & 4u) != 0u) { crow = positions[p.n + tok]; }
  crow = crow % p.max_ctx;  // a ring (sliding-window layer): the row of the position
  var pos = p.pos0 + tok;
  if ((p.rflags & 1u) != 0u) { pos = positions[tok]; }
  pos = min(pos, p.max_pos - 1u);
  let yb = tok * p.y_stride + p.y_off;
  for (var j = 0u; j < TR / 2u; j++) {
    let pi = gg * (TR / 2u) + j;
    if (pi >= p.rows / 2u) { break; }
    let ra = rows[2u * j];
    let rb = rows[2u * j + 1u];
    var a = v[2u * j];
    var b = v[2u * j + 1u];
    if ((p.flags & 1u) != 0u) {
      a += bias[ra];
      b += bias[rb];
    }
    let head = ra / hd;
    if (head >= p.heads + p.n_kv) {
      let dst = p.cache_off + ((head - p.heads - p.n_kv) * p.max_ctx + crow) * hd;
      v_cache[dst + ra % hd] = a;
      v_cache[dst + rb % hd] = b;
      y[yb + ra] = a;
      y[yb + rb] = b;
      continue;
    }
    let r = rope_rotate(a, b, cs[pos * half + pi % half]);
    if (head < p.heads) {
      y[yb + ra] = r.x;
      y[yb + rb] = r.y;
    } else {
      let dst = p.cache_off + ((head - p.heads) * p.max_ctx + crow) * hd;
      k_cache[dst + ra % hd] = r.x;
      k_cache[dst + rb % hd] = r.y;
      y[yb + ra] = a;
      y[yb + rb] = b;
    }
  }
}
