/* The backward's row operations, the loss head's, and AdamW. */
#include "kernel.h"

/* layers.layernorm_backward per row: dx = rstd * (dnorm - mean(dnorm) - norm * mean(dnorm * norm)),
   dnorm = dout * w; w's gradient (gw) the column sums of dout * norm, b's (gb) of dout, each in
   row order. With rms, layers.rmsnorm_backward: dx = rstd * (dnorm - norm * mean(dnorm * norm)),
   and no gb (unwritten). */
void norm_backward(const float *dout, const float *nrm, const float *rstd, const float *w, float *dx,
                   float *gw, float *gb, int rows, int c, int rms) {
  int c4 = c & -4;
  float cf = (float)c;
  __builtin_memset(gw, 0, c * sizeof(float));
  if (!rms) __builtin_memset(gb, 0, c * sizeof(float));
  for (int r = 0; r < rows; r++, dout += c, nrm += c, dx += c) {
    f4 v1 = zero4(), v2 = zero4();
    int p = 0;
    for (; p < c4; p += 4) {
      f4 vo = load(dout + p), vn = load(nrm + p), vd = wasm_f32x4_mul(vo, load(w + p));
      v1 = wasm_f32x4_add(v1, vd);
      v2 = wasm_f32x4_add(v2, wasm_f32x4_mul(vd, vn));
      store(gw + p, wasm_f32x4_add(load(gw + p), wasm_f32x4_mul(vo, vn)));
      if (!rms) store(gb + p, wasm_f32x4_add(load(gb + p), vo));
    }
    float m1 = hsum(v1), m2 = hsum(v2);
    for (; p < c; p++) {
      float dn = dout[p] * w[p];
      m1 += dn;
      m2 += dn * nrm[p];
      gw[p] += dout[p] * nrm[p];
      if (!rms) gb[p] += dout[p];
    }
    m1 /= cf;
    m2 /= cf;
    f4 vr = splat(rstd[r]), vm1 = splat(m1), vm2 = splat(m2);
    for (p = 0; p < c4; p += 4) {
      f4 dn = wasm_f32x4_mul(load(dout + p), load(w + p)), nm = wasm_f32x4_mul(load(nrm + p), vm2);
      store(dx + p, wasm_f32x4_mul(vr, rms ? wasm_f32x4_sub(dn, nm) : wasm_f32x4_sub(wasm_f32x4_sub(dn, vm1), nm)));
    }
    for (; p < c; p++) {
      float dn = dout[p] * w[p];
      dx[p] = rstd[r] * (rms ? dn - nrm[p] * m2 : (dn - m1) - nrm[p] * m2);
    }
  }
}

/* d[i] = 0 where act[i] is not positive (layers.relu_backward: the mask act > 0), in place. */
void relu_backward(float *d, const float *act, int n) {
  int j = 0;
  for (; j < (n & -4); j += 4) store(d + j, wasm_v128_and(load(d + j), wasm_f32x4_gt(load(act + j), zero4())));
  for (; j < n; j++)
    if (!(act[j] > 0.0f)) d[j] = 0.0f;
}

/* dst[j] = the sum of column j of src [rows, n], row after row (a bias's gradient). */
void colsum(float *dst, const float *src, int rows, int n) {
  int n4 = n & -4;
  __builtin_memset(dst, 0, n * sizeof(float));
  for (int r = 0; r < rows; r++, src += n) {
    int j = 0;
    for (; j < n4; j += 4) store(dst + j, wasm_f32x4_add(load(dst + j), load(src + j)));
    for (; j < n; j++) dst[j] += src[j];
  }
}

/* dst[r] = src[r, ids[r]]: each row's entry at its target (a loss's target logits). */
void pick(float *dst, const float *src, const int32_t *ids, int rows, int n) {
  for (int r = 0; r < rows; r++) dst[r] = src[r * n + ids[r]];
}

/* x[r, ids[r]] -= 1: a softmax less the one-hot of its targets (the cross-entropy's gradient). */
void onehot(float *x, const int32_t *ids, int rows, int n) {
  for (int r = 0; r < rows; r++) x[r * n + ids[r]] -= 1.0f;
}

/* dst[ids[r]] += src[r] for each row r of c, in row order (the embedding's gradient: numpy's
   add.at, bit for bit). */
void scatter(float *dst, const int32_t *ids, const float *src, int rows, int c) {
  for (int r = 0; r < rows; r++) add(dst + ids[r] * c, dst + ids[r] * c, src + r * c, c);
}

/* AdamW over every parameter at once (train.AdamW.step), numpy's float32 to the bit:
   m += k1 (g - m); v += k2 (g g - v); p = p * (mask ? dec : 1) - lr (m / c1) / (sqrt(v / c2) + eps),
   element by element over n floats, mask int32 (-1 where the decoupled decay applies, 0
   elsewhere): numpy's operations in its order, each correctly rounded in float32. */
void adamw(float *p, float *m, float *v, const float *g, const int32_t *mask, int n, float k1, float k2,
           float dec, float lr, float c1, float c2, float eps) {
  int i = 0;
  for (; i < (n & -4); i += 4) {
    f4 gv = load(g + i), mv = load(m + i), vv = load(v + i);
    mv = wasm_f32x4_add(mv, wasm_f32x4_mul(splat(k1), wasm_f32x4_sub(gv, mv)));
    vv = wasm_f32x4_add(vv, wasm_f32x4_mul(splat(k2), wasm_f32x4_sub(wasm_f32x4_mul(gv, gv), vv)));
    store(m + i, mv);
    store(v + i, vv);
    f4 decay = wasm_v128_bitselect(splat(dec), splat(1.0f), wasm_v128_load(mask + i));
    f4 step = wasm_f32x4_div(wasm_f32x4_mul(splat(lr), wasm_f32x4_div(mv, splat(c1))),
                             wasm_f32x4_add(wasm_f32x4_sqrt(wasm_f32x4_div(vv, splat(c2))), splat(eps)));
    store(p + i, wasm_f32x4_sub(wasm_f32x4_mul(load(p + i), decay), step));
  }
  for (; i < n; i++) {
    float ms = m[i] + k1 * (g[i] - m[i]);
    float vs = v[i] + k2 * (g[i] * g[i] - v[i]);
    m[i] = ms;
    v[i] = vs;
    p[i] = p[i] * (mask[i] ? dec : 1.0f) - (lr * (ms / c1)) / (__builtin_sqrtf(vs / c2) + eps);
  }
}
