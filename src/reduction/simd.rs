//! The instruction-set levels the reduced-force kernels are compiled for, and the one
//! run-time detection both evaluators use.
//!
//! The cubic polynomial's evaluator ([`super::evaluator`]) and the cubature
//! ([`super::cubature`]) compile their hot loops three times: for the baseline x86-64
//! target, with AVX2 and FMA, and with AVX-512 (F and VL) on top. Nothing is built with
//! `target-cpu=native`: the level is chosen at run time, here, and a caller may lower it
//! (tests compare the levels on one machine; the cubature keeps AVX-512 for large r
//! only).

/// Instruction-set level of a kernel compilation. The levels are ordered: a CPU that
/// runs one runs every level below it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SimdLevel {
    /// The baseline x86-64 target (SSE2), or any other architecture: plain Rust whose
    /// loops the compiler vectorizes.
    Portable,
    /// AVX2 and FMA intrinsics (four f64 or eight f32 lanes).
    Avx2,
    /// AVX-512F and AVX-512VL on top of AVX2 and FMA (eight f64 or sixteen f32 lanes).
    Avx512,
}

impl SimdLevel {
    /// The highest level this CPU runs.
    pub fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if has!("avx2") && has!("fma") {
                return if has!("avx512f") && has!("avx512vl") {
                    SimdLevel::Avx512
                } else {
                    SimdLevel::Avx2
                };
            }
        }
        SimdLevel::Portable
    }

    /// `self`, or the highest level below it that this CPU runs.
    pub fn or_below(self) -> Self {
        self.min(Self::detect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_are_ordered_and_capped_by_the_cpu() {
        assert!(SimdLevel::Portable < SimdLevel::Avx2);
        assert!(SimdLevel::Avx2 < SimdLevel::Avx512);
        let cpu = SimdLevel::detect();
        assert_eq!(SimdLevel::Avx512.or_below(), cpu);
        assert_eq!(SimdLevel::Portable.or_below(), SimdLevel::Portable);
        #[cfg(not(target_arch = "x86_64"))]
        assert_eq!(cpu, SimdLevel::Portable);
        #[cfg(target_arch = "x86_64")]
        if cpu >= SimdLevel::Avx2 {
            assert!(std::arch::is_x86_feature_detected!("avx2"));
            assert!(std::arch::is_x86_feature_detected!("fma"));
        }
    }
}
