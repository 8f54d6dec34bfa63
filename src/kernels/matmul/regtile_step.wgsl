    // The inner loop of the 8 x 8 register tile, pasted into the k loop of matmul/regtile_main.wgsl
    // (SGEMM) and llm/matmul_regtile.wgsl (prefill): one BK tile of acc[i * 2 + j] += a[i] * b[j],
    // a = As[k][tm], As[k][tm + BM / 8] (rows tm * 4 .. + 3 and BM / 2 + tm * 4 .. + 3), b likewise
    // from Bs with tn. The includer declares As, Bs (vec4 tiles, k-major, this one at vec4s rt_a
    // and rt_b), BM, BN, BK, tm, tn, acc. The loop's body is regtile_kstep.wgsl.
    for (var k = 0u; k < BK; k++) {
//!include "matmul/regtile_kstep.wgsl"
    }
