// The ROPE epilogue of the one-token QKV matvecs (matvec.wgsl through matvec_rope.wgsl,
// matvec_q8.wgsl through matvec_q8_rope.wgsl): rope_kv_append.wgsl for one token on the QKV rows
// ra, rb (one RoPE pair of a head) whose values a, b (bias added) are already stored in y
// unrotated: query pairs rotated in y, key pairs rotated into k_cache, value pairs copied into
// v_cache, at cache row p.pos0 or positions[1] (rflags & 4). The includer binds positions,
// k_cache and v_cache and defines rope_head(ra) (the row's head among the query, key and value
// heads), rope_cs(i) (entry i of the (cos, sin) table) and rope_set_q(i, v) (y[i] = v).

// Whether row ra is a query or key row (rotated), not a value row (copied).
fn rope_rotated(ra: u32) -> bool { return rope_head(ra) < p.heads + p.n_kv; }

// The (cos, sin) that rotates the pair whose first row is ra (a query or key row): its own load,
// so that a matvec can issue it before its sums are ready (matvec_kx.wgsl's EP).
fn rope_cs_of(ra: u32) -> vec2<f32> {
  let hd = p.head_dim;
  var pos = p.pos0;
  if ((p.rflags & 1u) != 0u) { pos = positions[0]; }
  pos = min(pos, p.max_pos - 1u);
  let i = select(ra % hd, (ra % hd) / 2u, (p.rflags & 2u) != 0u);  // the pair's index in its head
  return rope_cs(pos * (hd / 2u) + i);
}

// rope_store with the pair's (cos, sin) cs already loaded (ignored for value rows).
fn rope_store_cs(ra: u32, rb: u32, a: f32, b: f32, cs: vec2<f32>) {
  let hd = p.head_dim;
  let head = rope_head(ra);
  var crow = p.pos0;
  if ((p.rflags & 4u) != 0u) { crow = positions[1]; }
  crow = crow % p.max_ctx;  // a ring (sliding-window layer): the row of the position
  if (head >= p.heads + p.n_kv) {
    let dst = p.cache_off + ((head - p.heads - p.n_kv) * p.max_ctx + crow) * hd;
    v_cache[dst + ra % hd] = a;
    v_cache[dst + rb % hd] = b;
    return;
  }
  let r = rope_rotate(a, b, cs);
  if (head < p.heads) {
    rope_set_q(p.y_off + ra, r.x);
    rope_set_q(p.y_off + rb, r.y);
  } else {
    let dst = p.cache_off + ((head - p.heads) * p.max_ctx + crow) * hd;
    k_cache[dst + ra % hd] = r.x;
    k_cache[dst + rb % hd] = r.y;
  }
}

fn rope_store(ra: u32, rb: u32, a: f32, b: f32) {
  var cs = vec2<f32>(1.0, 0.0);
  if (rope_rotated(ra)) { cs = rope_cs_of(ra); }
  rope_store_cs(ra, rb, a, b, cs);
}
