// A strided walk over a 6-D shape (ops/tensor_ops.cpp pads lower ranks with leading extent-1
// dims): element n of the walk (row-major) sits at offset + sum_d i_d * stride_d in each operand.
struct Walk {
  count: u32,
  pad: u32,
  a_offset: i32,
  b_offset: i32,
  e0: u32, e1: u32, e2: u32, e3: u32, e4: u32, e5: u32,
  a0: i32, a1: i32, a2: i32, a3: i32, a4: i32, a5: i32,
  b0: i32, b1: i32, b2: i32, b3: i32, b4: i32, b5: i32,
}

// The two operands' offsets of walk element n.
fn walk_offsets(w: Walk, n: u32) -> vec2<i32> {
  var r = n;
  var o = vec2<i32>(w.a_offset, w.b_offset);
  var i = i32(r % w.e5); r = r / w.e5; o += i * vec2<i32>(w.a5, w.b5);
  i = i32(r % w.e4); r = r / w.e4; o += i * vec2<i32>(w.a4, w.b4);
  i = i32(r % w.e3); r = r / w.e3; o += i * vec2<i32>(w.a3, w.b3);
  i = i32(r % w.e2); r = r / w.e2; o += i * vec2<i32>(w.a2, w.b2);
  i = i32(r % w.e1); r = r / w.e1; o += i * vec2<i32>(w.a1, w.b1);
  o += i32(r) * vec2<i32>(w.a0, w.b0);
  return o;
}

fn walk_index(wid: vec3<u32>, nwg: vec3<u32>, lid: u32, wg: u32) -> u32 {
  return (wid.x + wid.y * nwg.x) * wg + lid;
}
