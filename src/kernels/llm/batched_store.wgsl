// The output of the linear kernels with several tokens (linear_batched.wgsl,
// linear_batched_q8.wgsl, matmul_regtile.wgsl, matmul_q8.wgsl): rows rl .. rl + 3 of token tok
// (those < p.rows) from v, plus the bias and the old y as p.flags say; store_rows_n: the first nr.
fn store_rows(tok: u32, rl: u32, v: vec4<f32>) { store_rows_n(tok, rl, v, 4u); }
fn store_rows_n(tok: u32, rl: u32, v: vec4<f32>, nr: u32) {
  for (var r = 0u; r < nr; r++) {
    if (rl + r >= p.rows) { break; }
    var o = v[r];
    if ((p.flags & 1u) != 0u) { o += bias[p.row0 + rl + r]; }
    let yi = tok * p.y_stride + p.y_off + rl + r;
    if ((p.flags & 2u) != 0u) { o += y[yi]; }
    y[yi] = o;
  }
}
// store_rows for token tok if it is one of the p.n tokens (the register tiles' edges).
fn store_acc(tok: u32, rl: u32, v: vec4<f32>) {
  if (tok < p.n) { store_rows(tok, rl, v); }
}
