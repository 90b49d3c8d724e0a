(module
  ;; The mini-GPT's float32 work for numpy in Pyodide (see sgemm.py), in WebAssembly SIMD: products,
  ;; a row softmax and its exponential, and whole forward and backward passes.
  (memory (export "memory") 1)

  ;; `count` products one after the other, each item's A, B and C right after the previous
  ;; one's: C[m, n] = A[m, k] @ B[k, n]. A's element (i, p) at a + i*sa_i + p*sa_p (bytes,
  ;; within its item: row-major A has sa_i = 4k, sa_p = 4; a transposed one sa_i = 4, sa_p = 4m);
  ;; B and C row-major.
  (func (export "sgemm") (param $a i32) (param $b i32) (param $c i32)
        (param $m i32) (param $k i32) (param $n i32) (param $sa_i i32) (param $sa_p i32) (param $count i32)
    (block $done (loop $items
      (br_if $done (i32.le_s (local.get $count) (i32.const 0)))
      (call $product (local.get $a) (local.get $b) (local.get $c)
                     (local.get $m) (local.get $k) (local.get $n) (local.get $sa_i) (local.get $sa_p))
      (local.set $a (i32.add (local.get $a) (i32.shl (i32.mul (local.get $m) (local.get $k)) (i32.const 2))))
      (local.set $b (i32.add (local.get $b) (i32.shl (i32.mul (local.get $k) (local.get $n)) (i32.const 2))))
      (local.set $c (i32.add (local.get $c) (i32.shl (i32.mul (local.get $m) (local.get $n)) (i32.const 2))))
      (local.set $count (i32.sub (local.get $count) (i32.const 1)))
      (br $items))))

  ;; One product, in blocks of 4 rows x 8 columns held in eight f32x4 accumulators: per step
  ;; of the sum, two vectors of B's row and four of A's elements, each splat to a vector.
  ;; Past the last row or column a block computes rows and columns nobody reads back: it reads
  ;; up to 3 rows past A and 7 floats past B's rows, and writes as far past C (sgemm.py leaves
  ;; slack after each region; within a batch, into the next item, written after it).
  (func $product (param $a i32) (param $b i32) (param $c i32)
        (param $m i32) (param $k i32) (param $n i32) (param $sa_i i32) (param $sa_p i32)
    (call $triangular (local.get $a) (local.get $b) (local.get $c) (local.get $m) (local.get $k) (local.get $n)
                      (local.get $sa_i) (local.get $sa_p) (i32.shl (local.get $n) (i32.const 2))
                      (i32.const 0) (i32.const 0) (i32.const 0)))

  ;; The same product where a causal mask leaves a triangle of zeros, skipping what the
  ;; triangle makes 0 or nobody reads (0 turns a limit off). For the block of rows from i:
  ;; $cols: only columns j < i + $cols are read back (the rest are left as they were);
  ;; $upto: A[r, p] is 0 for p >= i + $upto, so the sum stops there; $from (1 or 0): A[r, p]
  ;; is 0 for p < i, so the sum starts at i. A sum that skips zeros is the same to the bit.
  ;; B's rows lie $sb bytes apart (a head's columns read where they are: 3c floats apart in qkv).
  (func $triangular (param $a i32) (param $b i32) (param $c i32)
        (param $m i32) (param $k i32) (param $n i32) (param $sa_i i32) (param $sa_p i32) (param $sb i32)
        (param $cols i32) (param $upto i32) (param $from i32)
    (local $i i32) (local $j i32) (local $p i32) (local $ns i32) (local $p0 i32) (local $p1 i32)
    (local $pa i32) (local $pb i32) (local $pc i32)
    (local $b0 v128) (local $b1 v128) (local $x v128)
    (local $c00 v128) (local $c01 v128) (local $c10 v128) (local $c11 v128)
    (local $c20 v128) (local $c21 v128) (local $c30 v128) (local $c31 v128)
    (local.set $ns (i32.shl (local.get $n) (i32.const 2)))
    (local.set $i (i32.const 0))
    (block $rows_done (loop $rows
      (br_if $rows_done (i32.ge_s (local.get $i) (local.get $m)))
      ;; columns from the last block down: a last block past n spills into the next row's
      ;; first columns, which are written after it (in this block of rows, or the next)
      (local.set $j (local.get $n))
      (if (local.get $cols) (then (if (i32.lt_s (i32.add (local.get $i) (local.get $cols)) (local.get $n))
        (then (local.set $j (i32.add (local.get $i) (local.get $cols)))))))
      (local.set $j (i32.and (i32.add (local.get $j) (i32.const 7)) (i32.const -8)))
      (local.set $p0 (i32.const 0))  ;; the sum's first and last steps for these rows
      (if (local.get $from) (then (local.set $p0 (if (result i32) (i32.lt_s (local.get $i) (local.get $k))
                                                   (then (local.get $i)) (else (local.get $k))))))
      (local.set $p1 (local.get $k))
      (if (local.get $upto) (then (if (i32.lt_s (i32.add (local.get $i) (local.get $upto)) (local.get $k))
        (then (local.set $p1 (i32.add (local.get $i) (local.get $upto)))))))
      (block $cols_done (loop $cols
        (br_if $cols_done (i32.le_s (local.get $j) (i32.const 0)))
        (local.set $j (i32.sub (local.get $j) (i32.const 8)))
        (local.set $c00 (v128.const i32x4 0 0 0 0)) (local.set $c01 (v128.const i32x4 0 0 0 0))
        (local.set $c10 (v128.const i32x4 0 0 0 0)) (local.set $c11 (v128.const i32x4 0 0 0 0))
        (local.set $c20 (v128.const i32x4 0 0 0 0)) (local.set $c21 (v128.const i32x4 0 0 0 0))
        (local.set $c30 (v128.const i32x4 0 0 0 0)) (local.set $c31 (v128.const i32x4 0 0 0 0))
        (local.set $pa (i32.add (local.get $a) (i32.add (i32.mul (local.get $i) (local.get $sa_i))
                                                        (i32.mul (local.get $p0) (local.get $sa_p)))))
        (local.set $pb (i32.add (local.get $b) (i32.add (i32.shl (local.get $j) (i32.const 2))
                                                        (i32.mul (local.get $p0) (local.get $sb)))))
        (local.set $p (i32.sub (local.get $p1) (local.get $p0)))
        (block $sum_done (loop $sum
          (br_if $sum_done (i32.le_s (local.get $p) (i32.const 0)))
          (local.set $b0 (v128.load (local.get $pb)))
          (local.set $b1 (v128.load offset=16 (local.get $pb)))
          (local.set $x (v128.load32_splat (local.get $pa)))
          (local.set $c00 (f32x4.add (local.get $c00) (f32x4.mul (local.get $x) (local.get $b0))))
          (local.set $c01 (f32x4.add (local.get $c01) (f32x4.mul (local.get $x) (local.get $b1))))
          (local.set $x (v128.load32_splat (i32.add (local.get $pa) (local.get $sa_i))))
          (local.set $c10 (f32x4.add (local.get $c10) (f32x4.mul (local.get $x) (local.get $b0))))
          (local.set $c11 (f32x4.add (local.get $c11) (f32x4.mul (local.get $x) (local.get $b1))))
          (local.set $x (v128.load32_splat (i32.add (local.get $pa) (i32.shl (local.get $sa_i) (i32.const 1)))))
          (local.set $c20 (f32x4.add (local.get $c20) (f32x4.mul (local.get $x) (local.get $b0))))
          (local.set $c21 (f32x4.add (local.get $c21) (f32x4.mul (local.get $x) (local.get $b1))))
          (local.set $x (v128.load32_splat (i32.add (local.get $pa) (i32.mul (local.get $sa_i) (i32.const 3)))))
          (local.set $c30 (f32x4.add (local.get $c30) (f32x4.mul (local.get $x) (local.get $b0))))
          (local.set $c31 (f32x4.add (local.get $c31) (f32x4.mul (local.get $x) (local.get $b1))))
          (local.set $pa (i32.add (local.get $pa) (local.get $sa_p)))
          (local.set $pb (i32.add (local.get $pb) (local.get $sb)))
          (local.set $p (i32.sub (local.get $p) (i32.const 1)))
          (br $sum)))
        (local.set $pc (i32.add (local.get $c)
          (i32.add (i32.mul (local.get $i) (local.get $ns)) (i32.shl (local.get $j) (i32.const 2)))))
        (v128.store (local.get $pc) (local.get $c00)) (v128.store offset=16 (local.get $pc) (local.get $c01))
        (local.set $pc (i32.add (local.get $pc) (local.get $ns)))
        (v128.store (local.get $pc) (local.get $c10)) (v128.store offset=16 (local.get $pc) (local.get $c11))
        (local.set $pc (i32.add (local.get $pc) (local.get $ns)))
        (v128.store (local.get $pc) (local.get $c20)) (v128.store offset=16 (local.get $pc) (local.get $c21))
        (local.set $pc (i32.add (local.get $pc) (local.get $ns)))
        (v128.store (local.get $pc) (local.get $c30)) (v128.store offset=16 (local.get $pc) (local.get $c31))
        (br $cols)))
      (local.set $i (i32.add (local.get $i) (i32.const 4)))
      (br $rows))))

  ;; Softmax over each of `rows` rows of n floats at $x, in place, after multiplying by $scale.
  ;; Row r is query i = r mod tq of a causal attention: it sees entries j <= i + offset, the
  ;; rest become 0 (tq = 1 and offset = n - 1: every entry). With $norm = 0 the exponentials
  ;; are left unnormalised. Row r's max and sum of exponentials go to $stats + 8r.
  ;; Four entries at a time; where a row's last vector reaches past what it sees (hidden
  ;; entries, or the next row's: up to 3 floats past the last row, slack), $mask keeps those
  ;; lanes' bits. The max and the division are numpy's to the bit; the exponential (inline,
  ;; below) and the order of the sum (four lanes, then pairwise) differ in the last bits.
  (func $softmax (export "softmax") (param $x i32) (param $rows i32) (param $n i32) (param $tq i32)
        (param $offset i32) (param $scale f32) (param $norm i32) (param $stats i32)
    (local $i i32) (local $vis i32) (local $j i32) (local $p i32) (local $row_end i32)
    (local $m f32) (local $s f32) (local $v v128) (local $vm v128) (local $vs v128) (local $vscale v128)
    (local $mask v128) (local $e v128) (local $t v128) (local $k v128) (local $r v128) (local $poly v128) (local $low v128)
    (local.set $vscale (f32x4.splat (local.get $scale)))
    (local.set $i (i32.const 0))
    (block $done (loop $row
      (br_if $done (i32.ge_s (local.get $i) (local.get $rows)))
      (local.set $vis (i32.add (i32.add (i32.rem_u (local.get $i) (local.get $tq)) (local.get $offset)) (i32.const 1)))
      (if (i32.gt_s (local.get $vis) (local.get $n)) (then (local.set $vis (local.get $n))))
      (local.set $row_end (i32.add (local.get $x) (i32.shl (local.get $n) (i32.const 2))))
      ;; the largest scaled entry the row sees
      (local.set $vm (f32x4.splat (f32.const -inf)))
      (local.set $j (i32.const 0))
      (block $max_done (loop $max
        (br_if $max_done (i32.ge_s (local.get $j) (local.get $vis)))
        (local.set $mask (i32x4.gt_s (i32x4.splat (i32.sub (local.get $vis) (local.get $j))) (v128.const i32x4 0 1 2 3)))
        (local.set $vm (f32x4.pmax (local.get $vm)  ;; pmax: one instruction; the entries are not NaN
          (v128.bitselect (f32x4.mul (v128.load (i32.add (local.get $x) (i32.shl (local.get $j) (i32.const 2))))
                                     (local.get $vscale))
                          (f32x4.splat (f32.const -inf)) (local.get $mask))))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $max)))
      (local.set $m (f32.max (f32.max (f32x4.extract_lane 0 (local.get $vm)) (f32x4.extract_lane 1 (local.get $vm)))
                             (f32.max (f32x4.extract_lane 2 (local.get $vm)) (f32x4.extract_lane 3 (local.get $vm)))))
      ;; e = exp(scaled - max), and their sum
      (local.set $vm (f32x4.splat (local.get $m)))
      (local.set $vs (v128.const f32x4 0 0 0 0))
      (local.set $j (i32.const 0))
      (block $exp_done (loop $exp
        (br_if $exp_done (i32.ge_s (local.get $j) (local.get $vis)))
        (local.set $p (i32.add (local.get $x) (i32.shl (local.get $j) (i32.const 2))))
        (local.set $mask (i32x4.gt_s (i32x4.splat (i32.sub (local.get $vis) (local.get $j))) (v128.const i32x4 0 1 2 3)))
        (local.set $v (v128.load (local.get $p)))
        ;; e^v for v <= 0 in each lane, within about 1 ulp: Cephes' expf (S. L. Moshier), whose
        ;; polynomial serves SSE and NEON ports alike. v = k·ln2 + r, |r| <= ln2/2 (ln2 in two
        ;; parts, so k·ln2 loses no bits), e^r by the polynomial, 2^k by building its exponent
        ;; bits. Below ln(2^-126) the result is 0 (numpy's would be a subnormal, under 1.2e-38).
        ;; k = v·log2(e) rounded to even by adding 1.5·2^23, where floats are whole numbers: $t
        ;; holds 1.5·2^23 + k, whose low bits are k (cheaper than f32x4.nearest and a conversion)
        (local.set $e (f32x4.sub (f32x4.mul (local.get $v) (local.get $vscale)) (local.get $vm)))
        (local.set $low (f32x4.lt (local.get $e) (f32x4.splat (f32.const -87.33654))))
        (local.set $e (f32x4.pmax (local.get $e) (f32x4.splat (f32.const -87.33654))))
        (local.set $t (f32x4.add (f32x4.mul (local.get $e) (f32x4.splat (f32.const 1.44269504088896341)))
                                 (f32x4.splat (f32.const 12582912))))
        (local.set $k (f32x4.sub (local.get $t) (f32x4.splat (f32.const 12582912))))
        (local.set $r (f32x4.sub (local.get $e) (f32x4.mul (local.get $k) (f32x4.splat (f32.const 0.693359375)))))
        (local.set $r (f32x4.sub (local.get $r) (f32x4.mul (local.get $k) (f32x4.splat (f32.const -2.12194440e-4)))))
        (local.set $poly (f32x4.splat (f32.const 1.9875691500e-4)))
        (local.set $poly (f32x4.add (f32x4.mul (local.get $poly) (local.get $r)) (f32x4.splat (f32.const 1.3981999507e-3))))
        (local.set $poly (f32x4.add (f32x4.mul (local.get $poly) (local.get $r)) (f32x4.splat (f32.const 8.3334519073e-3))))
        (local.set $poly (f32x4.add (f32x4.mul (local.get $poly) (local.get $r)) (f32x4.splat (f32.const 4.1665795894e-2))))
        (local.set $poly (f32x4.add (f32x4.mul (local.get $poly) (local.get $r)) (f32x4.splat (f32.const 1.6666665459e-1))))
        (local.set $poly (f32x4.add (f32x4.mul (local.get $poly) (local.get $r)) (f32x4.splat (f32.const 5.0000001201e-1))))
        (local.set $poly (f32x4.add (f32x4.add (f32x4.mul (local.get $poly) (f32x4.mul (local.get $r) (local.get $r)))
                                               (local.get $r)) (f32x4.splat (f32.const 1))))
        (local.set $e (v128.and
          (f32x4.mul (local.get $poly) (i32x4.shl (i32x4.sub (local.get $t) (i32x4.splat (i32.const 0x4B3FFF81)))  ;; k + 127
                                                  (i32.const 23)))
          (v128.andnot (local.get $mask) (local.get $low))))  ;; 0 below the range, and where the row does not see
        (v128.store (local.get $p) (v128.bitselect (local.get $e) (local.get $v) (local.get $mask)))
        (local.set $vs (f32x4.add (local.get $vs) (local.get $e)))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $exp)))
      (local.set $s (f32.add (f32.add (f32x4.extract_lane 0 (local.get $vs)) (f32x4.extract_lane 1 (local.get $vs)))
                             (f32.add (f32x4.extract_lane 2 (local.get $vs)) (f32x4.extract_lane 3 (local.get $vs)))))
      (local.set $p (i32.add (local.get $x) (i32.shl (local.get $vis) (i32.const 2))))
      (block $hidden_done (loop $hidden  ;; what the query may not see weighs 0
        (br_if $hidden_done (i32.gt_u (i32.add (local.get $p) (i32.const 16)) (local.get $row_end)))
        (v128.store (local.get $p) (v128.const i32x4 0 0 0 0))
        (local.set $p (i32.add (local.get $p) (i32.const 16)))
        (br $hidden)))
      (block $hidden_tail_done (loop $hidden_tail
        (br_if $hidden_tail_done (i32.ge_u (local.get $p) (local.get $row_end)))
        (f32.store (local.get $p) (f32.const 0))
        (local.set $p (i32.add (local.get $p) (i32.const 4)))
        (br $hidden_tail)))
      (f32.store (local.get $stats) (local.get $m))
      (f32.store offset=4 (local.get $stats) (local.get $s))
      (if (local.get $norm) (then
        (local.set $vs (f32x4.splat (local.get $s)))
        (local.set $j (i32.const 0))
        (block $div_done (loop $div
          (br_if $div_done (i32.ge_s (local.get $j) (local.get $vis)))
          (local.set $p (i32.add (local.get $x) (i32.shl (local.get $j) (i32.const 2))))
          (local.set $mask (i32x4.gt_s (i32x4.splat (i32.sub (local.get $vis) (local.get $j))) (v128.const i32x4 0 1 2 3)))
          (local.set $v (v128.load (local.get $p)))
          (v128.store (local.get $p) (v128.bitselect (f32x4.div (local.get $v) (local.get $vs)) (local.get $v) (local.get $mask)))
          (local.set $j (i32.add (local.get $j) (i32.const 4)))
          (br $div)))))
      (local.set $x (local.get $row_end))
      (local.set $stats (i32.add (local.get $stats) (i32.const 8)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $row))))

  ;; ---- a whole inference forward, for numpy's per-call cost in Pyodide ----------------
  ;; Every transformer block of the mini-GPT (gpt.block, without caches) and the final layer
  ;; norm, over x [rows, c] = `rows / t` sequences of t positions, in place: one call where
  ;; numpy would make about forty per block. With a KV cache (one sequence, gpt.extend), the
  ;; `past` keys and values of every layer lie at $kvp ([layers, 2, heads, past, hs]) and, if
  ;; $kvn is not 0, the new ones go to $kvn ([layers, 2, heads, t, hs]). For training, $table
  ;; (if not 0) holds, per layer, ten byte addresses where the backward's inputs go (ln1's
  ;; norm and rstd, a, qkv, the attention weights, y, ln2's norm and rstd, m, the MLP's
  ;; activations), then two for the final norm's (sgemm.py's train_layout). The parameters lie from $w in gpt.KERNEL_ORDER
  ;; (per layer ln1 w b, qkv w b, proj w b, ln2 w b, fc w b, out w b; then lnf w b); the work
  ;; regions (each followed by slack for $product's blocks, sgemm.py's forward_layout) hold
  ;; a: a layer norm's output [rows, c], qkv [rows, 3c], y: attention's output [rows, c],
  ;; h: the MLP's [rows, hid], tmp [rows, c], and per head: kt [hs, t], vs [t, hs], sc [t, t],
  ;; yo [t, hs], stats [t, 2]. The operations are gpt.py's, in its order.
  (func (export "forward") (param $w i32) (param $x i32) (param $rows i32) (param $t i32) (param $c i32)
        (param $heads i32) (param $layers i32) (param $hid i32) (param $scale f32)
        (param $past i32) (param $kvp i32) (param $kvn i32) (param $table i32)
        (param $a i32) (param $qkv i32) (param $y i32) (param $h i32) (param $tmp i32)
        (param $kt i32) (param $vs i32) (param $sc i32) (param $yo i32) (param $stats i32)
    (local $l i32) (local $c4 i32) (local $m i32) (local $n1 i32) (local $r1 i32) (local $n2 i32) (local $r2 i32)
    (local $atts i32) (local $tb i32)
    (local.set $c4 (i32.shl (local.get $c) (i32.const 2)))
    (local.set $m (local.get $a))  ;; without a table, ln2's output reuses ln1's region
    (local.set $l (i32.const 0))
    (block $done (loop $layer
      (br_if $done (i32.ge_s (local.get $l) (local.get $layers)))
      (if (local.get $table) (then  ;; training keeps what the backward reads, a region each, per layer
        (local.set $tb (i32.add (local.get $table) (i32.mul (local.get $l) (i32.const 40))))
        (local.set $n1 (i32.load (local.get $tb))) (local.set $r1 (i32.load offset=4 (local.get $tb)))
        (local.set $a (i32.load offset=8 (local.get $tb))) (local.set $qkv (i32.load offset=12 (local.get $tb)))
        (local.set $atts (i32.load offset=16 (local.get $tb))) (local.set $y (i32.load offset=20 (local.get $tb)))
        (local.set $n2 (i32.load offset=24 (local.get $tb))) (local.set $r2 (i32.load offset=28 (local.get $tb)))
        (local.set $m (i32.load offset=32 (local.get $tb))) (local.set $h (i32.load offset=36 (local.get $tb)))))
      ;; a = ln1(x); qkv = a @ Wqkv + b; y = attention(qkv); x += y @ Wproj + b
      (call $layernorm (local.get $x) (local.get $a) (local.get $rows) (local.get $c)
                       (local.get $w) (i32.add (local.get $w) (local.get $c4)) (local.get $n1) (local.get $r1))
      (local.set $w (i32.add (local.get $w) (i32.shl (local.get $c4) (i32.const 1))))
      (call $product (local.get $a) (local.get $w) (local.get $qkv) (local.get $rows) (local.get $c)
                     (i32.mul (local.get $c) (i32.const 3)) (local.get $c4) (i32.const 4))
      (local.set $w (i32.add (local.get $w) (i32.mul (local.get $c4) (i32.mul (local.get $c) (i32.const 3)))))
      (call $bias (local.get $qkv) (local.get $rows) (i32.mul (local.get $c) (i32.const 3)) (local.get $w) (i32.const 0))
      (local.set $w (i32.add (local.get $w) (i32.mul (local.get $c4) (i32.const 3))))
      (call $attend (local.get $qkv) (local.get $y) (local.get $rows) (local.get $t) (local.get $c)
                    (local.get $heads) (local.get $scale) (local.get $past)
                    (i32.add (local.get $kvp) (i32.mul (local.get $l) (i32.shl (i32.mul (local.get $past) (local.get $c)) (i32.const 3))))
                    (if (result i32) (local.get $kvn)
                      (then (i32.add (local.get $kvn) (i32.mul (local.get $l) (i32.shl (i32.mul (local.get $t) (local.get $c)) (i32.const 3)))))
                      (else (i32.const 0)))
                    (local.get $kt) (local.get $vs) (local.get $sc) (local.get $atts) (local.get $yo) (local.get $stats))
      (call $product (local.get $y) (local.get $w) (local.get $tmp) (local.get $rows) (local.get $c)
                     (local.get $c) (local.get $c4) (i32.const 4))
      (local.set $w (i32.add (local.get $w) (i32.mul (local.get $c4) (local.get $c))))
      (call $bias (local.get $tmp) (local.get $rows) (local.get $c) (local.get $w) (i32.const 0))
      (local.set $w (i32.add (local.get $w) (local.get $c4)))
      (call $add (local.get $x) (local.get $tmp) (i32.mul (local.get $rows) (local.get $c)))
      ;; m = ln2(x); h = relu(m @ Wfc + b); x += h @ Wout + b
      (call $layernorm (local.get $x) (local.get $m) (local.get $rows) (local.get $c)
                       (local.get $w) (i32.add (local.get $w) (local.get $c4)) (local.get $n2) (local.get $r2))
      (local.set $w (i32.add (local.get $w) (i32.shl (local.get $c4) (i32.const 1))))
      (call $product (local.get $m) (local.get $w) (local.get $h) (local.get $rows) (local.get $c)
                     (local.get $hid) (local.get $c4) (i32.const 4))
      (local.set $w (i32.add (local.get $w) (i32.mul (local.get $c4) (local.get $hid))))
      (call $bias (local.get $h) (local.get $rows) (local.get $hid) (local.get $w) (i32.const 1))
      (local.set $w (i32.add (local.get $w) (i32.shl (local.get $hid) (i32.const 2))))
      (call $product (local.get $h) (local.get $w) (local.get $tmp) (local.get $rows) (local.get $hid)
                     (local.get $c) (i32.shl (local.get $hid) (i32.const 2)) (i32.const 4))
      (local.set $w (i32.add (local.get $w) (i32.mul (i32.shl (local.get $hid) (i32.const 2)) (local.get $c))))
      (call $bias (local.get $tmp) (local.get $rows) (local.get $c) (local.get $w) (i32.const 0))
      (local.set $w (i32.add (local.get $w) (local.get $c4)))
      (call $add (local.get $x) (local.get $tmp) (i32.mul (local.get $rows) (local.get $c)))
      (local.set $l (i32.add (local.get $l) (i32.const 1)))
      (br $layer)))
    (if (local.get $table) (then  ;; the final norm's norm and rstd come after the layers'
      (local.set $tb (i32.add (local.get $table) (i32.mul (local.get $layers) (i32.const 40))))
      (local.set $n1 (i32.load (local.get $tb))) (local.set $r1 (i32.load offset=4 (local.get $tb)))))
    (call $layernorm (local.get $x) (local.get $x) (local.get $rows) (local.get $c)  ;; lnf, in place
                     (local.get $w) (i32.add (local.get $w) (local.get $c4)) (local.get $n1) (local.get $r1)))

  ;; out = norm * w + b per row of c, norm = (x - mean) * rstd, rstd = 1 / sqrt(var + 1e-5)
  ;; (gpt.layernorm), four entries at a time and the rest one by one; out may be x itself.
  ;; If $norm is not 0, norm [rows, c] goes there, and rstd [rows] to $rstdp (for a backward).
  (func $layernorm (param $x i32) (param $out i32) (param $rows i32) (param $c i32) (param $w i32) (param $b i32)
        (param $norm i32) (param $rstdp i32)
    (local $r i32) (local $j i32) (local $p i32) (local $c4 i32) (local $s f32) (local $d f32) (local $mean f32)
    (local $rstd f32) (local $vs v128) (local $vd v128) (local $vm v128) (local $vr v128) (local $nv v128) (local $ns f32)
    (local.set $c4 (i32.and (local.get $c) (i32.const -4)))  ;; entries in whole vectors
    (local.set $r (i32.const 0))
    (block $done (loop $row
      (br_if $done (i32.ge_s (local.get $r) (local.get $rows)))
      (local.set $vs (v128.const f32x4 0 0 0 0))
      (local.set $j (i32.const 0))
      (block $sum_done (loop $sum
        (br_if $sum_done (i32.ge_s (local.get $j) (local.get $c4)))
        (local.set $vs (f32x4.add (local.get $vs) (v128.load (i32.add (local.get $x) (i32.shl (local.get $j) (i32.const 2))))))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $sum)))
      (local.set $s (f32.add (f32.add (f32x4.extract_lane 0 (local.get $vs)) (f32x4.extract_lane 1 (local.get $vs)))
                             (f32.add (f32x4.extract_lane 2 (local.get $vs)) (f32x4.extract_lane 3 (local.get $vs)))))
      (block $sum_tail_done (loop $sum_tail
        (br_if $sum_tail_done (i32.ge_s (local.get $j) (local.get $c)))
        (local.set $s (f32.add (local.get $s) (f32.load (i32.add (local.get $x) (i32.shl (local.get $j) (i32.const 2))))))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $sum_tail)))
      (local.set $mean (f32.div (local.get $s) (f32.convert_i32_s (local.get $c))))
      (local.set $vm (f32x4.splat (local.get $mean)))
      (local.set $vs (v128.const f32x4 0 0 0 0))
      (local.set $j (i32.const 0))
      (block $var_done (loop $var
        (br_if $var_done (i32.ge_s (local.get $j) (local.get $c4)))
        (local.set $vd (f32x4.sub (v128.load (i32.add (local.get $x) (i32.shl (local.get $j) (i32.const 2)))) (local.get $vm)))
        (local.set $vs (f32x4.add (local.get $vs) (f32x4.mul (local.get $vd) (local.get $vd))))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $var)))
      (local.set $s (f32.add (f32.add (f32x4.extract_lane 0 (local.get $vs)) (f32x4.extract_lane 1 (local.get $vs)))
                             (f32.add (f32x4.extract_lane 2 (local.get $vs)) (f32x4.extract_lane 3 (local.get $vs)))))
      (block $var_tail_done (loop $var_tail
        (br_if $var_tail_done (i32.ge_s (local.get $j) (local.get $c)))
        (local.set $d (f32.sub (f32.load (i32.add (local.get $x) (i32.shl (local.get $j) (i32.const 2)))) (local.get $mean)))
        (local.set $s (f32.add (local.get $s) (f32.mul (local.get $d) (local.get $d))))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $var_tail)))
      (local.set $rstd (f32.div (f32.const 1) (f32.sqrt (f32.add (f32.div (local.get $s) (f32.convert_i32_s (local.get $c)))
                                                                (f32.const 1e-5)))))
      (local.set $vr (f32x4.splat (local.get $rstd)))
      (local.set $j (i32.const 0))
      (block $norm_done (loop $norm_loop
        (br_if $norm_done (i32.ge_s (local.get $j) (local.get $c4)))
        (local.set $p (i32.shl (local.get $j) (i32.const 2)))
        (local.set $nv (f32x4.mul (f32x4.sub (v128.load (i32.add (local.get $x) (local.get $p))) (local.get $vm))
                                  (local.get $vr)))
        (if (local.get $norm) (then (v128.store (i32.add (local.get $norm) (local.get $p)) (local.get $nv))))
        (v128.store (i32.add (local.get $out) (local.get $p))
          (f32x4.add (f32x4.mul (local.get $nv) (v128.load (i32.add (local.get $w) (local.get $p))))
                     (v128.load (i32.add (local.get $b) (local.get $p)))))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $norm_loop)))
      (block $norm_tail_done (loop $norm_tail
        (br_if $norm_tail_done (i32.ge_s (local.get $j) (local.get $c)))
        (local.set $p (i32.shl (local.get $j) (i32.const 2)))
        (local.set $ns (f32.mul (f32.sub (f32.load (i32.add (local.get $x) (local.get $p))) (local.get $mean))
                                (local.get $rstd)))
        (if (local.get $norm) (then (f32.store (i32.add (local.get $norm) (local.get $p)) (local.get $ns))))
        (f32.store (i32.add (local.get $out) (local.get $p))
          (f32.add (f32.mul (local.get $ns) (f32.load (i32.add (local.get $w) (local.get $p))))
                   (f32.load (i32.add (local.get $b) (local.get $p)))))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $norm_tail)))
      (if (local.get $norm) (then
        (f32.store (local.get $rstdp) (local.get $rstd))
        (local.set $norm (i32.add (local.get $norm) (i32.shl (local.get $c) (i32.const 2))))
        (local.set $rstdp (i32.add (local.get $rstdp) (i32.const 4)))))
      (local.set $x (i32.add (local.get $x) (i32.shl (local.get $c) (i32.const 2))))
      (local.set $out (i32.add (local.get $out) (i32.shl (local.get $c) (i32.const 2))))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $row))))

  ;; x[r, j] += b[j] over rows of n, then max(., 0) if $relu (gpt.linear's bias, gpt.relu).
  (func $bias (param $x i32) (param $rows i32) (param $n i32) (param $b i32) (param $relu i32)
    (local $r i32) (local $j i32) (local $p i32) (local $v f32) (local $vv v128)
    (local.set $r (i32.const 0))
    (block $done (loop $row
      (br_if $done (i32.ge_s (local.get $r) (local.get $rows)))
      (local.set $j (i32.const 0))
      (block $cols_done (loop $cols
        (br_if $cols_done (i32.gt_s (i32.add (local.get $j) (i32.const 4)) (local.get $n)))
        (local.set $p (i32.add (local.get $x) (i32.shl (local.get $j) (i32.const 2))))
        (local.set $vv (f32x4.add (v128.load (local.get $p)) (v128.load (i32.add (local.get $b) (i32.shl (local.get $j) (i32.const 2))))))
        (if (local.get $relu) (then  ;; pmax: x < 0 ? 0 : x, one instruction (f32x4.max also orders zeros)
          (local.set $vv (f32x4.pmax (local.get $vv) (v128.const f32x4 0 0 0 0)))))
        (v128.store (local.get $p) (local.get $vv))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $cols)))
      (block $tail_done (loop $tail
        (br_if $tail_done (i32.ge_s (local.get $j) (local.get $n)))
        (local.set $p (i32.add (local.get $x) (i32.shl (local.get $j) (i32.const 2))))
        (local.set $v (f32.add (f32.load (local.get $p)) (f32.load (i32.add (local.get $b) (i32.shl (local.get $j) (i32.const 2))))))
        (if (local.get $relu) (then (if (f32.lt (local.get $v) (f32.const 0)) (then (local.set $v (f32.const 0))))))
        (f32.store (local.get $p) (local.get $v))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $tail)))
      (local.set $x (i32.add (local.get $x) (i32.shl (local.get $n) (i32.const 2))))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $row))))

  ;; x[i] += y[i], i < n (the residual stream).
  (func $add (param $x i32) (param $y i32) (param $n i32)
    (local $end i32)
    (local.set $end (i32.add (local.get $x) (i32.shl (i32.and (local.get $n) (i32.const -4)) (i32.const 2))))
    (block $done (loop $simd
      (br_if $done (i32.ge_u (local.get $x) (local.get $end)))
      (v128.store (local.get $x) (f32x4.add (v128.load (local.get $x)) (v128.load (local.get $y))))
      (local.set $x (i32.add (local.get $x) (i32.const 16)))
      (local.set $y (i32.add (local.get $y) (i32.const 16)))
      (br $simd)))
    (local.set $end (i32.add (local.get $end) (i32.shl (i32.and (local.get $n) (i32.const 3)) (i32.const 2))))
    (block $tail_done (loop $tail
      (br_if $tail_done (i32.ge_u (local.get $x) (local.get $end)))
      (f32.store (local.get $x) (f32.add (f32.load (local.get $x)) (f32.load (local.get $y))))
      (local.set $x (i32.add (local.get $x) (i32.const 4)))
      (local.set $y (i32.add (local.get $y) (i32.const 4)))
      (br $tail))))

  ;; dst[0:bytes] = src[0:bytes], bytes a multiple of 4, regions apart: a head's row of a few
  ;; floats (memory.copy calls out of WebAssembly, which costs more than such a row's copy).
  (func $copy (param $dst i32) (param $src i32) (param $bytes i32)
    (local $end i32)
    (local.set $end (i32.add (local.get $dst) (i32.and (local.get $bytes) (i32.const -16))))
    (block $done (loop $vec
      (br_if $done (i32.ge_u (local.get $dst) (local.get $end)))
      (v128.store (local.get $dst) (v128.load (local.get $src)))
      (local.set $dst (i32.add (local.get $dst) (i32.const 16)))
      (local.set $src (i32.add (local.get $src) (i32.const 16)))
      (br $vec)))
    (local.set $end (i32.add (local.get $end) (i32.and (local.get $bytes) (i32.const 15))))
    (block $tail_done (loop $tail
      (br_if $tail_done (i32.ge_u (local.get $dst) (local.get $end)))
      (f32.store (local.get $dst) (f32.load (local.get $src)))
      (local.set $dst (i32.add (local.get $dst) (i32.const 4)))
      (local.set $src (i32.add (local.get $src) (i32.const 4)))
      (br $tail))))

  ;; Causal self-attention of each sequence of t rows and each head (gpt.attention): q, k, v
  ;; are the head's columns of qkv [rows, 3c]; y [rows, c] gets the heads side by side. With
  ;; a cache (one sequence), the `past` keys and values come first, from $kvp ([2, heads,
  ;; past, hs]: K, then V), and query i sees keys j <= past + i; if $kvn is not 0 the new
  ;; keys and values go there ([2, heads, t, hs]) for the cache. Keys are copied transposed
  ;; to kt [hs, past + t] and values to vs [past + t, hs], so both products read B by rows.
  (func $attend (param $qkv i32) (param $y i32) (param $rows i32) (param $t i32) (param $c i32)
        (param $heads i32) (param $scale f32) (param $past i32) (param $kvp i32) (param $kvn i32)
        (param $kt i32) (param $vs i32) (param $scratch i32) (param $atts i32) (param $yo i32) (param $stats i32)
    (local $s i32) (local $hd i32) (local $hs i32) (local $i i32) (local $d i32) (local $q i32) (local $row3 i32)
    (local $n i32) (local $pk i32) (local $nk i32) (local $src i32)
    (local $dk i32) (local $kend i32) (local $dn i32) (local $c4 i32) (local $n4 i32) (local $tc4 i32) (local $sc i32)
    (local.set $hs (i32.div_u (local.get $c) (local.get $heads)))
    (local.set $c4 (i32.shl (local.get $c) (i32.const 2)))  ;; bytes from a row's k to its v
    (local.set $tc4 (i32.shl (i32.mul (local.get $t) (local.get $c)) (i32.const 2)))  ;; the new K to the new V
    (local.set $row3 (i32.mul (local.get $c) (i32.const 12)))  ;; bytes per qkv row
    (local.set $n (i32.add (local.get $past) (local.get $t)))  ;; keys each query may see at most
    (local.set $n4 (i32.shl (local.get $n) (i32.const 2)))  ;; bytes per row of kt
    (local.set $s (i32.const 0))
    (block $seqs_done (loop $seqs
      (br_if $seqs_done (i32.ge_s (local.get $s) (local.get $rows)))  ;; s: the sequence's first row
      (local.set $hd (i32.const 0))
      (block $heads_done (loop $head
        (br_if $heads_done (i32.ge_s (local.get $hd) (local.get $heads)))
        (local.set $q (i32.add (local.get $qkv) (i32.shl (i32.add (i32.mul (local.get $s) (i32.mul (local.get $c) (i32.const 3)))
                                                                    (i32.mul (local.get $hd) (local.get $hs))) (i32.const 2))))
        (local.set $sc (local.get $scratch))  ;; the weights [t, past + t]; kept, [sequences, heads, t, t], if $atts
        (if (local.get $atts) (then
          (local.set $sc (i32.add (local.get $atts) (i32.shl (i32.mul (i32.add (i32.mul (i32.div_u (local.get $s) (local.get $t)) (local.get $heads))
                                                                              (local.get $hd))
                                                                     (i32.mul (local.get $t) (local.get $t))) (i32.const 2))))))
        (local.set $pk (i32.add (local.get $kvp) (i32.shl (i32.mul (i32.mul (local.get $hd) (local.get $past)) (local.get $hs)) (i32.const 2))))
        (local.set $nk (i32.add (local.get $kvn) (i32.shl (i32.mul (i32.mul (local.get $hd) (local.get $t)) (local.get $hs)) (i32.const 2))))
        (memory.copy (local.get $vs)  ;; the past values, [past, hs] already
                     (i32.add (local.get $pk) (i32.shl (i32.mul (local.get $past) (local.get $c)) (i32.const 2)))
                     (i32.shl (i32.mul (local.get $past) (local.get $hs)) (i32.const 2)))
        (local.set $i (i32.const 0))
        (block $past_done (loop $past_keys  ;; kt[d, i] = k_past[i, d]
          (br_if $past_done (i32.ge_s (local.get $i) (local.get $past)))
          (local.set $d (i32.const 0))
          (block $pd_done (loop $pd
            (br_if $pd_done (i32.ge_s (local.get $d) (local.get $hs)))
            (f32.store (i32.add (local.get $kt) (i32.shl (i32.add (i32.mul (local.get $d) (local.get $n)) (local.get $i)) (i32.const 2)))
              (f32.load (i32.add (local.get $pk) (i32.shl (i32.add (i32.mul (local.get $i) (local.get $hs)) (local.get $d)) (i32.const 2)))))
            (local.set $d (i32.add (local.get $d) (i32.const 1)))
            (br $pd)))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $past_keys)))
        (local.set $i (i32.const 0))
        (block $copy_done (loop $copy  ;; kt[d, past + i] = k[i, d]; vs[past + i] = v[i] after a cache
          (br_if $copy_done (i32.ge_s (local.get $i) (local.get $t)))
          (local.set $src (i32.add (local.get $q) (i32.add (i32.mul (local.get $i) (local.get $row3))
                                                           (i32.shl (local.get $c) (i32.const 2)))))  ;; k[i, 0]
          (if (local.get $past) (then  ;; v[i], c floats on, after the cache's values (without a cache: read in qkv)
            (call $copy (i32.add (local.get $vs) (i32.shl (i32.mul (i32.add (local.get $past) (local.get $i)) (local.get $hs))
                                                          (i32.const 2)))
                        (i32.add (local.get $src) (local.get $c4)) (i32.shl (local.get $hs) (i32.const 2)))))
          (if (local.get $kvn) (then  ;; the cache's new rows: K [heads, t, hs], then V
            (local.set $dn (i32.add (local.get $nk) (i32.shl (i32.mul (local.get $i) (local.get $hs)) (i32.const 2))))
            (call $copy (local.get $dn) (local.get $src) (i32.shl (local.get $hs) (i32.const 2)))
            (call $copy (i32.add (local.get $dn) (local.get $tc4)) (i32.add (local.get $src) (local.get $c4))
                        (i32.shl (local.get $hs) (i32.const 2)))))
          (local.set $dk (i32.add (local.get $kt) (i32.shl (i32.add (local.get $past) (local.get $i)) (i32.const 2))))
          (local.set $kend (i32.add (local.get $src) (i32.shl (local.get $hs) (i32.const 2))))  ;; k[i]'s end
          (block $d_done (loop $dl
            (br_if $d_done (i32.ge_u (local.get $src) (local.get $kend)))
            (f32.store (local.get $dk) (f32.load (local.get $src)))
            (local.set $src (i32.add (local.get $src) (i32.const 4)))
            (local.set $dk (i32.add (local.get $dk) (local.get $n4)))
            (br $dl)))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $copy)))
        (call $triangular (local.get $q) (local.get $kt) (local.get $sc) (local.get $t) (local.get $hs) (local.get $n)
                          (local.get $row3) (i32.const 4) (local.get $n4)  ;; scores [t, past + t], those the queries see
                          (i32.add (local.get $past) (i32.const 4)) (i32.const 0) (i32.const 0))
        (call $softmax (local.get $sc) (local.get $t) (local.get $n) (local.get $t) (local.get $past) (local.get $scale)
                       (i32.const 1) (local.get $stats))
        (if (local.get $past)  ;; [t, hs], over the keys seen: the values copied after the cache's, or read in qkv
          (then (call $triangular (local.get $sc) (local.get $vs) (local.get $yo) (local.get $t) (local.get $n) (local.get $hs)
                                  (local.get $n4) (i32.const 4) (i32.shl (local.get $hs) (i32.const 2))
                                  (i32.const 0) (i32.add (local.get $past) (i32.const 4)) (i32.const 0)))
          (else (call $triangular (local.get $sc) (i32.add (local.get $q) (i32.shl (local.get $c) (i32.const 3))) (local.get $yo)
                                  (local.get $t) (local.get $n) (local.get $hs) (local.get $n4) (i32.const 4) (local.get $row3)
                                  (i32.const 0) (i32.const 4) (i32.const 0))))
        (local.set $i (i32.const 0))
        (block $out_done (loop $out  ;; y[s + i, hd*hs + d] = yo[i, d]
          (br_if $out_done (i32.ge_s (local.get $i) (local.get $t)))
          (call $copy
            (i32.add (local.get $y) (i32.shl (i32.add (i32.mul (i32.add (local.get $s) (local.get $i)) (local.get $c))
                                                      (i32.mul (local.get $hd) (local.get $hs))) (i32.const 2)))
            (i32.add (local.get $yo) (i32.shl (i32.mul (local.get $i) (local.get $hs)) (i32.const 2)))
            (i32.shl (local.get $hs) (i32.const 2)))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $out)))
        (local.set $hd (i32.add (local.get $hd) (i32.const 1)))
        (br $head)))
      (local.set $s (i32.add (local.get $s) (local.get $t)))
      (br $seqs))))

  ;; ---- training's backward: every block's gradients in one call -----------------------
  ;; gpt.backward's loop over the blocks, from the gradient dx [rows, c] of the final norm's
  ;; output to that of the first block's input (left in $dx), and every block's and the final
  ;; norm's parameter gradients, written to $g in the weights' own layout ($w, as `forward`).
  ;; $table is the training forward's own (ten byte addresses per layer: ln1's norm and rstd,
  ;; a, qkv, att, y, ln2's norm and rstd, m, act; then the final norm's two), so what it kept
  ;; is read where it lies. Work regions: d4 [rows, hid], dm, dt [rows, c], dqkv [rows, 3c],
  ;; wt and gws (a weight's size), and per head vt [hs, t], datt [t, t], dqh, dkh, dvh [t, hs]
  ;; (sgemm.py's backward_layout). If $idx is not 0, the embedding's backward
  ;; last: each row r of dx is added to row idx[r] (int32 [rows]) of $eg [vocab, c], in row
  ;; order (numpy's add.at, bit for bit).
  (func (export "backward") (param $w i32) (param $g i32) (param $dx i32) (param $rows i32) (param $t i32) (param $c i32)
        (param $heads i32) (param $layers i32) (param $hid i32) (param $root f32) (param $table i32)
        (param $d4 i32) (param $dm i32) (param $dt i32) (param $dqkv i32) (param $wt i32) (param $gws i32)
        (param $vt i32) (param $datt i32) (param $dqh i32) (param $dkh i32) (param $dvh i32) (param $idx i32) (param $eg i32)
    (local $l i32) (local $size i32) (local $wl i32) (local $gl i32) (local $tb i32) (local $c4 i32) (local $cc i32)
    (local.set $c4 (i32.shl (local.get $c) (i32.const 2)))
    (local.set $cc (i32.mul (local.get $c) (local.get $c)))
    ;; bytes per layer of parameters: ln1 2c, qkv 3c² + 3c, proj c² + c, ln2 2c, fc c·hid + hid, out hid·c + c
    (local.set $size (i32.shl (i32.add (i32.add (i32.shl (local.get $cc) (i32.const 2)) (i32.mul (local.get $c) (i32.const 9)))
                                       (i32.add (i32.shl (i32.mul (local.get $c) (local.get $hid)) (i32.const 1)) (local.get $hid)))
                              (i32.const 2)))
    ;; the final norm: dx <- its backward, its parameters' gradients after the layers'
    (local.set $tb (i32.add (local.get $table) (i32.mul (local.get $layers) (i32.const 40))))
    (local.set $wl (i32.add (local.get $w) (i32.mul (local.get $layers) (local.get $size))))
    (local.set $gl (i32.add (local.get $g) (i32.mul (local.get $layers) (local.get $size))))
    (call $lnback (local.get $dx) (i32.load (local.get $tb)) (i32.load offset=4 (local.get $tb)) (local.get $wl)
                  (local.get $rows) (local.get $c) (local.get $dt) (local.get $gl) (i32.add (local.get $gl) (local.get $c4)))
    (memory.copy (local.get $dx) (local.get $dt) (i32.mul (local.get $rows) (local.get $c4)))
    (local.set $l (local.get $layers))
    (block $done (loop $layer
      (br_if $done (i32.le_s (local.get $l) (i32.const 0)))
      (local.set $l (i32.sub (local.get $l) (i32.const 1)))
      (local.set $tb (i32.add (local.get $table) (i32.mul (local.get $l) (i32.const 40))))
      (local.set $wl (i32.add (local.get $w) (i32.mul (local.get $l) (local.get $size))))
      (local.set $gl (i32.add (local.get $g) (i32.mul (local.get $l) (local.get $size))))
      ;; out: d4 = dx @ Wout^T; Wout's and bout's gradients (Wout at 8c + 4c² + c·hid + hid floats)
      (call $linback (local.get $dx) (i32.load offset=36 (local.get $tb)) (local.get $rows) (local.get $hid) (local.get $c)
                     (i32.add (local.get $wl) (i32.shl (i32.add (i32.add (i32.shl (local.get $c) (i32.const 3)) (i32.shl (local.get $cc) (i32.const 2)))
                                                                (i32.add (i32.mul (local.get $c) (local.get $hid)) (local.get $hid))) (i32.const 2)))
                     (i32.add (local.get $gl) (i32.shl (i32.add (i32.add (i32.shl (local.get $c) (i32.const 3)) (i32.shl (local.get $cc) (i32.const 2)))
                                                                (i32.add (i32.mul (local.get $c) (local.get $hid)) (local.get $hid))) (i32.const 2)))
                     (local.get $d4) (local.get $wt) (local.get $gws))
      (call $reluback (local.get $d4) (i32.load offset=36 (local.get $tb)) (i32.mul (local.get $rows) (local.get $hid)))
      ;; fc: dm = d4 @ Wfc^T (Wfc at 8c + 4c²)
      (call $linback (local.get $d4) (i32.load offset=32 (local.get $tb)) (local.get $rows) (local.get $c) (local.get $hid)
                     (i32.add (local.get $wl) (i32.shl (i32.add (i32.shl (local.get $c) (i32.const 3)) (i32.shl (local.get $cc) (i32.const 2))) (i32.const 2)))
                     (i32.add (local.get $gl) (i32.shl (i32.add (i32.shl (local.get $c) (i32.const 3)) (i32.shl (local.get $cc) (i32.const 2))) (i32.const 2)))
                     (local.get $dm) (local.get $wt) (local.get $gws))
      ;; ln2 (at 6c + 4c²): dx += its backward
      (call $lnback (local.get $dm) (i32.load offset=24 (local.get $tb)) (i32.load offset=28 (local.get $tb))
                    (i32.add (local.get $wl) (i32.shl (i32.add (i32.mul (local.get $c) (i32.const 6)) (i32.shl (local.get $cc) (i32.const 2))) (i32.const 2)))
                    (local.get $rows) (local.get $c) (local.get $dt)
                    (i32.add (local.get $gl) (i32.shl (i32.add (i32.mul (local.get $c) (i32.const 6)) (i32.shl (local.get $cc) (i32.const 2))) (i32.const 2)))
                    (i32.add (local.get $gl) (i32.shl (i32.add (i32.mul (local.get $c) (i32.const 7)) (i32.shl (local.get $cc) (i32.const 2))) (i32.const 2))))
      (call $add (local.get $dx) (local.get $dt) (i32.mul (local.get $rows) (local.get $c)))
      ;; proj (at 5c + 3c²): dm = dx @ Wproj^T, the gradient of attention's output y
      (call $linback (local.get $dx) (i32.load offset=20 (local.get $tb)) (local.get $rows) (local.get $c) (local.get $c)
                     (i32.add (local.get $wl) (i32.shl (i32.add (i32.mul (local.get $c) (i32.const 5)) (i32.mul (local.get $cc) (i32.const 3))) (i32.const 2)))
                     (i32.add (local.get $gl) (i32.shl (i32.add (i32.mul (local.get $c) (i32.const 5)) (i32.mul (local.get $cc) (i32.const 3))) (i32.const 2)))
                     (local.get $dm) (local.get $wt) (local.get $gws))
      (call $attnback (local.get $dm) (local.get $dqkv) (i32.load offset=12 (local.get $tb)) (i32.load offset=16 (local.get $tb))
                      (local.get $rows) (local.get $t) (local.get $c) (local.get $heads) (local.get $root) (local.get $vt)
                      (local.get $datt) (local.get $dqh) (local.get $dkh) (local.get $dvh))
      ;; qkv (at 2c): dm = dqkv @ Wqkv^T
      (call $linback (local.get $dqkv) (i32.load offset=8 (local.get $tb)) (local.get $rows) (local.get $c)
                     (i32.mul (local.get $c) (i32.const 3))
                     (i32.add (local.get $wl) (i32.shl (local.get $c) (i32.const 3)))
                     (i32.add (local.get $gl) (i32.shl (local.get $c) (i32.const 3)))
                     (local.get $dm) (local.get $wt) (local.get $gws))
      ;; ln1 (at 0): dx += its backward
      (call $lnback (local.get $dm) (i32.load (local.get $tb)) (i32.load offset=4 (local.get $tb)) (local.get $wl)
                    (local.get $rows) (local.get $c) (local.get $dt) (local.get $gl) (i32.add (local.get $gl) (local.get $c4)))
      (call $add (local.get $dx) (local.get $dt) (i32.mul (local.get $rows) (local.get $c)))
      (br $layer)))
    (if (local.get $idx) (then
      (local.set $l (i32.const 0))
      (block $rows_done (loop $scatter
        (br_if $rows_done (i32.ge_s (local.get $l) (local.get $rows)))
        (call $add (i32.add (local.get $eg) (i32.mul (i32.load (i32.add (local.get $idx) (i32.shl (local.get $l) (i32.const 2))))
                                                     (local.get $c4)))
                   (i32.add (local.get $dx) (i32.mul (local.get $l) (local.get $c4))) (local.get $c))
        (local.set $l (i32.add (local.get $l) (i32.const 1)))
        (br $scatter))))))

;; ---- training's loss head, forward and backward in one call ---------------------------
  ;; The tied head after the final norm's output x [rows, c] (the training forward's, where it
  ;; lies): logits = x @ wt (wt [c, vocab], the embedding transposed), the softmax of each row
  ;; (probs, its max and sum to $stats as `softmax` writes them), dlogits = (probs - one-hot
  ;; of targets (int32 [rows])) / n, the embedding's gradient from the head dw = dlogits^T @ x
  ;; [vocab, c], and the final norm output's gradient dx = dlogits @ w (w [vocab, c]). The same
  ;; operations as gpt.forward and gpt.backward make through the kernel's pieces, and the same
  ;; bits. Every region is followed by slack for $product.
  (func (export "head") (param $x i32) (param $wt i32) (param $w i32) (param $targets i32) (param $rows i32)
        (param $c i32) (param $vocab i32) (param $n f32) (param $logits i32) (param $stats i32) (param $probs i32)
        (param $dw i32) (param $dx i32)
    (local $r i32) (local $p i32) (local $end i32) (local $vend i32) (local $vn v128) (local $v4 i32)
    (local.set $v4 (i32.shl (local.get $vocab) (i32.const 2)))
    (call $product (local.get $x) (local.get $wt) (local.get $logits) (local.get $rows) (local.get $c) (local.get $vocab)
                   (i32.shl (local.get $c) (i32.const 2)) (i32.const 4))
    (memory.copy (local.get $probs) (local.get $logits) (i32.mul (local.get $rows) (local.get $v4)))
    (call $softmax (local.get $probs) (local.get $rows) (local.get $vocab) (i32.const 1) (i32.sub (local.get $vocab) (i32.const 1))
                   (f32.const 1) (i32.const 1) (local.get $stats))
    (local.set $r (i32.const 0))
    (block $t_done (loop $target  ;; the target's probability, minus 1
      (br_if $t_done (i32.ge_s (local.get $r) (local.get $rows)))
      (local.set $p (i32.add (local.get $probs) (i32.add (i32.mul (local.get $r) (local.get $v4))
                                                         (i32.shl (i32.load (i32.add (local.get $targets) (i32.shl (local.get $r) (i32.const 2))))
                                                                  (i32.const 2)))))
      (f32.store (local.get $p) (f32.sub (f32.load (local.get $p)) (f32.const 1)))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $target)))
    (local.set $p (local.get $probs))  ;; all of it / n
    (local.set $end (i32.add (local.get $probs) (i32.mul (local.get $rows) (local.get $v4))))
    (local.set $vend (i32.add (local.get $probs) (i32.shl (i32.and (i32.mul (local.get $rows) (local.get $vocab)) (i32.const -4)) (i32.const 2))))
    (local.set $vn (f32x4.splat (local.get $n)))
    (block $vdone (loop $vdiv
      (br_if $vdone (i32.ge_u (local.get $p) (local.get $vend)))
      (v128.store (local.get $p) (f32x4.div (v128.load (local.get $p)) (local.get $vn)))
      (local.set $p (i32.add (local.get $p) (i32.const 16)))
      (br $vdiv)))
    (block $done (loop $div
      (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
      (f32.store (local.get $p) (f32.div (f32.load (local.get $p)) (local.get $n)))
      (local.set $p (i32.add (local.get $p) (i32.const 4)))
      (br $div)))
    (call $product (local.get $probs) (local.get $x) (local.get $dw) (local.get $vocab) (local.get $rows) (local.get $c)
                   (i32.const 4) (local.get $v4))  ;; dlogits^T @ x: A's row i is dlogits' column i
    (call $product (local.get $probs) (local.get $w) (local.get $dx) (local.get $rows) (local.get $vocab) (local.get $c)
                   (local.get $v4) (i32.const 4)))

;; ---- a held-out loss's head, after an inference forward -------------------------------
  ;; The tied head over x [rows, c] (the forward's output, where it lies): logits = x @ wt
  ;; (wt [c, vocab]) to $logits, each row's target logit (targets int32 [rows]) to $picked,
  ;; then `softmax`'s exponentials in place, unnormalised, with each row's max and sum to
  ;; $stats: what a mean cross-entropy reads, the logits never leaving the kernel.
  (func (export "nll") (param $x i32) (param $wt i32) (param $targets i32) (param $rows i32) (param $c i32)
        (param $vocab i32) (param $logits i32) (param $picked i32) (param $stats i32)
    (local $r i32) (local $v4 i32)
    (local.set $v4 (i32.shl (local.get $vocab) (i32.const 2)))
    (call $product (local.get $x) (local.get $wt) (local.get $logits) (local.get $rows) (local.get $c) (local.get $vocab)
                   (i32.shl (local.get $c) (i32.const 2)) (i32.const 4))
    (local.set $r (i32.const 0))
    (block $done (loop $pick
      (br_if $done (i32.ge_s (local.get $r) (local.get $rows)))
      (f32.store (i32.add (local.get $picked) (i32.shl (local.get $r) (i32.const 2)))
        (f32.load (i32.add (i32.add (local.get $logits) (i32.mul (local.get $r) (local.get $v4)))
                           (i32.shl (i32.load (i32.add (local.get $targets) (i32.shl (local.get $r) (i32.const 2))))
                                    (i32.const 2)))))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $pick)))
    (call $softmax (local.get $logits) (local.get $rows) (local.get $vocab) (i32.const 1) (i32.sub (local.get $vocab) (i32.const 1))
                   (f32.const 1) (i32.const 0) (local.get $stats)))

  ;; ---- AdamW over every parameter at once (train.AdamW.step), numpy's float32 to the bit --
  ;; m += k1 (g - m); v += k2 (g g - v); p = p * (mask ? dec : 1) - lr (m / c1) / (sqrt(v / c2)
  ;; + eps), element by element over n floats at $p, $m, $v, $g, with $mask int32 (-1 where
  ;; the decoupled decay applies, 0 elsewhere): the operations and their order are numpy's,
  ;; each correctly rounded in float32, four lanes at a time.
  (func (export "adamw") (param $p i32) (param $m i32) (param $v i32) (param $g i32) (param $mask i32) (param $n i32)
        (param $k1 f32) (param $k2 f32) (param $dec f32) (param $lr f32) (param $c1 f32) (param $c2 f32) (param $eps f32)
    (local $i i32) (local $end i32) (local $vend i32) (local $gv v128) (local $mv v128) (local $vv v128)
    (local $gs f32) (local $ms f32) (local $vs f32)
    (local.set $end (i32.shl (local.get $n) (i32.const 2)))
    (local.set $vend (i32.shl (i32.and (local.get $n) (i32.const -4)) (i32.const 2)))
    (block $vdone (loop $vec
      (br_if $vdone (i32.ge_u (local.get $i) (local.get $vend)))
      (local.set $gv (v128.load (i32.add (local.get $g) (local.get $i))))
      (local.set $mv (v128.load (i32.add (local.get $m) (local.get $i))))
      (local.set $vv (v128.load (i32.add (local.get $v) (local.get $i))))
      (local.set $mv (f32x4.add (local.get $mv) (f32x4.mul (f32x4.splat (local.get $k1)) (f32x4.sub (local.get $gv) (local.get $mv)))))
      (local.set $vv (f32x4.add (local.get $vv) (f32x4.mul (f32x4.splat (local.get $k2))
                                                           (f32x4.sub (f32x4.mul (local.get $gv) (local.get $gv)) (local.get $vv)))))
      (v128.store (i32.add (local.get $m) (local.get $i)) (local.get $mv))
      (v128.store (i32.add (local.get $v) (local.get $i)) (local.get $vv))
      (v128.store (i32.add (local.get $p) (local.get $i))
        (f32x4.sub (f32x4.mul (v128.load (i32.add (local.get $p) (local.get $i)))
                              (v128.bitselect (f32x4.splat (local.get $dec)) (v128.const f32x4 1 1 1 1)
                                              (v128.load (i32.add (local.get $mask) (local.get $i)))))
                   (f32x4.div (f32x4.mul (f32x4.splat (local.get $lr)) (f32x4.div (local.get $mv) (f32x4.splat (local.get $c1))))
                              (f32x4.add (f32x4.sqrt (f32x4.div (local.get $vv) (f32x4.splat (local.get $c2))))
                                         (f32x4.splat (local.get $eps))))))
      (local.set $i (i32.add (local.get $i) (i32.const 16)))
      (br $vec)))
    (block $done (loop $each
      (br_if $done (i32.ge_u (local.get $i) (local.get $end)))
      (local.set $gs (f32.load (i32.add (local.get $g) (local.get $i))))
      (local.set $ms (f32.load (i32.add (local.get $m) (local.get $i))))
      (local.set $vs (f32.load (i32.add (local.get $v) (local.get $i))))
      (local.set $ms (f32.add (local.get $ms) (f32.mul (local.get $k1) (f32.sub (local.get $gs) (local.get $ms)))))
      (local.set $vs (f32.add (local.get $vs) (f32.mul (local.get $k2) (f32.sub (f32.mul (local.get $gs) (local.get $gs)) (local.get $vs)))))
      (f32.store (i32.add (local.get $m) (local.get $i)) (local.get $ms))
      (f32.store (i32.add (local.get $v) (local.get $i)) (local.get $vs))
      (f32.store (i32.add (local.get $p) (local.get $i))
        (f32.sub (f32.mul (f32.load (i32.add (local.get $p) (local.get $i)))
                          (select (local.get $dec) (f32.const 1) (i32.load (i32.add (local.get $mask) (local.get $i)))))
                 (f32.div (f32.mul (local.get $lr) (f32.div (local.get $ms) (local.get $c1)))
                          (f32.add (f32.sqrt (f32.div (local.get $vs) (local.get $c2))) (local.get $eps)))))
      (local.set $i (i32.add (local.get $i) (i32.const 4)))
      (br $each))))

  ;; gpt.linear_backward for out = x @ W + b, x [rows, nin], W [nin, nout] at $wp, the
  ;; gradient dout [rows, nout]: dx = dout @ W^T (W copied transposed to wt), W's gradient
  ;; x^T @ dout (to scratch gws, then copied: the product writes past its last row, which
  ;; here is the next parameter's gradient) at $gp, and b's, the column sums of dout, after it.
  (func $linback (param $dout i32) (param $x i32) (param $rows i32) (param $nin i32) (param $nout i32)
        (param $wp i32) (param $gp i32) (param $dx i32) (param $wt i32) (param $gws i32)
    (local $i i32) (local $j i32) (local $r i32) (local $p i32) (local $n4 i32) (local $o4 i32)
    (local.set $i (i32.const 0))
    (block $t_done (loop $trans  ;; wt[j, i] = W[i, j]
      (br_if $t_done (i32.ge_s (local.get $i) (local.get $nin)))
      (local.set $j (i32.const 0))
      (block $tj_done (loop $tj
        (br_if $tj_done (i32.ge_s (local.get $j) (local.get $nout)))
        (f32.store (i32.add (local.get $wt) (i32.shl (i32.add (i32.mul (local.get $j) (local.get $nin)) (local.get $i)) (i32.const 2)))
                   (f32.load (i32.add (local.get $wp) (i32.shl (i32.add (i32.mul (local.get $i) (local.get $nout)) (local.get $j)) (i32.const 2)))))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $tj)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $trans)))
    (call $product (local.get $dout) (local.get $wt) (local.get $dx) (local.get $rows) (local.get $nout) (local.get $nin)
                   (i32.shl (local.get $nout) (i32.const 2)) (i32.const 4))
    (call $product (local.get $x) (local.get $dout) (local.get $gws) (local.get $nin) (local.get $rows) (local.get $nout)
                   (i32.const 4) (i32.shl (local.get $nin) (i32.const 2)))
    (memory.copy (local.get $gp) (local.get $gws) (i32.shl (i32.mul (local.get $nin) (local.get $nout)) (i32.const 2)))
    (local.set $gp (i32.add (local.get $gp) (i32.shl (i32.mul (local.get $nin) (local.get $nout)) (i32.const 2))))
    ;; b's gradient: the column sums of dout, row after row (each column's sum in row order),
    ;; four columns at a time
    (local.set $o4 (i32.shl (local.get $nout) (i32.const 2)))
    (local.set $n4 (i32.shl (i32.and (local.get $nout) (i32.const -4)) (i32.const 2)))
    (memory.fill (local.get $gp) (i32.const 0) (local.get $o4))
    (local.set $p (local.get $dout))
    (local.set $r (i32.const 0))
    (block $r_done (loop $rsum
      (br_if $r_done (i32.ge_s (local.get $r) (local.get $rows)))
      (local.set $j (i32.const 0))
      (block $v_done (loop $vcols
        (br_if $v_done (i32.ge_s (local.get $j) (local.get $n4)))
        (v128.store (i32.add (local.get $gp) (local.get $j))
                    (f32x4.add (v128.load (i32.add (local.get $gp) (local.get $j))) (v128.load (i32.add (local.get $p) (local.get $j)))))
        (local.set $j (i32.add (local.get $j) (i32.const 16)))
        (br $vcols)))
      (block $c_done (loop $cols
        (br_if $c_done (i32.ge_s (local.get $j) (local.get $o4)))
        (f32.store (i32.add (local.get $gp) (local.get $j))
                   (f32.add (f32.load (i32.add (local.get $gp) (local.get $j))) (f32.load (i32.add (local.get $p) (local.get $j)))))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $cols)))
      (local.set $p (i32.add (local.get $p) (local.get $o4)))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $rsum))))

  ;; d[i] = 0 where act[i] is not positive (gpt.relu_backward: the mask act > 0).
  (func $reluback (param $d i32) (param $act i32) (param $n i32)
    (local $end i32) (local $vend i32)
    (local.set $end (i32.add (local.get $d) (i32.shl (local.get $n) (i32.const 2))))
    (local.set $vend (i32.add (local.get $d) (i32.shl (i32.and (local.get $n) (i32.const -4)) (i32.const 2))))
    (block $vdone (loop $vec  ;; four at a time: d & (act > 0)
      (br_if $vdone (i32.ge_u (local.get $d) (local.get $vend)))
      (v128.store (local.get $d) (v128.and (v128.load (local.get $d))
                                           (f32x4.gt (v128.load (local.get $act)) (v128.const f32x4 0 0 0 0))))
      (local.set $d (i32.add (local.get $d) (i32.const 16)))
      (local.set $act (i32.add (local.get $act) (i32.const 16)))
      (br $vec)))
    (block $done (loop $each
      (br_if $done (i32.ge_u (local.get $d) (local.get $end)))
      (if (i32.eqz (f32.gt (f32.load (local.get $act)) (f32.const 0))) (then (f32.store (local.get $d) (f32.const 0))))
      (local.set $d (i32.add (local.get $d) (i32.const 4)))
      (local.set $act (i32.add (local.get $act) (i32.const 4)))
      (br $each))))

