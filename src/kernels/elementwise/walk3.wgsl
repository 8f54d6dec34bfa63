// A walk over an output shape of up to 6 dims (ops/elementwise.cpp pads lower ranks with leading
// extent-1 dims) reading three operands, each with its own strides (0 where it is broadcast):
// element n of the output reads offset sum_d i_d * stride_d of each. alpha and beta are the op's
// float attributes.
struct Walk3 {
  count: u32,
  pad: u32,
  alpha: f32,
  beta: f32,
  e0: u32, e1: u32, e2: u32, e3: u32, e4: u32, e5: u32,
  a0: i32, a1: i32, a2: i32, a3: i32, a4: i32, a5: i32,
  b0: i32, b1: i32, b2: i32, b3: i32, b4: i32, b5: i32,
  c0: i32, c1: i32, c2: i32, c3: i32, c4: i32, c5: i32,
}

fn walk3_offsets(w: Walk3, n: u32) -> vec3<i32> {
  var r = n;
  var o = vec3<i32>(0);
  var i = i32(r % w.e5); r = r / w.e5; o += i * vec3<i32>(w.a5, w.b5, w.c5);
  i = i32(r % w.e4); r = r / w.e4; o += i * vec3<i32>(w.a4, w.b4, w.c4);
  i = i32(r % w.e3); r = r / w.e3; o += i * vec3<i32>(w.a3, w.b3, w.c3);
  i = i32(r % w.e2); r = r / w.e2; o += i * vec3<i32>(w.a2, w.b2, w.c2);
  i = i32(r % w.e1); r = r / w.e1; o += i * vec3<i32>(w.a1, w.b1, w.c1);
  o += i32(r) * vec3<i32>(w.a0, w.b0, w.c0);
  return o;
}
