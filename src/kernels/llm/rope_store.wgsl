// The ROPE epilogue of the one-token QKV matvecs (matvec.wgsl through matvec_rope.wgsl,
// matvec_q8.wgsl through matvec_q8_rope.wgsl): rope_kv_append.wgsl for one token on the QKV rows
// ra, rb (one RoPE pair of a head) whose values a, b (bias added) are already stored in y
// unrotated: query pairs rotated in y, key pairs rotated into k_cache, value pairs copied into
// v_cache, at cache row p.pos0 or positions[1] (rflags & 4). The includer binds positions,
// k_cache and v_cache and defines rope_head(ra) (the row's head among the query, key and value
// heads), rope_cs(i) (entry i of the (cos, sin) table) and rope_set_q(i, v) (y[i] = v).
fn rope_store(ra: u32, rb: u32, a: f32, b: f32) {
  let hd = p.head_dim;
  let head = rope_head(ra);
  var crow = p.pos0;
  if ((p.rflags & 4u) != 0u) { crow = positions[1]; }
  if (head >= p.heads + p.n_kv) {
    let dst = p.cache_off + ((head - p.heads - p.n_kv) * p.max_ctx + crow) * hd;
    v_cache[dst + ra % hd] = a;
    v_cache[dst + rb % hd] = b;
    return;
  }
  var pos = p.pos0;
  if ((p.rflags & 1u) != 0u) { pos = positions[0]; }
  pos = min(pos, p.max_pos - 1u);
  let i = select(ra % hd, (ra % hd) / 2u, (p.rflags & 2u) != 0u);  // the pair's index in its head
  let r = rope_rotate(a, b, rope_cs(pos * (hd / 2u) + i));
  if (head < p.heads) {
    rope_set_q(p.y_off + ra, r.x);
    rope_set_q(p.y_off + rb, r.y);
  } else {
    let dst = p.cache_off + ((head - p.heads) * p.max_ctx + crow) * hd;
    k_cache[dst + ra % hd] = r.x;
    k_cache[dst + rb % hd] = r.y;
  }
}
