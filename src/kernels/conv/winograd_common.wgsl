// The Winograd F(TILE x TILE, 3x3) transform matrices (Lavin & Gray's), applied to one vector:
// TILE 2 (ALPHA 4) or 4 (ALPHA 6). Vectors are array<f32, 6>; F(2x2) uses the first 4 entries.
override TILE: u32 = 2u;
override ALPHA: u32 = TILE + 2u;
alias V6 = array<f32, 6>;

// G g for a 3-vector: F(2x2) G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1];
// F(4x4) G = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1].
fn g3(a: f32, b: f32, c: f32) -> V6 {
  if (TILE == 2u) { return V6(a, 0.5 * (a + b + c), 0.5 * (a - b + c), c, 0.0, 0.0); }
  return V6(0.25 * a, -(a + b + c) / 6.0, -(a - b + c) / 6.0, a / 24.0 + b / 12.0 + c / 6.0,
            a / 24.0 - b / 12.0 + c / 6.0, c);
}

// B^T d: F(2x2) B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]; F(4x4) B^T = [4 0 -5 0 1 0;
// 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1].
fn bt(v: V6) -> V6 {
  if (TILE == 2u) { return V6(v[0] - v[2], v[1] + v[2], v[2] - v[1], v[1] - v[3], 0.0, 0.0); }
  return V6(4.0 * v[0] - 5.0 * v[2] + v[4], v[3] + v[4] - 4.0 * (v[1] + v[2]), 4.0 * (v[1] - v[2]) + v[4] - v[3],
            2.0 * (v[3] - v[1]) + v[4] - v[2], 2.0 * (v[1] - v[3]) + v[4] - v[2], 4.0 * v[1] - 5.0 * v[3] + v[5]);
}

// A^T m: F(2x2) A^T = [1 1 1 0; 0 1 -1 -1]; F(4x4) A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0;
// 0 1 1 4 4 0; 0 1 -1 8 -8 1]. Returns TILE values (the rest 0).
fn at(v: V6) -> vec4<f32> {
  if (TILE == 2u) { return vec4<f32>(v[0] + v[1] + v[2], v[1] - v[2] - v[3], 0.0, 0.0); }
  let s = v[1] + v[2];
  let d = v[1] - v[2];
  let s2 = v[3] + v[4];
  let d2 = v[3] - v[4];
  return vec4<f32>(v[0] + s + s2, d + 2.0 * d2, s + 4.0 * s2, d + 8.0 * d2 + v[5]);
}
