    // One block of keys of flash attention (online softmax), pasted into the key loop of
    // flash_attn.wgsl and paged_attn.wgsl once the block's keys and values are in ks / vs (BK rows
    // of HD4 vec4s, zero past kv_end; the rows of ks and qs start KS vec4s apart): row r's scores
    // against them into sc (soft-capped: cap_score; MASKED past kv_end, after the row's position
    // qpos and before its first visible key klo: the sliding window), then the row's
    // running max m, sum l and acc[i] (output vec4 j + TPQ * i, i < NV). Masked keys add exact
    // zeros, so a row's result does not depend on which of its keys fall in the block. The
    // includer declares qs, ks, vs, sc, BK, TPQ, KS, MASKED, HD4, NV, r, j, kb, kv_end, qpos, klo, m, l
    // and acc.
    workgroupBarrier();
    for (var s = j; s < BK; s += TPQ) {
      var d = 0.0;
      for (var c = 0u; c < HD4; c++) { d += dot(qs[r * KS + c], ks[s * KS + c]); }
      let key = kb + s;
      sc[r * BK + s] = select(cap_score(d), MASKED, key >= kv_end || key > qpos || key < klo);
    }
    workgroupBarrier();
    var mb = m;
    for (var s = 0u; s < BK; s++) { mb = max(mb, sc[r * BK + s]); }
    let corr = exp(m - mb);
    l *= corr;
    for (var i = 0u; i < NV; i++) { acc[i] *= corr; }
    for (var s = 0u; s < BK; s++) {
      let e = sc[r * BK + s];
      let pe = select(exp(e - mb), 0.0, e <= MASKED);
      l += pe;
      for (var i = 0u; i < NV; i++) { acc[i] += pe * vs[s * HD4 + j + TPQ * i]; }
    }
    m = mb;
