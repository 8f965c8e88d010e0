//! Run-time evaluation of the reduced internal force R~(q) and its stiffness
//! K~(q) = dR~/dq, from the fully symmetric energy tensors of the cubic polynomial.
//!
//! R~ is the gradient of the reduced energy W(q) = W2 + W3 + W4 (quadratic, cubic and
//! quartic forms). Writing the cubic and quartic forms with fully symmetric tensors,
//! W3 = sum C_lij q_l q_i q_j and W4 = 1/2 sum A_lijk q_l q_i q_j q_k (sums over all index
//! orders), and using that each term is homogeneous (Euler's theorem):
//! - K2_mn = 6 sum_k C_mnk q_k,           R2 = K2 q / 2,
//! - K3_mn = 6 sum_{jk} A_mnjk q_j q_k,    R3 = K3 q / 3,
//! - K~ = P + K2 + K3,                     R~ = P q + R2 + R3.
//!
//! With packed symmetric index pairs (m <= n), K3 is one symmetric matrix-vector product
//! of the r(r+1)/2 x r(r+1)/2 matrix A[(mn),(jk)] with the packed vector of q_j q_k, and
//! K2 one product of the r(r+1)/2 x r matrix C[(mn),k] with q. Every coefficient is read
//! once per step for both R~ and K~, in storage order (docs/performance.md, "Side by side
//! with Vega FEM": the step is memory-bound; Vega reads separate force and stiffness
//! polynomials). The quartic matrix stores its upper triangle only, in f64 for r <= 40
//! and in f32 (accumulated in f64) above, where it outgrows the caches; tests state the
//! f32 tolerance.
//!
//! The tensors are recovered from Vega's `.cub` layout (the coefficient of each monomial
//! of R~_l), so baked polynomials and Vega's files share one path. The kernels are
//! compiled for the baseline x86-64 target and with AVX2+FMA, chosen at run time by CPU
//! feature detection (no `target-cpu=native` builds).

use std::collections::HashMap;

use super::polynomial::{num_cubic, num_quadratic, CubicPolynomial};
use super::simd::SimdLevel;

/// Storage precision of the quartic coefficients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuarticPrecision {
    /// 8 bytes per coefficient (the default up to r = 40).
    F64,
    /// 4 bytes per coefficient, accumulated in f64: half the memory traffic for a relative
    /// rounding of about 6e-8 per coefficient (the default above r = 40).
    F32,
}

impl QuarticPrecision {
    /// f64 up to r = 40, f32 beyond.
    pub fn default_for(r: usize) -> Self {
        if r <= 40 {
            QuarticPrecision::F64
        } else {
            QuarticPrecision::F32
        }
    }
}

#[derive(Debug, Clone)]
enum Quartic {
    F64(Vec<f64>),
    F32(Vec<f32>),
}

/// The reduced force model in evaluation layout, for the first `r` modes of a polynomial.
#[derive(Debug, Clone)]
pub struct ReducedForces {
    r: usize,
    /// r x r column-major linear stiffness P.
    linear: Vec<f64>,
    /// np x r, column k contiguous: 6 C_mnk (so K2 is a sum of r axpys of length np).
    cubic_energy: Vec<f64>,
    /// Upper triangle of the np x np matrix 6 A[(mn),(jk)], row-packed.
    quartic: Quartic,
    /// Multiplicity of each packed pair in the q q^T packing (1 on the diagonal, else 2).
    pair_mult: Vec<f64>,
    pair_ij: Vec<(u16, u16)>,
    /// The kernels' compilation ([`SimdLevel`]): AVX2 and FMA row by row, or the quartic
    /// product in AVX-512 blocks of eight rows.
    simd: SimdLevel,
}

/// Largest supported basis size.
pub const MAX_R: usize = 255;

fn sorted<const N: usize>(mut a: [usize; N]) -> [usize; N] {
    a.sort_unstable();
    a
}

/// Number of distinct orderings of a multiset of indices.
fn permutations(s: &[usize]) -> f64 {
    let fact = |n: usize| (1..=n).product::<usize>() as f64;
    let mut counts = HashMap::new();
    for &x in s {
        *counts.entry(x).or_insert(0usize) += 1;
    }
    fact(s.len()) / counts.values().map(|&c| fact(c)).product::<f64>()
}

