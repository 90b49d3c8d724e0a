(module
  ;; float32 matrix products for numpy in Pyodide (see sgemm.py), in WebAssembly SIMD.
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
    (local $i i32) (local $j i32) (local $p i32) (local $ns i32)
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
      (local.set $j (i32.and (i32.add (local.get $n) (i32.const 7)) (i32.const -8)))
      (block $cols_done (loop $cols
        (br_if $cols_done (i32.le_s (local.get $j) (i32.const 0)))
        (local.set $j (i32.sub (local.get $j) (i32.const 8)))
        (local.set $c00 (v128.const i32x4 0 0 0 0)) (local.set $c01 (v128.const i32x4 0 0 0 0))
        (local.set $c10 (v128.const i32x4 0 0 0 0)) (local.set $c11 (v128.const i32x4 0 0 0 0))
        (local.set $c20 (v128.const i32x4 0 0 0 0)) (local.set $c21 (v128.const i32x4 0 0 0 0))
        (local.set $c30 (v128.const i32x4 0 0 0 0)) (local.set $c31 (v128.const i32x4 0 0 0 0))
        (local.set $pa (i32.add (local.get $a) (i32.mul (local.get $i) (local.get $sa_i))))
        (local.set $pb (i32.add (local.get $b) (i32.shl (local.get $j) (i32.const 2))))
        (local.set $p (local.get $k))
        (block $sum_done (loop $sum
          (br_if $sum_done (i32.le_s (local.get $p) (i32.const 0)))
          (local.set $b0 (v128.load (local.get $pb)))
          (local.set $b1 (v128.load offset=16 (local.get $pb)))
          (local.set $x (f32x4.splat (f32.load (local.get $pa))))
          (local.set $c00 (f32x4.add (local.get $c00) (f32x4.mul (local.get $x) (local.get $b0))))
          (local.set $c01 (f32x4.add (local.get $c01) (f32x4.mul (local.get $x) (local.get $b1))))
          (local.set $x (f32x4.splat (f32.load (i32.add (local.get $pa) (local.get $sa_i)))))
          (local.set $c10 (f32x4.add (local.get $c10) (f32x4.mul (local.get $x) (local.get $b0))))
          (local.set $c11 (f32x4.add (local.get $c11) (f32x4.mul (local.get $x) (local.get $b1))))
          (local.set $x (f32x4.splat (f32.load (i32.add (local.get $pa) (i32.shl (local.get $sa_i) (i32.const 1))))))
          (local.set $c20 (f32x4.add (local.get $c20) (f32x4.mul (local.get $x) (local.get $b0))))
          (local.set $c21 (f32x4.add (local.get $c21) (f32x4.mul (local.get $x) (local.get $b1))))
          (local.set $x (f32x4.splat (f32.load (i32.add (local.get $pa) (i32.mul (local.get $sa_i) (i32.const 3))))))
          (local.set $c30 (f32x4.add (local.get $c30) (f32x4.mul (local.get $x) (local.get $b0))))
          (local.set $c31 (f32x4.add (local.get $c31) (f32x4.mul (local.get $x) (local.get $b1))))
          (local.set $pa (i32.add (local.get $pa) (local.get $sa_p)))
          (local.set $pb (i32.add (local.get $pb) (local.get $ns)))
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
      (br $rows)))))
