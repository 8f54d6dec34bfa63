// Stores v at C[m][n .. n + 3], the columns past N dropped. Needs C and p declared by the includer.
fn store4(m: u32, n: u32, v: vec4<f32>) {
  let i = m * p.N + n;
  if (n + 3u < p.N) {
    C[i] = v.x;
    C[i + 1u] = v.y;
    C[i + 2u] = v.z;
    C[i + 3u] = v.w;
  } else {
    for (var c = 0u; c < 4u; c++) {
      if (n + c < p.N) { C[i + c] = v[c]; }
    }
  }
}