/// Sum and count of the estimates of each energy coefficient, keyed by its sorted indices.
type EnergySums<const N: usize> = HashMap<[usize; N], (f64, usize)>;

/// The symmetrized r x r linear stiffness P from the first `r` modes of `poly`.
fn symmetric_linear(poly: &CubicPolynomial, r: usize) -> Vec<f64> {
    let pr = poly.r;
    let mut linear = vec![0.0; r * r];
    for i in 0..r {
        for l in 0..r {
            // Symmetrize: P is symmetric up to rounding.
            linear[i * r + l] = 0.5 * (poly.linear[l * pr + i] + poly.linear[i * pr + l]);
        }
    }
    linear
}

/// Cubic energy coefficients v_abc (a <= b <= c) from Q_l,(ij) = mult_l * v, as sums of
/// the estimates and their counts.
fn cubic_energy_sums(poly: &CubicPolynomial, r: usize) -> EnergySums<3> {
    let pr = poly.r;
    let pq = num_quadratic(pr);
    let q_index = |i: usize, j: usize| i * pr - i * (i + 1) / 2 + j;
    let mut v3: EnergySums<3> = HashMap::new();
    for l in 0..r {
        for i in 0..r {
            for j in i..r {
                let s = sorted([l, i, j]);
                let mult = s.iter().filter(|&&x| x == l).count() as f64;
                let e = v3.entry(s).or_insert((0.0, 0));
                e.0 += poly.quadratic[l * pq + q_index(i, j)] / mult;
                e.1 += 1;
            }
        }
    }
    v3
}

/// Quartic energy coefficients w_abcd from S_l,(ijk) = mult_l * w, as sums of the
/// estimates and their counts.
fn quartic_energy_sums(poly: &CubicPolynomial, r: usize) -> EnergySums<4> {
    let pr = poly.r;
    let pc = num_cubic(pr);
    let mut c_offsets = vec![0usize; pr + 1];
    for i in 0..pr {
        c_offsets[i + 1] = c_offsets[i] + (pr - i) * (pr - i + 1) / 2;
    }
    let c_index = |i: usize, j: usize, k: usize| {
        let before_j: usize = (i..j).map(|b| pr - b).sum();
        c_offsets[i] + before_j + (k - j)
    };
    let mut v4: EnergySums<4> = HashMap::new();
    for l in 0..r {
        for i in 0..r {
            for j in i..r {
                for k in j..r {
                    let s = sorted([l, i, j, k]);
                    let mult = s.iter().filter(|&&x| x == l).count() as f64;
                    let e = v4.entry(s).or_insert((0.0, 0));
                    e.0 += poly.cubic[l * pc + c_index(i, j, k)] / mult;
                    e.1 += 1;
                }
            }
        }
    }
    v4
}

/// The np x r matrix 6 C_mnk, column k contiguous, over the packed pairs (m, n).
fn cubic_energy_matrix(
    v3: &EnergySums<3>,
    pairs: &[(usize, usize)],
    r: usize,
    np: usize,
) -> Vec<f64> {
    let c_sym = |a: usize, b: usize, c: usize| {
        let s = sorted([a, b, c]);
        let (sum, n) = v3[&s];
        sum / n as f64 / permutations(&s)
    };
    let mut cubic_energy = vec![0.0; np * r];
    for (p, &(m, n)) in pairs.iter().enumerate() {
        for k in 0..r {
            cubic_energy[k * np + p] = 6.0 * c_sym(m, n, k);
        }
    }
    cubic_energy
}

/// The upper triangle of the np x np matrix 6 A[(mn),(jk)], row-packed, in `precision`.
fn quartic_matrix(
    v4: &EnergySums<4>,
    pairs: &[(usize, usize)],
    np: usize,
    precision: QuarticPrecision,
) -> Quartic {
    // W4 = sum_sorted w_s q^s = 1/2 sum_ordered A q q q q, so A_s = 2 w_s / perms(s).
    let a_sym = |a: usize, b: usize, c: usize, d: usize| {
        let s = sorted([a, b, c, d]);
        let (sum, n) = v4[&s];
        2.0 * sum / n as f64 / permutations(&s)
    };
    let mut quartic64 = Vec::with_capacity(np * (np + 1) / 2);
    for (p, &(m, n)) in pairs.iter().enumerate() {
        for &(j, k) in &pairs[p..] {
            quartic64.push(6.0 * a_sym(m, n, j, k));
        }
    }
    match precision {
        QuarticPrecision::F64 => Quartic::F64(quartic64),
        QuarticPrecision::F32 => Quartic::F32(quartic64.iter().map(|&x| x as f32).collect()),
    }
}

