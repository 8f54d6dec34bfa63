      // One k step of the 8 x 8 register tile (matmul/regtile_step.wgsl's loop body, also in
      // regtile_db.wgsl's loops): acc[i * 2 + j] += a[i] * b[j] for step k of the tile at rt_a, rt_b.
      let a0 = As[rt_a + k * (BM / 4u) + tm];
      let a1 = As[rt_a + k * (BM / 4u) + tm + BM / 8u];
      let b0 = Bs[rt_b + k * (BN / 4u) + tn];
      let b1 = Bs[rt_b + k * (BN / 4u) + tn + BN / 8u];
      let av = array<f32, 8>(a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w);
      for (var i = 0u; i < 8u; i++) {
        acc[i * 2u] = fma(vec4<f32>(av[i]), b0, acc[i * 2u]);
        acc[i * 2u + 1u] = fma(vec4<f32>(av[i]), b1, acc[i * 2u + 1u]);
      }
