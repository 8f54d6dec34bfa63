// Direct convolution: one invocation per output element, every tap read from global memory.
// The baseline the other versions are measured against; any dims, groups and dilation.
//!include "conv/bindings.wgsl"

const WG = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.x + wid.y * nwg.x) * WG + lid;
  if (i >= p.n * p.c_out * p.oh * p.ow) { return; }
  let ox = i % p.ow;
  let oy = (i / p.ow) % p.oh;
  let co = (i / (p.ow * p.oh)) % p.c_out;
  let n = i / (p.ow * p.oh * p.c_out);
  let ci0 = (co / p.cout_g) * p.cin_g;
  let iy0 = i32(oy * p.stride_h) - i32(p.pad_top);
  let ix0 = i32(ox * p.stride_w) - i32(p.pad_left);
  var acc = 0.0;
  for (var ci = 0u; ci < p.cin_g; ci++) {
    let plane = (n * p.c_in + ci0 + ci) * p.h;
    let wrow = (co * p.cin_g + ci) * p.kh;
    for (var r = 0u; r < p.kh; r++) {
      let iy = iy0 + i32(r * p.dil_h);
      if (iy < 0 || iy >= i32(p.h)) { continue; }
      for (var c = 0u; c < p.kw; c++) {
        let ix = ix0 + i32(c * p.dil_w);
        if (ix < 0 || ix >= i32(p.w)) { continue; }
        acc = fma(X[(plane + u32(iy)) * p.w + u32(ix)], Wt[(wrow + r) * p.kw + c], acc);
      }
    }
  }
  Y[i] = epilogue(acc, co, i);
}