impl ReducedForces {
    /// Uses the first `r` modes of `poly` with the default quartic precision.
    pub fn new(poly: &CubicPolynomial, r: usize) -> Result<Self, String> {
        Self::with_precision(poly, r, QuarticPrecision::default_for(r))
    }

    /// As [`Self::new`], storing the quartic coefficients in `precision`. Fails when `r`
    /// is 0, exceeds `poly.r` or exceeds [`MAX_R`].
    pub(crate) fn with_precision(
        poly: &CubicPolynomial,
        r: usize,
        precision: QuarticPrecision,
    ) -> Result<Self, String> {
        if r == 0 || r > poly.r || r > MAX_R {
            return Err(format!(
                "cannot use {r} modes of a {}-mode polynomial (at most {MAX_R} are supported)",
                poly.r
            ));
        }
        let np = num_quadratic(r);
        let linear = symmetric_linear(poly, r);
        let v3 = cubic_energy_sums(poly, r);
        let v4 = quartic_energy_sums(poly, r);
        let pairs: Vec<(usize, usize)> = (0..r).flat_map(|i| (i..r).map(move |j| (i, j))).collect();
        let cubic_energy = cubic_energy_matrix(&v3, &pairs, r, np);
        let quartic = quartic_matrix(&v4, &pairs, np, precision);
        Ok(ReducedForces {
            r,
            linear,
            cubic_energy,
            quartic,
            pair_mult: pairs
                .iter()
                .map(|&(i, j)| if i == j { 1.0 } else { 2.0 })
                .collect(),
            pair_ij: pairs.iter().map(|&(i, j)| (i as u16, j as u16)).collect(),
            simd: SimdLevel::detect(),
        })
    }

    /// Number of reduced coordinates r evaluated.
    pub fn r(&self) -> usize {
        self.r
    }

    /// Limits the kernels to `level` (never above what the CPU supports), so tests can
    /// check every code path against the others on one machine.
    #[cfg(test)]
    pub(crate) fn limit_simd(&mut self, level: SimdLevel) {
        self.simd = level.or_below();
    }

    /// R~(q) into `force` (length r) and K~(q) into `stiffness` (r x r column-major),
    /// using `scratch` (from [`Self::scratch`]). Allocates nothing.
    pub fn evaluate(
        &self,
        q: &[f64],
        force: &mut [f64],
        stiffness: &mut [f64],
        scratch: &mut EvalScratch,
    ) {
        #[cfg(target_arch = "x86_64")]
        if self.simd >= SimdLevel::Avx2 {
            // SAFETY: AVX2 and FMA were detected on this CPU at construction.
            unsafe { self.evaluate_avx2(q, force, stiffness, scratch) };
            return;
        }
        self.evaluate_generic(q, force, stiffness, scratch);
    }

