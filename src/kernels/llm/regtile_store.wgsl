  // The 8 x 8 register tile's output, pasted at the end of llm/matmul_regtile.wgsl and
  // llm/matmul_q8.wgsl: acc[i * 2 + j] holds tokens tm * 4 + i (i < 4) and BM / 2 + tm * 4 + i - 4
  // of the workgroup's m0 .., rows n0 + j * BN / 2 + tn * 4 .. + 3 (matmul/regtile_step.wgsl's
  // layout), stored with batched_store.wgsl's store_rows (pasted, so that acc is only indexed by
  // constants once the loops are unrolled).
  for (var i = 0u; i < 8u; i++) {
    let t = m0 + select(tm * 4u + i, BM / 2u + tm * 4u + (i - 4u), i >= 4u);
    if (t >= p.n) { continue; }
    for (var j = 0u; j < 2u; j++) { store_rows(t, n0 + j * (BN / 2u) + tn * 4u, acc[i * 2u + j]); }
  }
