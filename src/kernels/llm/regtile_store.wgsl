  // The 8 x 8 register tile's output, pasted at the end of llm/matmul_regtile.wgsl and
  // llm/matmul_q8.wgsl: acc[i * 2 + j] holds tokens tm * 4 + i (i < 4) and BM / 2 + tm * 4 + i - 4
  // of the workgroup's m0 .., rows n0 + j * BN / 2 + tn * 4 .. + 3 (matmul/regtile_step.wgsl's
  // layout), stored with batched_store.wgsl's store_acc. Written out rather than looped, so that
  // acc is only ever indexed by constants and stays in registers whatever the compiler unrolls.
  {
    let ta = m0 + tm * 4u;
    let tb = m0 + BM / 2u + tm * 4u;
    let ra = n0 + tn * 4u;
    let rb = ra + BN / 2u;
    store_acc(ta, ra, acc[0]);
    store_acc(ta, rb, acc[1]);
    store_acc(ta + 1u, ra, acc[2]);
    store_acc(ta + 1u, rb, acc[3]);
    store_acc(ta + 2u, ra, acc[4]);
    store_acc(ta + 2u, rb, acc[5]);
    store_acc(ta + 3u, ra, acc[6]);
    store_acc(ta + 3u, rb, acc[7]);
    store_acc(tb, ra, acc[8]);
    store_acc(tb, rb, acc[9]);
    store_acc(tb + 1u, ra, acc[10]);
    store_acc(tb + 1u, rb, acc[11]);
    store_acc(tb + 2u, ra, acc[12]);
    store_acc(tb + 2u, rb, acc[13]);
    store_acc(tb + 3u, ra, acc[14]);
    store_acc(tb + 3u, rb, acc[15]);
  }
