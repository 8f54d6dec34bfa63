// C = A x B with TILE x TILE blocks of A and B staged in workgroup memory: each global element
// is read once per tile instead of once per output.
@group(0) @binding(0) var<storage, read> A: array<f32>;
@group(0) @binding(1) var<storage, read> B: array<f32>;
@group(0) @binding(2) var<storage, read_write> C: array<f32>;
struct Params { M: u32, N: u32, K: u32, trans_b: u32 }
@group(0) @binding(3) var<uniform> p: Params;

const TILE = 16u;
var<workgroup> As: array<array<f32, TILE>, TILE>;
var<workgroup> Bs: array<array<f32, TILE>, TILE>;

@compute @workgroup_size(TILE, TILE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let m = wid.y * TILE + lid.y;
  let n = wid.x * TILE + lid.x;
  var acc = 0.0;
  for (var k0 = 0u; k0 < p.K; k0 += TILE) {
    // As[y][x] = A[m, k0+x]; Bs[y][x] = B[k0+y, n] (zero outside the matrices).
    let ka = k0 + lid.x;
    var a = 0.0;
    if (m < p.M && ka < p.K) { a = A[m * p.K + ka]; }
    As[lid.y][lid.x] = a;
    let kb = k0 + lid.y;
    var b = 0.0;
    if (n < p.N && kb < p.K) {
      if (p.trans_b != 0u) { b = B[n * p.K + kb]; } else { b = B[kb * p.N + n]; }
    }
    Bs[lid.y][lid.x] = b;
    workgroupBarrier();
    for (var k = 0u; k < TILE; k++) { acc += As[lid.y][k] * Bs[k][lid.x]; }
    workgroupBarrier();
  }
  if (m < p.M && n < p.N) { C[m * p.N + n] = acc; }
}
