// Whether candidate a (value av, id ai) comes before b in the top-k order: value descending, the
// lower id on ties, NaN never beats a number; id 0xffffffff: no candidate.
fn better(av: f32, ai: u32, bv: f32, bi: u32) -> bool {
  if (ai == 0xffffffffu) { return false; }
  if (bi == 0xffffffffu) { return true; }
  if (av > bv) { return true; }
  if (bv > av) { return false; }
  if (av == bv) { return ai < bi; }
  return bv != bv && av == av;  // a number beats NaN
}
