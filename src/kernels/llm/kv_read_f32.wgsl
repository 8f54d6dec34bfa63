// The attention kernels' KV-cache loads (llm_ops.h's KvType), f32: the includer binds the caches
// as `k4` and `v4` of type KvWords and reads vec4 i of values (values 4i .. 4i + 3, i counted
// from the tensor's start) as k_at(i) / v_at(i). One of kv_read_{f32,f16,q8}.wgsl is added to a
// kernel by its variant's cache type.
alias KvWords = array<vec4<f32>>;
fn k_at(i: u32) -> vec4<f32> { return k4[i]; }
fn v_at(i: u32) -> vec4<f32> { return v4[i]; }