    /// Buffers for [`Self::evaluate`].
    pub fn scratch(&self) -> EvalScratch {
        let np = num_quadratic(self.r);
        EvalScratch {
            w: vec![0.0; np],
            z: vec![0.0; np],
            k2: vec![0.0; np],
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn evaluate_avx2(
        &self,
        q: &[f64],
        force: &mut [f64],
        stiffness: &mut [f64],
        s: &mut EvalScratch,
    ) {
        self.evaluate_with(q, force, stiffness, s, true);
    }

    fn evaluate_generic(
        &self,
        q: &[f64],
        force: &mut [f64],
        stiffness: &mut [f64],
        s: &mut EvalScratch,
    ) {
        self.evaluate_with(q, force, stiffness, s, false);
    }

    #[inline(always)]
    fn evaluate_with(
        &self,
        q: &[f64],
        force: &mut [f64],
        stiffness: &mut [f64],
        s: &mut EvalScratch,
        simd: bool,
    ) {
        let r = self.r;
        let q = &q[..r];
        let np = self.pair_ij.len();
        // Packed q q^T with multiplicities.
        for (p, &(i, j)) in self.pair_ij.iter().enumerate() {
            s.w[p] = q[i as usize] * q[j as usize] * self.pair_mult[p];
        }
        // K2 (packed) = 6 C q.
        s.k2.iter_mut().for_each(|x| *x = 0.0);
        for (k, &qk) in q.iter().enumerate() {
            let col = &self.cubic_energy[k * np..(k + 1) * np];
            for (y, c) in s.k2.iter_mut().zip(col) {
                *y += qk * c;
            }
        }
        // K3 (packed) = 6 A w: symmetric product from the upper triangle.
        s.z.iter_mut().for_each(|x| *x = 0.0);
        #[cfg(target_arch = "x86_64")]
        if simd {
            // SAFETY: `simd` is true only when AVX2 and FMA were detected.
            unsafe {
                match &self.quartic {
                    Quartic::F64(a) if self.simd >= SimdLevel::Avx512 => {
                        simd_x86::sym_packed_gemv_f64_avx512(a, &s.w, &mut s.z)
                    }
                    Quartic::F64(a) => simd_x86::sym_packed_gemv_f64(a, &s.w, &mut s.z),
                    Quartic::F32(a) if self.simd >= SimdLevel::Avx512 => {
                        simd_x86::sym_packed_gemv_f32_avx512(a, &s.w, &mut s.z)
                    }
                    Quartic::F32(a) => simd_x86::sym_packed_gemv_f32(a, &s.w, &mut s.z),
                }
            }
        } else {
            match &self.quartic {
                Quartic::F64(a) => sym_packed_gemv(a, &s.w, &mut s.z),
                Quartic::F32(a) => sym_packed_gemv(a, &s.w, &mut s.z),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = simd;
            match &self.quartic {
                Quartic::F64(a) => sym_packed_gemv(a, &s.w, &mut s.z),
                Quartic::F32(a) => sym_packed_gemv(a, &s.w, &mut s.z),
            }
        }
        // Assemble K~ = P + K2 + K3 and R~ = P q + K2 q / 2 + K3 q / 3.
        let stiffness = &mut stiffness[..r * r];
        let force = &mut force[..r];
        force.iter_mut().for_each(|f| *f = 0.0);
        for (p, &(i, j)) in self.pair_ij.iter().enumerate() {
            let (i, j) = (i as usize, j as usize);
            let (k2, k3) = (s.k2[p], s.z[p]);
            let kij = self.linear[j * r + i] + k2 + k3;
            stiffness[j * r + i] = kij;
            stiffness[i * r + j] = kij;
            let c = self.linear[j * r + i] + 0.5 * k2 + k3 / 3.0;
            force[i] += c * q[j];
            if i != j {
                force[j] += c * q[i];
            }
        }
    }
}

/// Dot product with four independent partial sums (a sequential sum is latency-bound).
#[inline]
pub(crate) fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0f64; 4];
    let n4 = a.len() / 4 * 4;
    for (x, y) in a[..n4].chunks_exact(4).zip(b[..n4].chunks_exact(4)) {
        for l in 0..4 {
            acc[l] += x[l] * y[l];
        }
    }
    let mut s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for (x, y) in a[n4..].iter().zip(&b[n4..]) {
        s += x * y;
    }
    s
}

/// A reduced internal force model: R~(q) and its tangent stiffness K~(q) = dR~/dq, as
/// [`crate::dynamics::ReducedNewmark`] steps them. Implemented by the cubic polynomial
/// ([`ReducedForces`]) and by optimized cubature
/// ([`super::cubature::CubatureForces`]).
pub trait ReducedInternalForces {
    /// Preallocated buffers of one evaluation.
    type Scratch: Clone + std::fmt::Debug + Send;
    /// Number of reduced coordinates r.
    fn r(&self) -> usize;
    /// Buffers for [`Self::evaluate`].
    fn scratch(&self) -> Self::Scratch;
    /// R~(q) into `force` (length r) and K~(q) into `stiffness` (r x r column-major).
    /// Must not allocate.
    fn evaluate(
        &self,
        q: &[f64],
        force: &mut [f64],
        stiffness: &mut [f64],
        scratch: &mut Self::Scratch,
    );
    /// R~(q) and the stiffness one step of an integrator uses: by default
    /// [`Self::evaluate`]; a model may return an approximate stiffness here (a Jacobian
    /// for a modified Newton step, such as cubature's lagged stiffness slices,
    /// [`super::cubature::CubatureForces::evaluate_step`]), never an approximate force.
    /// Must not allocate.
    fn evaluate_step(
        &self,
        q: &[f64],
        force: &mut [f64],
        stiffness: &mut [f64],
        scratch: &mut Self::Scratch,
    ) {
        self.evaluate(q, force, stiffness, scratch)
    }
    /// Forgets what earlier [`Self::evaluate_step`] calls left in `scratch` (such as
    /// lagged stiffness slices), so that the next step is as from a fresh scratch: the
    /// integrator calls it when it resets. Must not allocate.
    fn restart(&self, _scratch: &mut Self::Scratch) {}
    /// The reduced strain energy W(q) where the model has it in closed form; `None`
    /// (the default) lets the caller integrate R~ along the ray from rest.
    fn energy(&self, _q: &[f64]) -> Option<f64> {
        None
    }
    /// Sets the run-time activation in [0, 1] of an active material (the muscle's);
    /// passive models ignore it. Called by the integrator before each step; must not
    /// allocate.
    fn set_activation(&mut self, _alpha: f64) {}
}

impl ReducedInternalForces for ReducedForces {
    type Scratch = EvalScratch;
    fn r(&self) -> usize {
        ReducedForces::r(self)
    }
    fn scratch(&self) -> EvalScratch {
        ReducedForces::scratch(self)
    }
    fn evaluate(
        &self,
        q: &[f64],
        force: &mut [f64],
        stiffness: &mut [f64],
        scratch: &mut EvalScratch,
    ) {
        ReducedForces::evaluate(self, q, force, stiffness, scratch)
    }
}

/// Buffers of one evaluation.
#[derive(Debug, Clone)]
pub struct EvalScratch {
    w: Vec<f64>,
    z: Vec<f64>,
    k2: Vec<f64>,
}

/// Scalar types the quartic matrix may be stored in.
trait Coef: Copy {
    fn f(self) -> f64;
}
impl Coef for f64 {
    #[inline(always)]
    fn f(self) -> f64 {
        self
    }
}
impl Coef for f32 {
    #[inline(always)]
    fn f(self) -> f64 {
        self as f64
    }
}

/// z += A w for a symmetric matrix stored as its row-packed upper triangle. Row i
/// contributes its dot product with w to z_i and w_i times itself to z[i+1..]; eight
/// independent lanes let the compiler vectorize without reassociating sums.
#[inline(always)]
fn sym_packed_gemv<T: Coef>(a: &[T], w: &[f64], z: &mut [f64]) {
    const L: usize = 8;
    let n = w.len();
    let mut off = 0;
    for i in 0..n {
        let len = n - i;
        let row = &a[off..off + len];
        off += len;
        let wi = w[i];
        let mut acc = [0.0f64; L];
        let (tail_row, tail_w) = (&row[1..], &w[i + 1..]);
        let (zi, tail_z) = z[i..].split_at_mut(1);
        let chunks = tail_row.len() / L * L;
        for ((tr, tw), tz) in tail_row[..chunks]
            .chunks_exact(L)
            .zip(tail_w[..chunks].chunks_exact(L))
            .zip(tail_z[..chunks].chunks_exact_mut(L))
        {
            for l in 0..L {
                let t = tr[l].f();
                acc[l] += t * tw[l];
                tz[l] += t * wi;
            }
        }
        let mut sum = row[0].f() * wi;
        for x in acc {
            sum += x;
        }
        for ((t, wv), zv) in tail_row[chunks..]
            .iter()
            .zip(&tail_w[chunks..])
            .zip(&mut tail_z[chunks..])
        {
            let t = t.f();
            sum += t * wv;
            *zv += t * wi;
        }
        zi[0] += sum;
    }
}

/// AVX2+FMA kernels of the symmetric packed matrix-vector product (hand-written with
/// intrinsics: the compiler does not vectorize the fused row-dot and column-axpy).
#[cfg(target_arch = "x86_64")]
mod simd_x86 {
    use std::arch::x86_64::*;

