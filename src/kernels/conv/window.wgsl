// A convolution's window as override constants (window_constants in ops/conv.cpp): kernel size,
// stride and dilation, so that the tap loops unroll.
override KH: u32 = 3u;
override KW: u32 = 3u;
override SH: u32 = 1u;
override SW: u32 = 1u;
override DH: u32 = 1u;
override DW: u32 = 1u;
