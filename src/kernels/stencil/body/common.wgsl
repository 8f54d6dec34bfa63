// Shared by the stencil kernels (not a kernel on its own). The including file declares
// `alias V = f32;` (one channel of an interleaved image per workgroup z) or `alias V = vec4<f32>;`
// (a whole RGBA pixel per element), and a uniform `p` with fields w, h (pixels) and c (elements
// per pixel: the channel count for f32, 1 for vec4).

// Element index of channel ch of pixel (x, y), with x and y clamped to the image (clamp-to-edge).
fn clamped_index(x: i32, y: i32, ch: u32) -> u32 {
  let cx = u32(clamp(x, 0, i32(p.w) - 1));
  let cy = u32(clamp(y, 0, i32(p.h) - 1));
  return (cy * p.w + cx) * p.c + ch;
}

// Sobel magnitude of the 3x3 neighbourhood aRC (row R, column C, centre a11 unused).
fn sobel_mag(a00: V, a01: V, a02: V, a10: V, a12: V, a20: V, a21: V, a22: V) -> V {
  let gx = (a02 + 2.0 * a12 + a22) - (a00 + 2.0 * a10 + a20);
  let gy = (a20 + 2.0 * a21 + a22) - (a00 + 2.0 * a01 + a02);
  return sqrt(gx * gx + gy * gy);
}
