// CPU references for the kernel playground, in plain JavaScript (the same definitions as src/cpu):
// every GPU result in the page is checked against these, and where the browser has no WebGPU they
// are what runs. Images are interleaved f32 arrays of h rows x w pixels x c channels.

export function add(a, b) {
  const c = new Float32Array(a.length);
  for (let i = 0; i < a.length; i++) c[i] = a[i] + b[i];
  return c;
}

// C[M,N] = A[M,K] x B[K,N], accumulated in double precision (i-k-j order: B and C rows stream).
export function matmul(a, b, m, n, k) {
  const c = new Float32Array(m * n);
  const row = new Float64Array(n);
  for (let i = 0; i < m; i++) {
    row.fill(0);
    for (let p = 0; p < k; p++) {
      const av = a[i * k + p];
      const bo = p * n;
      for (let j = 0; j < n; j++) row[j] += av * b[bo + j];
    }
    c.set(row, i * n);
  }
  return c;
}

export const reduceOps = {
  sum: { code: 0, identity: 0, combine: (x, y) => x + y },
  max: { code: 1, identity: -Infinity, combine: (x, y) => Math.max(x, y) },
  min: { code: 2, identity: Infinity, combine: (x, y) => Math.min(x, y) },
};

// The reduction in double precision, and a bound on the error of any order of f32 additions.
export function reduce(x, op) {
  const o = reduceOps[op];
  let r = o.identity;
  let abs = 0;
  for (let i = 0; i < x.length; i++) {
    r = o.combine(r, x[i]);
    abs += Math.abs(x[i]);
  }
  const tolerance = op === 'sum' ? x.length * 2 ** -23 * abs : 0;
  return { value: r, tolerance };
}

// Gaussian weights of radius ceil(3 sigma), normalized to sum 1 (cpu/stencil.cpp).
export function gaussianWeights(sigma) {
  const r = Math.ceil(3 * sigma);
  if (r === 0) return new Float32Array([1]);
  const d = [];
  let sum = 0;
  for (let k = -r; k <= r; k++) {
    const v = Math.exp((-k * k) / (2 * sigma * sigma));
    d.push(v);
    sum += v;
  }
  return Float32Array.from(d, (v) => v / sum);
}

const clamp = (v, lo, hi) => (v < lo ? lo : v > hi ? hi : v);

// Sobel edge magnitude with clamp-to-edge borders.
export function sobel(img, w, h, c) {
  const out = new Float32Array(img.length);
  const at = (x, y, ch) => img[(clamp(y, 0, h - 1) * w + clamp(x, 0, w - 1)) * c + ch];
  for (let y = 0; y < h; y++)
    for (let x = 0; x < w; x++)
      for (let ch = 0; ch < c; ch++) {
        const a00 = at(x - 1, y - 1, ch), a01 = at(x, y - 1, ch), a02 = at(x + 1, y - 1, ch);
        const a10 = at(x - 1, y, ch), a12 = at(x + 1, y, ch);
        const a20 = at(x - 1, y + 1, ch), a21 = at(x, y + 1, ch), a22 = at(x + 1, y + 1, ch);
        const gx = a02 + 2 * a12 + a22 - (a00 + 2 * a10 + a20);
        const gy = a20 + 2 * a21 + a22 - (a00 + 2 * a01 + a02);
        out[(y * w + x) * c + ch] = Math.sqrt(gx * gx + gy * gy);
      }
  return out;
}

// Separable Gaussian blur (horizontal, then vertical) with clamp-to-edge borders.
export function blur(img, w, h, c, sigma) {
  const wt = gaussianWeights(sigma);
  const r = (wt.length - 1) / 2;
  const pass = (src, dx, dy) => {
    const dst = new Float32Array(src.length);
    for (let y = 0; y < h; y++)
      for (let x = 0; x < w; x++)
        for (let ch = 0; ch < c; ch++) {
          let acc = 0;
          for (let k = -r; k <= r; k++) {
            const sx = clamp(x + k * dx, 0, w - 1), sy = clamp(y + k * dy, 0, h - 1);
            acc += wt[k + r] * src[(sy * w + sx) * c + ch];
          }
          dst[(y * w + x) * c + ch] = acc;
        }
    return dst;
  };
  return pass(pass(img, 1, 0), 0, 1);
}

// max |got - want| / max |want| (Infinity when got has a non-finite value where want has none, or
// the lengths differ), and the first index whose difference is the largest.
export function relError(got, want) {
  if (got.length !== want.length) return { error: Infinity, index: -1 };
  let md = 0, mw = 0, index = -1;
  for (let i = 0; i < want.length; i++) {
    if (!Number.isFinite(got[i]) && Number.isFinite(want[i])) return { error: Infinity, index: i };
    const d = Math.abs(got[i] - want[i]);
    if (d > md) {
      md = d;
      index = i;
    }
    mw = Math.max(mw, Math.abs(want[i]));
  }
  return { error: md / Math.max(mw, 1e-30), index };
}

// Deterministic uniform values in [-1, 1) (a 32-bit LCG), so a failure can be reproduced.
export function randomArray(n, seed) {
  const a = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    a[i] = s / 2 ** 31 - 1;
  }
  return a;
}

// 2-D convolution, NCHW, ONNX weights [c_out][c_in / groups][kh][kw], with bias and ReLU
// (src/cpu/conv.h), accumulated in double precision. d: n, c_in, h, w, c_out, kh, kw, stride,
// pad, dil, groups (square stride, padding and dilation).
export function conv2dOut(d) {
  const o = (size, k) => Math.floor((size + 2 * d.pad - d.dil * (k - 1) - 1) / d.stride) + 1;
  return { oh: o(d.h, d.kh), ow: o(d.w, d.kw) };
}

export function conv2dBiasRelu(x, wt, bias, d) {
  const { oh, ow } = conv2dOut(d);
  const cinG = d.c_in / d.groups, coutG = d.c_out / d.groups;
  const y = new Float32Array(d.n * d.c_out * oh * ow);
  for (let n = 0; n < d.n; n++)
    for (let co = 0; co < d.c_out; co++) {
      const ci0 = Math.floor(co / coutG) * cinG;
      for (let oy = 0; oy < oh; oy++)
        for (let ox = 0; ox < ow; ox++) {
          let acc = bias[co];
          for (let ci = 0; ci < cinG; ci++)
            for (let r = 0; r < d.kh; r++) {
              const iy = oy * d.stride - d.pad + r * d.dil;
              if (iy < 0 || iy >= d.h) continue;
              for (let c = 0; c < d.kw; c++) {
                const ix = ox * d.stride - d.pad + c * d.dil;
                if (ix < 0 || ix >= d.w) continue;
                acc += x[((n * d.c_in + ci0 + ci) * d.h + iy) * d.w + ix] * wt[((co * cinG + ci) * d.kh + r) * d.kw + c];
              }
            }
          y[((n * d.c_out + co) * oh + oy) * ow + ox] = Math.max(acc, 0);
        }
    }
  return y;
}
