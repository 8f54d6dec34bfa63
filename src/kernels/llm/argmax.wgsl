// Argmax in one pass: workgroup w takes entries [w * CH, (w + 1) * CH), finds their best in
// select_order.wgsl's order and stages it in `hand` with atomic stores; the workgroup whose count
// completes the grid reduces the staged bests into out[0] and leaves `hand` reset (the count 0,
// the slots the sentinel) for the next pass. Where topk.wgsl needs a second dispatch over the
// workgroups' bests, this one hands them over inside the dispatch. A workgroup only waits for
// bests already stored (each is stored before its workgroup counts): WGSL's atomics are relaxed,
// so each staged word is read until it is no longer the sentinel, at most SPIN times; past that
// out[0] is 0xffffffff (no token: the host reports it).
// hand, in words (LlmOps::argmax): the count, then (value bits, id) per workgroup.
@group(0) @binding(0) var<storage, read> vals: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<storage, read_write> hand: array<atomic<u32>>;
struct P {
  count: u32,
}
@group(0) @binding(3) var<uniform> p: P;
override WG: u32 = 256;   // a power of two
override CH: u32 = 4096;  // entries per workgroup
const SENT: u32 = 0xffffffffu;
const SPIN: u32 = 1u << 22;

var<workgroup> rv: array<f32, WG>;
var<workgroup> ri: array<u32, WG>;
var<workgroup> last: u32;
var<workgroup> gave_up: atomic<u32>;  // a wait of the last workgroup gave up

// The workgroup's best of each invocation's (v, i), into rv[0], ri[0].
fn reduce(lid: u32, v: f32, i: u32) {
  rv[lid] = v;
  ri[lid] = i;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s /= 2u) {
    if (lid < s && better(rv[lid + s], ri[lid + s], rv[lid], ri[lid])) {
      rv[lid] = rv[lid + s];
      ri[lid] = ri[lid + s];
    }
    workgroupBarrier();
  }
}

// Staged word i once it is set, then reset to the sentinel.
fn take(i: u32) -> u32 {
  var v = atomicLoad(&hand[i]);
  for (var n = 0u; v == SENT && n < SPIN; n++) { v = atomicLoad(&hand[i]); }
  if (v == SENT) { atomicStore(&gave_up, 1u); }
  atomicStore(&hand[i], SENT);
  return v;
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let w = wid.x + wid.y * nwg.x;
  let ng = nwg.x * nwg.y;
  var bv = 0.0;
  var bi = SENT;
  let end = min((w + 1u) * CH, p.count);
  for (var i = w * CH + lid; i < end; i += WG) {
    let v = vals[i];
    if (better(v, i, bv, bi)) {
      bv = v;
      bi = i;
    }
  }
  reduce(lid, bv, bi);
  if (lid == 0u) {
    let u = bitcast<u32>(rv[0]);
    atomicStore(&hand[1u + 2u * w], select(u, 0x7fc00000u, u == SENT));  // a NaN never reads as the sentinel
    atomicStore(&hand[2u + 2u * w], ri[0]);  // never the sentinel: every workgroup has entries
    last = select(0u, 1u, atomicAdd(&hand[0], 1u) + 1u == ng);
  }
  if (workgroupUniformLoad(&last) == 0u) { return; }
  bv = 0.0;
  bi = SENT;
  for (var s = lid; s < ng; s += WG) {
    let v = bitcast<f32>(take(1u + 2u * s));
    let i = take(2u + 2u * s);
    if (better(v, i, bv, bi)) {
      bv = v;
      bi = i;
    }
  }
  reduce(lid, bv, bi);
  if (lid == 0u) {
    out[0] = select(ri[0], SENT, atomicLoad(&gave_up) != 0u);
    atomicStore(&hand[0], 0u);
  }
}
