        // One k step of the 8 x 8 register tile, pasted into matmul/regtile_db.wgsl's k loops:
        // acc[i * 2 + j] += a[i] * b[j] with a = (f.a0, f.a1), b = (f.b0, f.b1) (the includer's
        // Frag f and acc).
        let av = array<f32, 8>(f.a0.x, f.a0.y, f.a0.z, f.a0.w, f.a1.x, f.a1.y, f.a1.z, f.a1.w);
        for (var i = 0u; i < 8u; i++) {
          acc[i * 2u] = fma(vec4<f32>(av[i]), f.b0, acc[i * 2u]);
          acc[i * 2u + 1u] = fma(vec4<f32>(av[i]), f.b1, acc[i * 2u + 1u]);
        }
