// The Winograd F(2x2, 3x3) transform matrices (Lavin & Gray's), applied to one vector: TILE
// outputs per side from ALPHA = TILE + 2 inputs per side.
const TILE = 2u;
const ALPHA = 4u;
alias V4 = array<f32, 4>;

// G g for a 3-vector: G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1].
fn g3(a: f32, b: f32, c: f32) -> V4 { return V4(a, 0.5 * (a + b + c), 0.5 * (a - b + c), c); }

// B^T d: B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1].
fn bt(v: V4) -> V4 { return V4(v[0] - v[2], v[1] + v[2], v[2] - v[1], v[1] - v[3]); }

// A^T m: A^T = [1 1 1 0; 0 1 -1 -1].
fn at(v: V4) -> vec2<f32> { return vec2<f32>(v[0] + v[1] + v[2], v[1] - v[2] - v[3]); }
