// matvec.wgsl's argmax epilogue (plain rows from row 0, y_off 0: the output projection's logits):
// each workgroup's best row (argmax_better.wgsl's order; rows numbered from 0) into am_v[wg],
// am_i[wg], so that one argmax_embed.wgsl pass over the workgroups' candidates finds the argmax
// of the whole (instead of topk.wgsl's passes over the logits). Needs WG / TPR * R <= 64 (the
// kernel's `res`); AM_BINDING from the prelude.
@group(0) @binding(AM_BINDING) var<storage, read_write> am_v: array<f32>;
@group(0) @binding(AM_BINDING + 1) var<storage, read_write> am_i: array<u32>;
//!include "llm/argmax_better.wgsl"

// Call in uniform control flow; outs: the rows' results (lane 0 of each row group).
fn am_epilogue(lid: u32, wg: u32, outs: array<f32, R_MAX>) {
  let per = WG / TPR * R;
  if (lid % TPR == 0u) {
    for (var u = 0u; u < R; u++) { res[(lid / TPR) * R + u] = outs[u]; }
  }
  workgroupBarrier();
  if (lid == 0u) {
    var bv = 0.0;
    var bi = 0xffffffffu;
    for (var i = 0u; i < per; i++) {
      let r = wg * per + i;
      if (r < p.rows && better(res[i], r, bv, bi)) {
        bv = res[i];
        bi = r;
      }
    }
    am_v[wg] = bv;
    am_i[wg] = bi;
  }
}
