// The parameter block of every convolution kernel (filled by conv_params in ops/conv.cpp).
struct Params {
  n: u32, c_in: u32, h: u32, w: u32,
  c_out: u32, oh: u32, ow: u32, groups: u32,
  kh: u32, kw: u32, stride_h: u32, stride_w: u32,
  dil_h: u32, dil_w: u32, pad_top: u32, pad_left: u32,
  cin_g: u32, cout_g: u32, clip_min: f32, clip_max: f32,
  aux0: u32, aux1: u32, aux2: u32, aux3: u32,  // per kernel (said where used)
}
