/* The exponential, and the row softmax built on it (attention's, and a loss's). */
#include "kernel.h"

#define LOWEST -87.33654f /* ln(2^-126): below, e^v is not a normal float */
#define ROUNDER 12582912.0f /* 1.5 * 2^23: floats from there on are whole numbers */

/* e^v in each lane, for v <= 0, within about 1 ulp; 0 below LOWEST (numpy's would be a
   subnormal, under 1.2e-38). Cephes' expf (S. L. Moshier), whose polynomial serves SSE and
   NEON ports alike: v = k*ln2 + r, |r| <= ln2/2 (ln2 in two parts, so k*ln2 loses no bits),
   e^r by the polynomial, 2^k by building its exponent bits. k = v*log2(e) rounded to even by
   adding ROUNDER: t holds ROUNDER + k, whose low bits are k (cheaper than a rounding and a
   conversion). */
f4 exp_neg(f4 v) {
  f4 low = wasm_f32x4_lt(v, splat(LOWEST));
  f4 e = wasm_f32x4_pmax(v, splat(LOWEST));
  f4 t = wasm_f32x4_add(wasm_f32x4_mul(e, splat(1.44269504088896341f)), splat(ROUNDER));
  f4 k = wasm_f32x4_sub(t, splat(ROUNDER));
  f4 r = wasm_f32x4_sub(e, wasm_f32x4_mul(k, splat(0.693359375f)));
  r = wasm_f32x4_sub(r, wasm_f32x4_mul(k, splat(-2.12194440e-4f)));
  f4 poly = splat(1.9875691500e-4f);
  poly = wasm_f32x4_add(wasm_f32x4_mul(poly, r), splat(1.3981999507e-3f));
  poly = wasm_f32x4_add(wasm_f32x4_mul(poly, r), splat(8.3334519073e-3f));
  poly = wasm_f32x4_add(wasm_f32x4_mul(poly, r), splat(4.1665795894e-2f));
  poly = wasm_f32x4_add(wasm_f32x4_mul(poly, r), splat(1.6666665459e-1f));
  poly = wasm_f32x4_add(wasm_f32x4_mul(poly, r), splat(5.0000001201e-1f));
  poly = wasm_f32x4_add(wasm_f32x4_add(wasm_f32x4_mul(poly, wasm_f32x4_mul(r, r)), r), splat(1.0f));
  f4 scale = wasm_i32x4_shl(wasm_i32x4_sub(t, wasm_i32x4_splat(0x4B3FFF81)), 23); /* the bits of 2^k: k + 127 */
  return wasm_v128_andnot(wasm_f32x4_mul(poly, scale), low);
}

/* Softmax over each of `rows` rows of n floats at x, in place, after multiplying by `scale`.
   Row r is query i = r mod tq of a causal attention: it sees entries j <= i + offset, the rest
   become 0 (tq = 1 and offset = n - 1: every entry). With norm = 0 the exponentials are left
   unnormalised. Row r's max goes to stats[r], its sum of exponentials to stats[rows + r].
   Where a row's last vector reaches past what it sees (hidden entries, or the next row's: up
   to 3 floats past the last row, slack), those lanes keep their bits. The max and the division
   are numpy's to the bit; the exponential and the order of the sum (four lanes, then
   pairwise) differ in the last bits. */
void softmax(float *x, float *stats, int rows, int n, int tq, int offset, int norm, float scale) {
  f4 vscale = splat(scale);
  for (int i = 0; i < rows; i++, x += n) {
    int vis = i % tq + offset + 1;
    if (vis > n) vis = n;
    f4 vm = splat(-__builtin_inff()); /* the largest scaled entry the row sees */
    for (int j = 0; j < vis; j += 4)  /* pmax: one instruction; the entries are not NaN */
      vm = wasm_f32x4_pmax(vm, wasm_v128_bitselect(wasm_f32x4_mul(load(x + j), vscale),
                                                   splat(-__builtin_inff()), seen(vis, j)));
    float m = __builtin_wasm_max_f32(__builtin_wasm_max_f32(wasm_f32x4_extract_lane(vm, 0), wasm_f32x4_extract_lane(vm, 1)),
                                     __builtin_wasm_max_f32(wasm_f32x4_extract_lane(vm, 2), wasm_f32x4_extract_lane(vm, 3)));
    vm = splat(m);
    f4 vs = zero4();
    for (int j = 0; j < vis; j += 4) { /* e = exp(scaled - max), and their sum */
      f4 mask = seen(vis, j), v = load(x + j);
      f4 e = wasm_v128_and(exp_neg(wasm_f32x4_sub(wasm_f32x4_mul(v, vscale), vm)), mask); /* 0 where unseen */
      store(x + j, wasm_v128_bitselect(e, v, mask));
      vs = wasm_f32x4_add(vs, e);
    }
    float s = hsum(vs);
    int j = vis; /* what the query may not see weighs 0 */
    for (; j + 4 <= n; j += 4) store(x + j, zero4());
    for (; j < n; j++) x[j] = 0.0f;
    stats[i] = m;
    stats[rows + i] = s;
    if (norm) {
      vs = splat(s);
      for (int j = 0; j < vis; j += 4) {
        f4 v = load(x + j);
        store(x + j, wasm_v128_bitselect(wasm_f32x4_div(v, vs), v, seen(vis, j)));
      }
    }
  }
}
