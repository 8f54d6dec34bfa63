// The order top-k and argmax select in (topk.wgsl): value descending, id ascending
// on ties, a number before NaN (NaNs among themselves by id); id 0xffffffff is an empty entry,
// after every other. NaN is told by its bits: compilers may fold x != x away (SwiftShader did).
fn is_nan_bits(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }

fn better(av: f32, ai: u32, bv: f32, bi: u32) -> bool {
  if (ai == 0xffffffffu) { return false; }
  if (bi == 0xffffffffu) { return true; }
  let an = is_nan_bits(av);
  let bn = is_nan_bits(bv);
  if (an || bn) { return !an || (bn && ai < bi); }
  if (av != bv) { return av > bv; }
  return ai < bi;
}