    /// Row-blocked symmetric packed product with AVX-512F, eight rows at a time: for each
    /// chunk of eight columns right of the block, the eight row segments are loaded
    /// once, each row's dot product accumulates in its own register, and the chunk of z
    /// is read and written once for all eight rows. Blocks of eight rows keep the chunks
    /// aligned from one block to the next, so each z chunk is reloaded from the same
    /// address it was stored to (row-by-row processing shifts it by one element, which
    /// defeats store-to-load forwarding). `$load` reads eight coefficients as f64.
    macro_rules! blocked_avx512 {
        ($name:ident, $t:ty, $load:expr, $loadm:expr) => {
            /// # Safety
            /// The CPU must support AVX-512F and AVX-512VL; `a` must hold n(n+1)/2
            /// entries for n = w.len(), and `z.len() == w.len()`.
            #[target_feature(enable = "avx512f,avx512vl")]
            pub unsafe fn $name(a: &[$t], w: &[f64], z: &mut [f64]) {
                let n = w.len();
                assert!(a.len() >= n * (n + 1) / 2 && z.len() == n);
                let (ap, wp, zp) = (a.as_ptr(), w.as_ptr(), z.as_mut_ptr());
                let start = |r: usize| r * n - r * (r + 1) / 2 + r;
                let mut i = 0;
                while i + 8 <= n {
                    // The 8 x 8 diagonal block, scalar.
                    for ra in 0..8 {
                        let row = ap.add(start(i + ra));
                        for rb in ra..8 {
                            let t = *row.add(rb - ra) as f64;
                            *zp.add(i + ra) += t * *wp.add(i + rb);
                            if rb != ra {
                                *zp.add(i + rb) += t * *wp.add(i + ra);
                            }
                        }
                    }
                    let rows: [*const $t; 8] =
                        std::array::from_fn(|ra| ap.add(start(i + ra)).sub(i + ra));
                    let wib: [__m512d; 8] =
                        std::array::from_fn(|ra| _mm512_set1_pd(*wp.add(i + ra)));
                    let mut acc = [_mm512_setzero_pd(); 8];
                    let mut c = i + 8;
                    while c + 8 <= n {
                        let wv = _mm512_loadu_pd(wp.add(c));
                        let mut zv = _mm512_loadu_pd(zp.add(c));
                        for ra in 0..8 {
                            let t = $load(rows[ra].add(c));
                            acc[ra] = _mm512_fmadd_pd(t, wv, acc[ra]);
                            zv = _mm512_fmadd_pd(t, wib[ra], zv);
                        }
                        _mm512_storeu_pd(zp.add(c), zv);
                        c += 8;
                    }
                    if c < n {
                        let k: __mmask8 = ((1u16 << (n - c)) - 1) as u8;
                        let wv = _mm512_maskz_loadu_pd(k, wp.add(c));
                        let mut zv = _mm512_maskz_loadu_pd(k, zp.add(c));
                        for ra in 0..8 {
                            let t = $loadm(k, rows[ra].add(c));
                            acc[ra] = _mm512_fmadd_pd(t, wv, acc[ra]);
                            zv = _mm512_fmadd_pd(t, wib[ra], zv);
                        }
                        _mm512_mask_storeu_pd(zp.add(c), k, zv);
                    }
                    for ra in 0..8 {
                        *zp.add(i + ra) += _mm512_reduce_add_pd(acc[ra]);
                    }
                    i += 8;
                }
                // The last n mod 8 rows, scalar.
                for r in i..n {
                    let row = ap.add(start(r));
                    for cc in r..n {
                        let t = *row.add(cc - r) as f64;
                        *zp.add(r) += t * *wp.add(cc);
                        if cc != r {
                            *zp.add(cc) += t * *wp.add(r);
                        }
                    }
                }
            }
        };
    }

