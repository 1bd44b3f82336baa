;; q·v for `rows` float32 vectors of `n` components, laid out one after another at `v`, against a
;; query held as float64 at `q`; each result a float64 at `out`. Compiled by
;; `node dist/scripts/build-dot-kernel.js` into dot-kernel-bytes.ts (the build needs wabt; the
;; service only the bytes).
;;
;; The order of the additions is the one `dot` in kernels.ts follows, so that both give the same
;; bits: four running sums, one per component index mod 4, each adding its products in order
;; (products of two float32 values, exact in float64); then (s0 + s2) + (s1 + s3); then the
;; components past the last multiple of 4, in order. Lanes: a0 holds s0 and s1, a1 holds s2 and s3.
(module
  (memory (export "memory") 1)
  (func (export "dots") (param $q i32) (param $v i32) (param $rows i32) (param $n i32) (param $out i32)
    (local $r i32) (local $i i32) (local $n4 i32) (local $qq i32)
    (local $x v128) (local $a0 v128) (local $a1 v128) (local $tail f64)
    (local.set $n4 (i32.and (local.get $n) (i32.const -4)))
    (block $done
      (loop $row
        (br_if $done (i32.ge_u (local.get $r) (local.get $rows)))
        (local.set $a0 (v128.const f64x2 0 0))
        (local.set $a1 (v128.const f64x2 0 0))
        (local.set $tail (f64.const 0))
        (local.set $qq (local.get $q))
        (local.set $i (i32.const 0))
        (block $simd_done
          (loop $simd
            (br_if $simd_done (i32.ge_u (local.get $i) (local.get $n4)))
            (local.set $x (v128.load (local.get $v)))
            (local.set $a0 (f64x2.add (local.get $a0)
              (f64x2.mul (f64x2.promote_low_f32x4 (local.get $x)) (v128.load (local.get $qq)))))
            (local.set $a1 (f64x2.add (local.get $a1)
              (f64x2.mul
                (f64x2.promote_low_f32x4 (i8x16.shuffle 8 9 10 11 12 13 14 15 0 1 2 3 4 5 6 7 (local.get $x) (local.get $x)))
                (v128.load offset=16 (local.get $qq)))))
            (local.set $v (i32.add (local.get $v) (i32.const 16)))
            (local.set $qq (i32.add (local.get $qq) (i32.const 32)))
            (local.set $i (i32.add (local.get $i) (i32.const 4)))
            (br $simd)))
        (block $tail_done
          (loop $scalar
            (br_if $tail_done (i32.ge_u (local.get $i) (local.get $n)))
            (local.set $tail (f64.add (local.get $tail)
              (f64.mul (f64.promote_f32 (f32.load (local.get $v))) (f64.load (local.get $qq)))))
            (local.set $v (i32.add (local.get $v) (i32.const 4)))
            (local.set $qq (i32.add (local.get $qq) (i32.const 8)))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br $scalar)))
        (local.set $x (f64x2.add (local.get $a0) (local.get $a1)))
        (f64.store (local.get $out)
          (f64.add
            (f64.add (f64x2.extract_lane 0 (local.get $x)) (f64x2.extract_lane 1 (local.get $x)))
            (local.get $tail)))
        (local.set $out (i32.add (local.get $out) (i32.const 8)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $row))))
)