;; gpt.layernorm_backward: dx = rstd * (dnorm - mean(dnorm) - norm * mean(dnorm * norm)),
  ;; dnorm = dout * w, per row; w's gradient (at $gw) the column sums of dout * norm, b's (at
  ;; $gb) of dout, each in row order. Four entries at a time, the rest one by one.
  (func $lnback (param $dout i32) (param $norm i32) (param $rstd i32) (param $w i32) (param $rows i32) (param $c i32)
        (param $dx i32) (param $gw i32) (param $gb i32)
    (local $r i32) (local $p i32) (local $m1 f32) (local $m2 f32) (local $dn f32) (local $cf f32)
    (local $o i32) (local $nr i32) (local $xr i32) (local $c4 i32) (local $cb i32)
    (local $vo v128) (local $vn v128) (local $vd v128) (local $v1 v128) (local $v2 v128) (local $vr v128)
    (local.set $cf (f32.convert_i32_s (local.get $c)))
    (local.set $cb (i32.shl (local.get $c) (i32.const 2)))  ;; bytes per row
    (local.set $c4 (i32.shl (i32.and (local.get $c) (i32.const -4)) (i32.const 2)))  ;; bytes in whole vectors
    (memory.fill (local.get $gw) (i32.const 0) (local.get $cb))
    (memory.fill (local.get $gb) (i32.const 0) (local.get $cb))
    (local.set $r (i32.const 0))
    (block $done (loop $row
      (br_if $done (i32.ge_s (local.get $r) (local.get $rows)))
      (local.set $o (i32.add (local.get $dout) (i32.mul (local.get $r) (local.get $cb))))
      (local.set $nr (i32.add (local.get $norm) (i32.mul (local.get $r) (local.get $cb))))
      (local.set $xr (i32.add (local.get $dx) (i32.mul (local.get $r) (local.get $cb))))
      (local.set $v1 (v128.const f32x4 0 0 0 0)) (local.set $v2 (v128.const f32x4 0 0 0 0))
      (local.set $p (i32.const 0))
      (block $vsums_done (loop $vsums
        (br_if $vsums_done (i32.ge_s (local.get $p) (local.get $c4)))
        (local.set $vo (v128.load (i32.add (local.get $o) (local.get $p))))
        (local.set $vn (v128.load (i32.add (local.get $nr) (local.get $p))))
        (local.set $vd (f32x4.mul (local.get $vo) (v128.load (i32.add (local.get $w) (local.get $p)))))
        (local.set $v1 (f32x4.add (local.get $v1) (local.get $vd)))
        (local.set $v2 (f32x4.add (local.get $v2) (f32x4.mul (local.get $vd) (local.get $vn))))
        (v128.store (i32.add (local.get $gw) (local.get $p))
                    (f32x4.add (v128.load (i32.add (local.get $gw) (local.get $p))) (f32x4.mul (local.get $vo) (local.get $vn))))
        (v128.store (i32.add (local.get $gb) (local.get $p))
                    (f32x4.add (v128.load (i32.add (local.get $gb) (local.get $p))) (local.get $vo)))
        (local.set $p (i32.add (local.get $p) (i32.const 16)))
        (br $vsums)))
      (local.set $m1 (f32.add (f32.add (f32x4.extract_lane 0 (local.get $v1)) (f32x4.extract_lane 1 (local.get $v1)))
                              (f32.add (f32x4.extract_lane 2 (local.get $v1)) (f32x4.extract_lane 3 (local.get $v1)))))
      (local.set $m2 (f32.add (f32.add (f32x4.extract_lane 0 (local.get $v2)) (f32x4.extract_lane 1 (local.get $v2)))
                              (f32.add (f32x4.extract_lane 2 (local.get $v2)) (f32x4.extract_lane 3 (local.get $v2)))))
      (block $sums_done (loop $sums
        (br_if $sums_done (i32.ge_s (local.get $p) (local.get $cb)))
        (local.set $dn (f32.mul (f32.load (i32.add (local.get $o) (local.get $p))) (f32.load (i32.add (local.get $w) (local.get $p)))))
        (local.set $m1 (f32.add (local.get $m1) (local.get $dn)))
        (local.set $m2 (f32.add (local.get $m2) (f32.mul (local.get $dn) (f32.load (i32.add (local.get $nr) (local.get $p))))))
        (f32.store (i32.add (local.get $gw) (local.get $p))
                   (f32.add (f32.load (i32.add (local.get $gw) (local.get $p)))
                            (f32.mul (f32.load (i32.add (local.get $o) (local.get $p))) (f32.load (i32.add (local.get $nr) (local.get $p))))))
        (f32.store (i32.add (local.get $gb) (local.get $p))
                   (f32.add (f32.load (i32.add (local.get $gb) (local.get $p))) (f32.load (i32.add (local.get $o) (local.get $p)))))
        (local.set $p (i32.add (local.get $p) (i32.const 4)))
        (br $sums)))
      (local.set $m1 (f32.div (local.get $m1) (local.get $cf)))
      (local.set $m2 (f32.div (local.get $m2) (local.get $cf)))
      (local.set $vr (v128.load32_splat (i32.add (local.get $rstd) (i32.shl (local.get $r) (i32.const 2)))))
      (local.set $v1 (f32x4.splat (local.get $m1))) (local.set $v2 (f32x4.splat (local.get $m2)))
      (local.set $p (i32.const 0))
      (block $vdx_done (loop $vdx
        (br_if $vdx_done (i32.ge_s (local.get $p) (local.get $c4)))
        (v128.store (i32.add (local.get $xr) (local.get $p))
          (f32x4.mul (local.get $vr)
                     (f32x4.sub (f32x4.sub (f32x4.mul (v128.load (i32.add (local.get $o) (local.get $p))) (v128.load (i32.add (local.get $w) (local.get $p))))
                                           (local.get $v1))
                                (f32x4.mul (v128.load (i32.add (local.get $nr) (local.get $p))) (local.get $v2)))))
        (local.set $p (i32.add (local.get $p) (i32.const 16)))
        (br $vdx)))
      (block $dx_done (loop $dxl
        (br_if $dx_done (i32.ge_s (local.get $p) (local.get $cb)))
        (local.set $dn (f32.mul (f32.load (i32.add (local.get $o) (local.get $p))) (f32.load (i32.add (local.get $w) (local.get $p)))))
        (f32.store (i32.add (local.get $xr) (local.get $p))
          (f32.mul (f32.load (i32.add (local.get $rstd) (i32.shl (local.get $r) (i32.const 2))))
                   (f32.sub (f32.sub (local.get $dn) (local.get $m1))
                            (f32.mul (f32.load (i32.add (local.get $nr) (local.get $p))) (local.get $m2)))))
        (local.set $p (i32.add (local.get $p) (i32.const 4)))
        (br $dxl)))
      (local.set $r (i32.add (local.get $r) (i32.const 1)))
      (br $row))))

  ;; gpt.attention_backward for each sequence and head (t queries over t keys): from the
  ;; gradient of attention's output dy [rows, c] (doh: the head's columns, read in place), the
  ;; forward's qkv [rows, 3c] (the head's q and k columns, read in place; v copied transposed
  ;; to vt [hs, t]) and att [sequences, heads, t, t]: datt = doh @ v^T, dv = att^T @ doh,
  ;; dscores = att * (datt - rowsum(datt * att)) / root, dq = dscores @ k, dk = dscores^T @ q,
  ;; written into the head's columns of dqkv [rows, 3c] (q, k, v thirds).
  (func $attnback (param $dy i32) (param $dqkv i32) (param $qkv i32) (param $att i32)
        (param $rows i32) (param $t i32) (param $c i32) (param $heads i32) (param $root f32)
        (param $vt i32) (param $datt i32) (param $dqh i32) (param $dkh i32) (param $dvh i32)
    (local $s i32) (local $hd i32) (local $hs i32) (local $i i32) (local $d i32) (local $j i32) (local $item i32)
    (local $src i32) (local $ah i32) (local $row i32) (local $arow i32) (local $sum f32)
    (local $doh i32) (local $q i32) (local $k i32) (local $c4 i32) (local $row3 i32)
    (local $t4 i32) (local $hs4 i32) (local $out i32) (local $lim i32) (local $lv i32) (local $vs v128) (local $vsum v128)
    (local $vroot v128)
    (local.set $hs (i32.div_u (local.get $c) (local.get $heads)))
    (local.set $t4 (i32.shl (local.get $t) (i32.const 2)))
    (local.set $hs4 (i32.shl (local.get $hs) (i32.const 2)))
    (local.set $c4 (i32.shl (local.get $c) (i32.const 2)))  ;; bytes per row of dy
    (local.set $row3 (i32.mul (local.get $c) (i32.const 12)))  ;; bytes per row of qkv
    (local.set $vroot (f32x4.splat (local.get $root)))
    (local.set $s (i32.const 0))
    (block $seqs_done (loop $seqs
      (br_if $seqs_done (i32.ge_s (local.get $s) (local.get $rows)))
      (local.set $hd (i32.const 0))
      (block $heads_done (loop $head
        (br_if $heads_done (i32.ge_s (local.get $hd) (local.get $heads)))
        (local.set $item (i32.add (i32.mul (i32.div_u (local.get $s) (local.get $t)) (local.get $heads)) (local.get $hd)))
        (local.set $ah (i32.add (local.get $att) (i32.mul (local.get $item) (i32.mul (local.get $t) (local.get $t4)))))
        ;; the head's columns, read where they lie: of dy (rows c floats apart), of q and k in qkv
        (local.set $doh (i32.add (local.get $dy) (i32.shl (i32.add (i32.mul (local.get $s) (local.get $c))
                                                                   (i32.mul (local.get $hd) (local.get $hs))) (i32.const 2))))
        (local.set $q (i32.add (local.get $qkv) (i32.shl (i32.add (i32.mul (local.get $s) (i32.mul (local.get $c) (i32.const 3)))
                                                                  (i32.mul (local.get $hd) (local.get $hs))) (i32.const 2))))
        (local.set $k (i32.add (local.get $q) (local.get $c4)))
        (local.set $i (i32.const 0))
        (block $in_done (loop $in  ;; vt[d, i] = v[i, d]
          (br_if $in_done (i32.ge_s (local.get $i) (local.get $t)))
          (local.set $src (i32.add (i32.add (local.get $q) (i32.mul (local.get $i) (local.get $row3)))
                                   (i32.shl (local.get $c) (i32.const 3))))  ;; the row's v
          (local.set $d (i32.const 0))
          (block $d_done (loop $dl
            (br_if $d_done (i32.ge_s (local.get $d) (local.get $hs)))
            (f32.store (i32.add (local.get $vt) (i32.shl (i32.add (i32.mul (local.get $d) (local.get $t)) (local.get $i)) (i32.const 2)))
                       (f32.load (i32.add (local.get $src) (i32.shl (local.get $d) (i32.const 2)))))
            (local.set $d (i32.add (local.get $d) (i32.const 1)))
            (br $dl)))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $in)))
        (call $triangular (local.get $doh) (local.get $vt) (local.get $datt) (local.get $t) (local.get $hs) (local.get $t)
                          (local.get $c4) (i32.const 4) (local.get $t4) (i32.const 4) (i32.const 0) (i32.const 0))  ;; datt [t, t], where att is not 0
        (call $triangular (local.get $ah) (local.get $doh) (local.get $dvh) (local.get $t) (local.get $t) (local.get $hs)
                          (i32.const 4) (local.get $t4) (local.get $c4) (i32.const 0) (i32.const 0) (i32.const 1))  ;; dv = att^T @ doh
        (local.set $i (i32.const 0))
        (block $rows_done (loop $rowsl  ;; datt -> dscores, where dq and dk read it
          (br_if $rows_done (i32.ge_s (local.get $i) (local.get $t)))
          (local.set $row (i32.add (local.get $datt) (i32.mul (local.get $i) (local.get $t4))))
          (local.set $arow (i32.add (local.get $ah) (i32.mul (local.get $i) (local.get $t4))))
          ;; query i sees keys up to i: its row to the end of that vector (att is 0 past i), in bytes
          (local.set $lim (i32.shl (i32.and (i32.add (local.get $i) (i32.const 4)) (i32.const -4)) (i32.const 2)))
          (if (i32.gt_s (local.get $lim) (local.get $t4)) (then (local.set $lim (local.get $t4))))
          (local.set $lv (i32.and (local.get $lim) (i32.const -16)))  ;; of it, in whole vectors
          (local.set $vs (v128.const f32x4 0 0 0 0))
          (local.set $j (i32.const 0))
          (block $vdot_done (loop $vdot  ;; rowsum(datt * att), four lanes, then the rest
            (br_if $vdot_done (i32.ge_s (local.get $j) (local.get $lv)))
            (local.set $vs (f32x4.add (local.get $vs) (f32x4.mul (v128.load (i32.add (local.get $row) (local.get $j)))
                                                                 (v128.load (i32.add (local.get $arow) (local.get $j))))))
            (local.set $j (i32.add (local.get $j) (i32.const 16)))
            (br $vdot)))
          (local.set $sum (f32.add (f32.add (f32x4.extract_lane 0 (local.get $vs)) (f32x4.extract_lane 1 (local.get $vs)))
                                   (f32.add (f32x4.extract_lane 2 (local.get $vs)) (f32x4.extract_lane 3 (local.get $vs)))))
          (block $dot_done (loop $dot
            (br_if $dot_done (i32.ge_s (local.get $j) (local.get $lim)))
            (local.set $sum (f32.add (local.get $sum) (f32.mul (f32.load (i32.add (local.get $row) (local.get $j)))
                                                               (f32.load (i32.add (local.get $arow) (local.get $j))))))
            (local.set $j (i32.add (local.get $j) (i32.const 4)))
            (br $dot)))
          (local.set $vsum (f32x4.splat (local.get $sum)))
          (local.set $j (i32.const 0))
          (block $vds_done (loop $vds  ;; dscores = att * (datt - rowsum) / root, four at a time
            (br_if $vds_done (i32.ge_s (local.get $j) (local.get $lv)))
            (v128.store (i32.add (local.get $row) (local.get $j))
              (f32x4.div (f32x4.mul (v128.load (i32.add (local.get $arow) (local.get $j)))
                                    (f32x4.sub (v128.load (i32.add (local.get $row) (local.get $j))) (local.get $vsum)))
                         (local.get $vroot)))
            (local.set $j (i32.add (local.get $j) (i32.const 16)))
            (br $vds)))
          (block $ds_done (loop $ds
            (br_if $ds_done (i32.ge_s (local.get $j) (local.get $lim)))
            (f32.store (i32.add (local.get $row) (local.get $j))
              (f32.div (f32.mul (f32.load (i32.add (local.get $arow) (local.get $j)))
                                (f32.sub (f32.load (i32.add (local.get $row) (local.get $j))) (local.get $sum)))
                       (local.get $root)))
            (local.set $j (i32.add (local.get $j) (i32.const 4)))
            (br $ds)))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $rowsl)))
        (call $triangular (local.get $datt) (local.get $k) (local.get $dqh) (local.get $t) (local.get $t) (local.get $hs)
                          (local.get $t4) (i32.const 4) (local.get $row3) (i32.const 0) (i32.const 4) (i32.const 0))  ;; dq = dscores @ k
        (call $triangular (local.get $datt) (local.get $q) (local.get $dkh) (local.get $t) (local.get $t) (local.get $hs)
                          (i32.const 4) (local.get $t4) (local.get $row3) (i32.const 0) (i32.const 0) (i32.const 1))  ;; dk = dscores^T @ q
        (local.set $i (i32.const 0))
        (block $out_done (loop $outl  ;; the head's columns of dqkv, row by row
          (br_if $out_done (i32.ge_s (local.get $i) (local.get $t)))
          (local.set $out (i32.add (local.get $dqkv) (i32.shl (i32.add (i32.mul (i32.add (local.get $s) (local.get $i)) (i32.mul (local.get $c) (i32.const 3)))
                                                                     (i32.mul (local.get $hd) (local.get $hs))) (i32.const 2))))
          (call $copy (local.get $out) (i32.add (local.get $dqh) (i32.mul (local.get $i) (local.get $hs4))) (local.get $hs4))
          (call $copy (i32.add (local.get $out) (i32.shl (local.get $c) (i32.const 2)))
                       (i32.add (local.get $dkh) (i32.mul (local.get $i) (local.get $hs4))) (local.get $hs4))
          (call $copy (i32.add (local.get $out) (i32.shl (local.get $c) (i32.const 3)))
                       (i32.add (local.get $dvh) (i32.mul (local.get $i) (local.get $hs4))) (local.get $hs4))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $outl)))
        (local.set $hd (i32.add (local.get $hd) (i32.const 1)))
        (br $head)))
      (local.set $s (i32.add (local.get $s) (local.get $t)))
      (br $seqs))))
)
