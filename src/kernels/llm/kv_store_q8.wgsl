// kv_store_f16.wgsl's stores for a q8_0 cache: a unit is a block of KV_CH = 32 values (e a
// multiple of 32), stored as d = max|x| / 127 (f32, in the layer's scales after its quants) and
// q = round(x / d) as int8 (computed as x * (1 / d); all zero where d is 0), four to a word.
alias KvStore = array<u32>;
const KV_CH: u32 = 32u;
fn kv_q8_store(e: u32, x: array<f32, KV_CH>, is_k: bool) {
  var xs = x;
  var amax = 0.0;
  for (var j = 0u; j < KV_CH; j++) { amax = max(amax, abs(xs[j])); }
  let d = amax / 127.0;
  let id = select(0.0, 1.0 / d, d > 0.0);
  let l = kv_layer();
  let w0 = e / 4u;
  let sw = l.x / 4u + l.y / 4u + (e - l.x) / 32u;
  for (var j = 0u; j < KV_CH / 4u; j++) {
    var w = 0u;
    for (var b = 0u; b < 4u; b++) {
      let q = clamp(i32(round(xs[4u * j + b] * id)), -127, 127);
      w |= (bitcast<u32>(q) & 0xffu) << (8u * b);
    }
    if (is_k) { k_cache[w0 + j] = w; } else { v_cache[w0 + j] = w; }
  }
  if (is_k) { k_cache[sw] = bitcast<u32>(d); } else { v_cache[sw] = bitcast<u32>(d); }
}
fn k_store(e: u32, x: array<f32, KV_CH>) { kv_q8_store(e, x, true); }
fn v_store(e: u32, x: array<f32, KV_CH>) { kv_q8_store(e, x, false); }
