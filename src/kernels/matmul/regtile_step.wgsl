    // The inner loop of the 8 x 8 register tile, pasted into the k loop of matmul/regtile_main.wgsl
    // (SGEMM) and llm/matmul_regtile.wgsl (prefill): one BK tile of acc[i * 2 + j] += a[i] * b[j],
    // a = As[k][tm], As[k][tm + BM / 8] (rows tm * 4 .. + 3 and BM / 2 + tm * 4 .. + 3), b likewise
    // from Bs with tn. The includer declares As, Bs (vec4 tiles, k-major, this one at vec4s rt_a
    // and rt_b), BM, BN, BK, tm, tn, acc.
    for (var k = 0u; k < BK; k++) {
      let a0 = As[rt_a + k * (BM / 4u) + tm];
      let a1 = As[rt_a + k * (BM / 4u) + tm + BM / 8u];
      let b0 = Bs[rt_b + k * (BN / 4u) + tn];
      let b1 = Bs[rt_b + k * (BN / 4u) + tn + BN / 8u];
      let av = array<f32, 8>(a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w);
      for (var i = 0u; i < 8u; i++) {
        acc[i * 2u] = fma(vec4<f32>(av[i]), b0, acc[i * 2u]);
        acc[i * 2u + 1u] = fma(vec4<f32>(av[i]), b1, acc[i * 2u + 1u]);
      }
    }
