// The packed KV-cache stores of kv_append_packed.wgsl and rope_kv_append_packed.wgsl (llm_ops.h's
// KvType), f16: a unit of KV_CH = 2 values (value e, e + 1 of an even e) is one word, two halves,
// the lower value in the low half. The includer binds the caches as `k_cache` and `v_cache` of
// type KvStore and defines kv_layer() = (the layer's first value, its values).
alias KvStore = array<u32>;
const KV_CH: u32 = 2u;
fn kv_pack(e: u32, x: array<f32, KV_CH>) -> u32 { return pack2x16float(vec2<f32>(x[0], x[1])); }
fn k_store(e: u32, x: array<f32, KV_CH>) { k_cache[e / 2u] = kv_pack(e, x); }
fn v_store(e: u32, x: array<f32, KV_CH>) { v_cache[e / 2u] = kv_pack(e, x); }
