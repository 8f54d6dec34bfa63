      // One k step of the 8 x 16 register tile (regtile_db16.wgsl's loops): acc<j / 2>[i * 2 + j % 2] += a[i] * b[j].
      let ra = buf * AS + k * (BM / 4u) + tm;
      let a0 = As[ra];
      let a1 = As[ra + BM / 8u];
      let rb = buf * BS + k * (BN / 4u) + tn;
      let b0 = Bs[rb];
      let b1 = Bs[rb + NTN];
      let b2 = Bs[rb + 2u * NTN];
      let b3 = Bs[rb + 3u * NTN];
      let av = array<f32, 8>(a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w);
      for (var i = 0u; i < 8u; i++) {
        acc0[i * 2u] = fma(vec4<f32>(av[i]), b0, acc0[i * 2u]);
        acc0[i * 2u + 1u] = fma(vec4<f32>(av[i]), b1, acc0[i * 2u + 1u]);
        acc1[i * 2u] = fma(vec4<f32>(av[i]), b2, acc1[i * 2u]);
        acc1[i * 2u + 1u] = fma(vec4<f32>(av[i]), b3, acc1[i * 2u + 1u]);
      }