    blocked_avx512!(
        sym_packed_gemv_f64_avx512,
        f64,
        |p: *const f64| _mm512_loadu_pd(p),
        |k: __mmask8, p: *const f64| _mm512_maskz_loadu_pd(k, p)
    );
    blocked_avx512!(
        sym_packed_gemv_f32_avx512,
        f32,
        |p: *const f32| _mm512_cvtps_pd(_mm256_loadu_ps(p)),
        |k: __mmask8, p: *const f32| _mm512_cvtps_pd(_mm256_maskz_loadu_ps(k, p))
    );

    /// Row-by-row symmetric packed product with AVX2+FMA (the fallback below AVX-512):
    /// each row's dot product with w goes to z_i, and w_i times the row to z[i+1..].
    /// `$load` reads four coefficients as f64.
    macro_rules! rows_avx2 {
        ($name:ident, $t:ty, $load:expr) => {
            /// # Safety
            /// The CPU must support AVX2 and FMA; `a` must hold n(n+1)/2 entries for
            /// n = w.len(), and `z.len() == w.len()`.
            #[target_feature(enable = "avx2,fma")]
            pub unsafe fn $name(a: &[$t], w: &[f64], z: &mut [f64]) {
                let n = w.len();
                assert!(a.len() >= n * (n + 1) / 2 && z.len() == n);
                let (ap, wp, zp) = (a.as_ptr(), w.as_ptr(), z.as_mut_ptr());
                let mut off = 0usize;
                for i in 0..n {
                    let len = n - i;
                    let row = ap.add(off);
                    off += len;
                    let wi = *wp.add(i);
                    let wib = _mm256_set1_pd(wi);
                    let (mut acc0, mut acc1) = (_mm256_setzero_pd(), _mm256_setzero_pd());
                    let m = len - 1;
                    let (rt, wt, zt) = (row.add(1), wp.add(i + 1), zp.add(i + 1));
                    let mut c = 0;
                    while c + 8 <= m {
                        let t0 = $load(rt.add(c));
                        let t1 = $load(rt.add(c + 4));
                        acc0 = _mm256_fmadd_pd(t0, _mm256_loadu_pd(wt.add(c)), acc0);
                        acc1 = _mm256_fmadd_pd(t1, _mm256_loadu_pd(wt.add(c + 4)), acc1);
                        let z0 = _mm256_fmadd_pd(t0, wib, _mm256_loadu_pd(zt.add(c)));
                        _mm256_storeu_pd(zt.add(c), z0);
                        let z1 = _mm256_fmadd_pd(t1, wib, _mm256_loadu_pd(zt.add(c + 4)));
                        _mm256_storeu_pd(zt.add(c + 4), z1);
                        c += 8;
                    }
                    let mut lanes = [0.0f64; 4];
                    _mm256_storeu_pd(lanes.as_mut_ptr(), _mm256_add_pd(acc0, acc1));
                    let mut sum = (*row as f64) * wi + (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
                    while c < m {
                        let t = *rt.add(c) as f64;
                        sum = t.mul_add(*wt.add(c), sum);
                        *zt.add(c) = t.mul_add(wi, *zt.add(c));
                        c += 1;
                    }
                    *zp.add(i) += sum;
                }
            }
        };
    }

    rows_avx2!(sym_packed_gemv_f64, f64, |p: *const f64| _mm256_loadu_pd(p));
    rows_avx2!(sym_packed_gemv_f32, f32, |p: *const f32| _mm256_cvtps_pd(
        _mm_loadu_ps(p)
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use haptics_devices::rng::SplitMix64;

    /// A random polynomial that is the gradient of a quartic energy (as every StVK
    /// polynomial is): built from random symmetric tensors through Vega's packing.
    fn random_gradient_poly(r: usize) -> CubicPolynomial {
        let mut rng = SplitMix64::new(3);
        let mut rnd = || rng.next_f64() - 0.5;
        let mut w3: HashMap<[usize; 3], f64> = HashMap::new();
        let mut w4: HashMap<[usize; 4], f64> = HashMap::new();
        let mut lin = vec![0.0; r * r];
        for i in 0..r {
            for j in i..r {
                let v = rnd();
                lin[i * r + j] = v;
                lin[j * r + i] = v;
                for k in j..r {
                    w3.insert([i, j, k], rnd());
                    for l in k..r {
                        w4.insert([i, j, k, l], rnd());
                    }
                }
            }
        }
        let (nq, nc) = (num_quadratic(r), num_cubic(r));
        let mut quadratic = vec![0.0; r * nq];
        let mut cubic = vec![0.0; r * nc];
        for l in 0..r {
            let mut m = 0;
            for i in 0..r {
                for j in i..r {
                    let s3 = sorted([l, i, j]);
                    quadratic[l * nq + m] = w3[&s3] * s3.iter().filter(|&&x| x == l).count() as f64;
                    m += 1;
                }
            }
            let mut m = 0;
            for i in 0..r {
                for j in i..r {
                    for k in j..r {
                        let s4 = sorted([l, i, j, k]);
                        cubic[l * nc + m] = w4[&s4] * s4.iter().filter(|&&x| x == l).count() as f64;
                        m += 1;
                    }
                }
            }
        }
        CubicPolynomial {
            r,
            linear: lin,
            quadratic,
            cubic,
        }
    }

    #[test]
    fn force_matches_direct_evaluation_and_stiffness_matches_finite_differences() {
        let r = 7;
        let poly = random_gradient_poly(r);
        for precision in [QuarticPrecision::F64, QuarticPrecision::F32] {
            let ev = ReducedForces::with_precision(&poly, r, precision).unwrap();
            let mut sc = ev.scratch();
            let q: Vec<f64> = (0..r).map(|i| 0.3 * (i as f64 + 1.0).sin()).collect();
            let (mut f, mut k) = (vec![0.0; r], vec![0.0; r * r]);
            ev.evaluate(&q, &mut f, &mut k, &mut sc);
            let direct = poly.evaluate_direct(&q);
            // f64: same sums in another order (rounding); f32: 6e-8 relative per
            // quartic coefficient.
            let tol = if precision == QuarticPrecision::F64 {
                1e-13
            } else {
                1e-6
            };
            for l in 0..r {
                assert!(
                    (f[l] - direct[l]).abs() < tol,
                    "{precision:?} {l}: {} vs {}",
                    f[l],
                    direct[l]
                );
            }
            let h = 1e-6;
            for m in 0..r {
                let mut qp = q.clone();
                let mut qm = q.clone();
                qp[m] += h;
                qm[m] -= h;
                let (fp, fm) = (poly.evaluate_direct(&qp), poly.evaluate_direct(&qm));
                for l in 0..r {
                    let fd = (fp[l] - fm[l]) / (2.0 * h);
                    assert!(
                        (fd - k[m * r + l]).abs() < tol.max(1e-8),
                        "K[{l},{m}] {} vs fd {fd}",
                        k[m * r + l]
                    );
                }
            }
        }
    }

    #[test]
    fn portable_and_simd_kernels_agree() {
        let r = 23; // not a multiple of the vector widths: exercises the tails
        let poly = random_gradient_poly(r);
        let q: Vec<f64> = (0..r).map(|i| 0.2 * (i as f64 * 0.7).cos()).collect();
        for precision in [QuarticPrecision::F64, QuarticPrecision::F32] {
            let mut ev = ReducedForces::with_precision(&poly, r, precision).unwrap();
            let mut sc = ev.scratch();
            let (mut f1, mut k1) = (vec![0.0; r], vec![0.0; r * r]);
            ev.limit_simd(SimdLevel::Portable);
            ev.evaluate(&q, &mut f1, &mut k1, &mut sc);
            for level in [SimdLevel::Avx2, SimdLevel::Avx512] {
                let (mut f2, mut k2) = (vec![0.0; r], vec![0.0; r * r]);
                ev.limit_simd(level);
                ev.evaluate(&q, &mut f2, &mut k2, &mut sc);
                // Same products, different summation order (and FMA rounding): 1e-13.
                for (a, b) in f1.iter().zip(&f2).chain(k1.iter().zip(&k2)) {
                    assert!(
                        (a - b).abs() < 1e-13 * (1.0 + a.abs()),
                        "{precision:?} {level:?}: {a} vs {b}"
                    );
                }
            }
        }
    }

    #[test]
    fn truncation_to_fewer_modes_equals_zero_padding() {
        let r = 6;
        let poly = random_gradient_poly(r);
        let small = ReducedForces::new(&poly, 4).unwrap();
        assert!(ReducedForces::new(&poly, 7).is_err());
        let q4 = [0.2, -0.1, 0.3, 0.05];
        let mut q6 = q4.to_vec();
        q6.extend([0.0, 0.0]);
        let direct = poly.evaluate_direct(&q6);
        let (mut f, mut k) = (vec![0.0; 4], vec![0.0; 16]);
        small.evaluate(&q4, &mut f, &mut k, &mut small.scratch());
        for l in 0..4 {
            assert!((f[l] - direct[l]).abs() < 1e-13);
        }
    }
}
