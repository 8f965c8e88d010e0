//! The evaluation kernels: one generic fixed chain of fused multiply-adds per sum
//! (`Real` over f32 and f64 storage), and the same chains in explicit AVX2 and AVX-512
//! registers (`rows`, `tiles`), so that every CPU gives the same bits.

use nalgebra::Matrix3;

use super::*;

/// Scalar types of the stored gradients and the stiffness product.
pub(super) trait Real:
    Copy + Default + std::ops::Mul<Output = Self> + std::ops::Add<Output = Self> + Into<f64>
{
    /// Lanes of one AVX2 register.
    const LANES: usize;
    fn mul_add(self, b: Self, c: Self) -> Self;
    fn from_f64(x: f64) -> Self;
    /// [`lower_tile_n`] in AVX2 registers (`LANES` lanes) or, `wide`, AVX-512 ones.
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA, and AVX-512F when `wide`.
    #[cfg(target_arch = "x86_64")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn simd_tile<const M: usize, const N: usize>(
        wide: bool,
        k: &mut [Self],
        ldk: usize,
        b: &LowerBlock<'_, Self>,
        i0: usize,
        j0: usize,
        accumulate: bool,
    );
    /// [`dot9`] in AVX2 registers (the same chains, so the same bits).
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA.
    #[cfg(target_arch = "x86_64")]
    unsafe fn simd_dot9(g: &[Self], q: &[f64], r: usize, stride: usize) -> [f64; 9];
    /// [`axpy9`] in AVX2 registers (the same chains, so the same bits).
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA.
    #[cfg(target_arch = "x86_64")]
    unsafe fn simd_axpy9(p: &[f64; 9], g: &[Self], force: &mut [f64], r: usize, stride: usize);
}
/// The impl of [`Real`] for one float type, its lanes per AVX2 register and its two
/// register tiles.
macro_rules! real {
    ($t:ty, $lanes:literal, $avx2:ident, $avx512:ident, $dot9:ident, $axpy9:ident) => {
        impl Real for $t {
            const LANES: usize = $lanes;
            #[cfg(target_arch = "x86_64")]
            #[inline(always)]
            unsafe fn simd_tile<const M: usize, const N: usize>(
                wide: bool,
                k: &mut [$t],
                ldk: usize,
                b: &LowerBlock<'_, $t>,
                i0: usize,
                j0: usize,
                accumulate: bool,
            ) {
                if wide {
                    tiles::$avx512::<M, N>(k, ldk, b, i0, j0, accumulate)
                } else {
                    tiles::$avx2::<M, N>(k, ldk, b, i0, j0, accumulate)
                }
            }
            #[cfg(target_arch = "x86_64")]
            #[inline(always)]
            unsafe fn simd_dot9(g: &[$t], q: &[f64], r: usize, stride: usize) -> [f64; 9] {
                rows::$dot9(g, q, r, stride)
            }
            #[cfg(target_arch = "x86_64")]
            #[inline(always)]
            unsafe fn simd_axpy9(
                p: &[f64; 9],
                g: &[$t],
                force: &mut [f64],
                r: usize,
                stride: usize,
            ) {
                rows::$axpy9(p, g, force, r, stride)
            }
            #[inline(always)]
            fn mul_add(self, b: $t, c: $t) -> $t {
                <$t>::mul_add(self, b, c)
            }
            #[inline(always)]
            #[allow(clippy::unnecessary_cast)]
            fn from_f64(x: f64) -> $t {
                x as $t
            }
        }
    };
}
real!(f64, 4, avx2_f64, avx512_f64, dot9_f64, axpy9_f64);
real!(f32, 8, avx2_f32, avx512_f32, dot9_f32, axpy9_f32);

/// [`dot9`] and [`axpy9`] in explicit AVX2 registers: four f64 lanes of every column
/// at a time, the f32 storage widened on load. The compiler's own vectorization of the
/// generic loops spilled the column pointers and shuffled pairs of lanes; these are
/// the same fused multiply-adds in the same order.
#[cfg(target_arch = "x86_64")]
mod rows {
    use std::arch::x86_64::*;

    macro_rules! rows {
        ($dot9:ident, $axpy9:ident, $t:ty, $load4:expr) => {
            /// # Safety
            /// The CPU has AVX2 and FMA.
            #[target_feature(enable = "avx2,fma")]
            pub(super) unsafe fn $dot9(g: &[$t], q: &[f64], r: usize, stride: usize) -> [f64; 9] {
                assert!(g.len() >= 9 * stride && stride >= r && q.len() >= r);
                let chunks = r / 4;
                let (gp, qp) = (g.as_ptr(), q.as_ptr());
                // Nine independent chains side by side (one register each), so that
                // the multiply-adds' latency overlaps.
                let mut acc = [_mm256_setzero_pd(); 9];
                for k in 0..chunks {
                    // SAFETY: 4 k + 3 < r <= stride, inside g and q (asserted).
                    unsafe {
                        let qk = _mm256_loadu_pd(qp.add(4 * k));
                        for (c, a) in acc.iter_mut().enumerate() {
                            let gk = $load4(gp.add(c * stride + 4 * k));
                            *a = _mm256_fmadd_pd(gk, qk, *a);
                        }
                    }
                }
                let mut out = [0.0; 9];
                for (c, v) in out.iter_mut().enumerate() {
                    let mut a = [0.0f64; 4];
                    // SAFETY: a holds four f64.
                    unsafe { _mm256_storeu_pd(a.as_mut_ptr(), acc[c]) };
                    *v = super::identity_entry(c) + ((a[0] + a[1]) + (a[2] + a[3]));
                    for j in 4 * chunks..r {
                        *v = (g[c * stride + j] as f64).mul_add(q[j], *v);
                    }
                }
                out
            }

            /// # Safety
            /// The CPU has AVX2 and FMA.
            #[target_feature(enable = "avx2,fma")]
            pub(super) unsafe fn $axpy9(
                p: &[f64; 9],
                g: &[$t],
                force: &mut [f64],
                r: usize,
                stride: usize,
            ) {
                assert!(g.len() >= 9 * stride && stride >= r && force.len() >= r);
                let chunks = r / 4;
                let (gp, fp) = (g.as_ptr(), force.as_mut_ptr());
                let pv: [__m256d; 9] = std::array::from_fn(|c| _mm256_set1_pd(p[c]));
                for k in 0..chunks {
                    // SAFETY: 4 k + 3 < r <= stride, inside g and force (asserted).
                    unsafe {
                        let mut acc = _mm256_loadu_pd(fp.add(4 * k));
                        for (c, pc) in pv.iter().enumerate() {
                            let gk = $load4(gp.add(c * stride + 4 * k));
                            acc = _mm256_fmadd_pd(*pc, gk, acc);
                        }
                        _mm256_storeu_pd(fp.add(4 * k), acc);
                    }
                }
                for j in 4 * chunks..r {
                    for (c, &pc) in p.iter().enumerate() {
                        force[j] = pc.mul_add(g[c * stride + j] as f64, force[j]);
                    }
                }
            }
        };
    }

    /// Four f32 widened to f64.
    ///
    /// # Safety
    /// Four f32 readable at `p`; the CPU has AVX.
    #[inline(always)]
    unsafe fn load4_f32(p: *const f32) -> __m256d {
        // SAFETY: as the caller promises.
        unsafe { _mm256_cvtps_pd(_mm_loadu_ps(p)) }
    }

    /// Four f64.
    ///
    /// # Safety
    /// Four f64 readable at `p`; the CPU has AVX.
    #[inline(always)]
    unsafe fn load4_f64(p: *const f64) -> __m256d {
        // SAFETY: as the caller promises.
        unsafe { _mm256_loadu_pd(p) }
    }

    rows!(dot9_f32, axpy9_f32, f32, load4_f32);
    rows!(dot9_f64, axpy9_f64, f64, load4_f64);
}

#[inline(always)]
pub(super) fn fmadd_t<T: Real>(a: T, b: T, c: T) -> T {
    a.mul_add(b, c)
}

/// h_a = sum_c t[a, c] g_c for the 9 r-vectors g_c of one point (r x 9 column-major
/// blocks), one register width of modes at a time so that the nine g chunks stay in
/// registers.
#[inline(always)]
pub(super) fn apply_tangent<T: Real>(t: &[[T; 9]; 9], g: &[T], h: &mut [T], r: usize) {
    // `r` is the column stride of g and h (padded for f32: every lane is computed, the
    // padding's zeros give zeros).
    if T::LANES == 8 {
        apply_tangent_lanes::<T, 8>(t, g, h, r)
    } else {
        apply_tangent_lanes::<T, 4>(t, g, h, r)
    }
}

#[inline(always)]
pub(super) fn apply_tangent_lanes<T: Real, const L: usize>(
    t: &[[T; 9]; 9],
    g: &[T],
    h: &mut [T],
    r: usize,
) {
    let g = &g[..9 * r];
    let h = &mut h[..9 * r];
    let mut j = 0;
    while j + L <= r {
        let mut gc = [[T::default(); L]; 9];
        for (c, chunk) in gc.iter_mut().enumerate() {
            chunk.copy_from_slice(&g[c * r + j..c * r + j + L]);
        }
        for (a, ta) in t.iter().enumerate() {
            let mut acc = [T::default(); L];
            for (chunk, &tac) in gc.iter().zip(ta) {
                for l in 0..L {
                    acc[l] = fmadd_t::<T>(tac, chunk[l], acc[l]);
                }
            }
            h[a * r + j..a * r + j + L].copy_from_slice(&acc);
        }
        j += L;
    }
    for jj in j..r {
        for (a, ta) in t.iter().enumerate() {
            let mut acc = T::default();
            for (c, &tac) in ta.iter().enumerate() {
                acc = fmadd_t::<T>(tac, g[c * r + jj], acc);
            }
            h[a * r + jj] = acc;
        }
    }
}

/// vec F = I + G_p q of one point: nine dot products of length r in one pass over q,
/// in f64 whatever the storage of G (columns `stride` apart).
#[inline(always)]
pub(super) fn dot9<S: Real>(g: &[S], q: &[f64], r: usize, stride: usize) -> [f64; 9] {
    const L: usize = 4;
    let g = &g[..9 * stride];
    let q = &q[..r];
    let mut acc = [[0.0f64; L]; 9];
    let mut j = 0;
    while j + L <= r {
        let qc: [f64; L] = std::array::from_fn(|l| q[j + l]);
        for (c, a) in acc.iter_mut().enumerate() {
            let gc = &g[c * stride + j..c * stride + j + L];
            for l in 0..L {
                a[l] = fmadd_t::<f64>(gc[l].into(), qc[l], a[l]);
            }
        }
        j += L;
    }
    std::array::from_fn(|c| {
        let a = &acc[c];
        let mut v = identity_entry(c) + ((a[0] + a[1]) + (a[2] + a[3]));
        for jj in j..r {
            v = fmadd_t::<f64>(g[c * stride + jj].into(), q[jj], v);
        }
        v
    })
}

/// [`dot9`], in explicit AVX2 registers when `SIMD` (the same bits).
#[inline(always)]
pub(super) fn dot9_with<S: Real, const SIMD: bool>(
    g: &[S],
    q: &[f64],
    r: usize,
    stride: usize,
) -> [f64; 9] {
    #[cfg(target_arch = "x86_64")]
    if SIMD {
        // SAFETY: `SIMD` paths run only where the CPU has AVX2 and FMA (their callers'
        // contract, `SimdLevel`).
        return unsafe { S::simd_dot9(g, q, r, stride) };
    }
    dot9::<S>(g, q, r, stride)
}

/// [`axpy9`], in explicit AVX2 registers when `SIMD` (the same bits).
#[inline(always)]
pub(super) fn axpy9_with<S: Real, const SIMD: bool>(
    p: &[f64; 9],
    g: &[S],
    force: &mut [f64],
    r: usize,
    stride: usize,
) {
    #[cfg(target_arch = "x86_64")]
    if SIMD {
        // SAFETY: as in `dot9_with`.
        return unsafe { S::simd_axpy9(p, g, force, r, stride) };
    }
    axpy9::<S>(p, g, force, r, stride)
}

/// force += sum_c p_c g_c over one point's nine r-vectors (f64 sums).
#[inline(always)]
pub(super) fn axpy9<S: Real>(p: &[f64; 9], g: &[S], force: &mut [f64], r: usize, stride: usize) {
    const L: usize = 4;
    let g = &g[..9 * stride];
    let force = &mut force[..r];
    let mut j = 0;
    while j + L <= r {
        let mut fc: [f64; L] = std::array::from_fn(|l| force[j + l]);
        for (c, &pc) in p.iter().enumerate() {
            let gc = &g[c * stride + j..c * stride + j + L];
            for l in 0..L {
                fc[l] = fmadd_t::<f64>(pc, gc[l].into(), fc[l]);
            }
        }
        force[j..j + L].copy_from_slice(&fc);
        j += L;
    }
    for jj in j..r {
        for (c, &pc) in p.iter().enumerate() {
            force[jj] = fmadd_t::<f64>(pc, g[c * stride + jj].into(), force[jj]);
        }
    }
}

/// pk -= p0 + t0 vec(F - I) (all scaled by the point's w V).
#[inline(always)]
pub(super) fn subtract_linearization(
    pk: &mut Matrix3<f64>,
    fv: &[f64],
    p0: &[f64; 9],
    t0: &nalgebra::SMatrix<f64, 9, 9>,
) {
    let d: [f64; 9] = std::array::from_fn(|c| fv[c] - identity_entry(c));
    let out = pk.as_mut_slice();
    for a in 0..9 {
        let mut v = p0[a];
        for (c, dc) in d.iter().enumerate() {
            v += t0[(a, c)] * dc;
        }
        out[a] -= v;
    }
}

/// The lower triangle of `k` (r columns, leading dimension `ldk`, in the product's
/// precision) added to that of `stiffness` (r x r, f64).
#[inline(always)]
pub(super) fn add_lower<T: Real>(stiffness: &mut [f64], k: &[T], ldk: usize, r: usize) {
    for j in 0..r {
        for i in j..r {
            stiffness[j * r + i] += k[j * ldk + i].into();
        }
    }
}

/// K (lower triangle, column-major, leading dimension `ldk`) (+)= G H^T for one block
/// of `cols` columns of G and H (r rows each, `stride` apart), with tiles of `L`-lane
/// registers (and `H = L / 2`-lane ones for what is left).
///
/// Every entry is a chain of fused multiply-adds over the columns in order, started from
/// K (`accumulate`) or from zero, whatever the register width, the tiling or the chunks
/// of columns, so the result is the same bit for bit on every CPU and for any block size
/// (a chain cut between blocks and resumed from the stored entry is the same chain).
/// Written by hand instead of faer's triangular product because faer picks its kernel
/// (AVX2 or AVX-512) and its blocking (from the cache sizes it reads) at run time: with
/// f32 storage the rounded stiffness then differed from one CPU to another, and a
/// recorded replay whose contact set sits on an edge did not reproduce on another
/// machine.
///
/// Columns go in chunks that stay in the L1 cache while every tile passes over them;
/// tiles are two registers of rows by four columns (8 accumulators). The tiles that
/// straddle the diagonal also compute a few entries above it, which the caller never
/// reads. Rows past `r` up to `stride` are the zero padding of G.
#[inline(always)]
pub(super) fn lower_product<T: Real, const L: usize, const H: usize, const SIMD: bool>(
    k: &mut [T],
    ldk: usize,
    block: &LowerBlock<'_, T>,
    accumulate: bool,
) {
    let LowerBlock {
        g,
        h,
        r,
        stride,
        cols,
    } = *block;
    assert!(ldk >= stride && k.len() >= ldk * r && H * 2 == L);
    let chunk = (16 * 1024 / (stride * std::mem::size_of::<T>())).max(8);
    let mut c0 = 0;
    while c0 < cols {
        let c1 = (c0 + chunk).min(cols);
        let part = LowerBlock {
            g: &g[c0 * stride..c1 * stride],
            h: &h[c0 * stride..c1 * stride],
            cols: c1 - c0,
            ..*block
        };
        lower_chunk::<T, L, H, SIMD>(k, ldk, &part, accumulate || c0 > 0);
        c0 = c1;
    }
}

/// The operands of [`lower_product`]: G and H, `cols` columns of `stride` entries
/// each, of which the first r are used.
#[derive(Clone, Copy)]
pub(super) struct LowerBlock<'a, T> {
    pub(super) g: &'a [T],
    pub(super) h: &'a [T],
    pub(super) r: usize,
    pub(super) stride: usize,
    pub(super) cols: usize,
}

#[inline(always)]
pub(super) fn lower_chunk<T: Real, const L: usize, const H: usize, const SIMD: bool>(
    k: &mut [T],
    ldk: usize,
    b: &LowerBlock<'_, T>,
    accumulate: bool,
) {
    let LowerBlock {
        g,
        h,
        r,
        stride,
        cols,
    } = *b;
    let mut j0 = 0;
    while j0 < r {
        let nj = (r - j0).min(4);
        let mut i0 = (j0 / H) * H;
        while i0 + 2 * L <= stride {
            lower_tile::<T, L, 2, SIMD>(k, ldk, b, i0, j0, nj, accumulate);
            i0 += 2 * L;
        }
        if i0 + L <= stride {
            lower_tile::<T, L, 1, SIMD>(k, ldk, b, i0, j0, nj, accumulate);
            i0 += L;
        }
        if i0 + H <= stride {
            lower_tile::<T, H, 1, SIMD>(k, ldk, b, i0, j0, nj, accumulate);
            i0 += H;
        }
        // Rows that do not fill a register (f64 storage with r not a multiple of H).
        for i in i0.max(j0)..r {
            for j in j0..j0 + nj {
                let mut v = if accumulate {
                    k[j * ldk + i]
                } else {
                    T::default()
                };
                for c in 0..cols {
                    v = fmadd_t(g[c * stride + i], h[c * stride + j], v);
                }
                k[j * ldk + i] = v;
            }
        }
        j0 += nj;
    }
}

/// One tile of [`lower_product`]: rows i0 .. i0 + M L, columns j0 .. j0 + nj (nj <= 4).
/// The tile kernels must be called with no more lanes than the CPU has.
#[inline(always)]
pub(super) fn lower_tile<T: Real, const L: usize, const M: usize, const SIMD: bool>(
    k: &mut [T],
    ldk: usize,
    b: &LowerBlock<'_, T>,
    i0: usize,
    j0: usize,
    nj: usize,
    accumulate: bool,
) {
    if nj == 4 {
        lower_tile_n::<T, L, M, 4, SIMD>(k, ldk, b, i0, j0, accumulate)
    } else {
        for j in j0..j0 + nj {
            lower_tile_n::<T, L, M, 1, SIMD>(k, ldk, b, i0, j, accumulate)
        }
    }
}

///
/// With `SIMD` the tile runs in explicit AVX2 (L = `T::LANES`) or AVX-512 (L = 2
/// `T::LANES`) registers ([`tiles`]); the caller guarantees that the CPU has them.
#[inline(always)]
pub(super) fn lower_tile_n<
    T: Real,
    const L: usize,
    const M: usize,
    const N: usize,
    const SIMD: bool,
>(
    k: &mut [T],
    ldk: usize,
    b: &LowerBlock<'_, T>,
    i0: usize,
    j0: usize,
    accumulate: bool,
) {
    #[cfg(target_arch = "x86_64")]
    if SIMD && (L == T::LANES || L == 2 * T::LANES) {
        // SAFETY: the caller's CPU has the registers of L lanes (`SIMD`).
        unsafe { T::simd_tile::<M, N>(L == 2 * T::LANES, k, ldk, b, i0, j0, accumulate) };
        return;
    }
    let LowerBlock {
        g, h, stride, cols, ..
    } = *b;
    if cols == 0 {
        return;
    }
    // The last column's reads end inside g and h (checked once: the loop below reads
    // without bounds checks, which otherwise cost as much as its multiply-adds).
    assert!(i0 + M * L <= stride && j0 + N <= stride && (j0 + N - 1) * ldk + i0 + M * L <= k.len());
    assert!(g.len() >= cols * stride && h.len() >= cols * stride);
    let mut acc = [[[T::default(); L]; M]; N];
    if accumulate {
        for (n, accn) in acc.iter_mut().enumerate() {
            for (m, a) in accn.iter_mut().enumerate() {
                let at = (j0 + n) * ldk + i0 + m * L;
                a.copy_from_slice(&k[at..at + L]);
            }
        }
    }
    for c in 0..cols {
        let (gb, hb) = (c * stride + i0, c * stride + j0);
        for (n, accn) in acc.iter_mut().enumerate() {
            // SAFETY: hb + n < c * stride + j0 + N <= cols * stride <= h.len() (asserted).
            let hv = unsafe { *h.get_unchecked(hb + n) };
            for (m, a) in accn.iter_mut().enumerate() {
                for (l, al) in a.iter_mut().enumerate() {
                    // SAFETY: gb + m L + l < c * stride + i0 + M L <= g.len() (asserted).
                    let x = unsafe { *g.get_unchecked(gb + m * L + l) };
                    *al = fmadd_t(x, hv, *al);
                }
            }
        }
    }
    for (n, accn) in acc.iter().enumerate() {
        for (m, a) in accn.iter().enumerate() {
            let at = (j0 + n) * ldk + i0 + m * L;
            k[at..at + L].copy_from_slice(a);
        }
    }
}

/// The tiles of [`lower_product`] in explicit AVX2 and AVX-512 registers: the same
/// chains of fused multiply-adds as the generic [`lower_tile_n`], so the same bits.
/// Written with intrinsics because the compiler's vectorization of the generic tile is
/// fragile: compiled for AVX-512, its 2 x 4 tile of 16-lane accumulators (128 floats)
/// stayed on the stack as scalar fused multiply-adds, and the r = 100 product ran ten
/// times slower than the AVX2 one.
#[cfg(target_arch = "x86_64")]
mod tiles {
    use super::LowerBlock;
    use std::arch::x86_64::*;

    macro_rules! tile {
        ($name:ident, $feature:literal, $t:ty, $v:ty, $lanes:literal,
         $load:ident, $store:ident, $splat:ident, $fmadd:ident, $zero:ident) => {
            /// K (rows i0 .. i0 + M L, columns j0 .. j0 + N) (+)= G H^T over the block's
            /// columns: M N registers of accumulators.
            ///
            /// # Safety
            /// The CPU has the instructions of `$feature`.
            #[target_feature(enable = $feature)]
            pub(super) unsafe fn $name<const M: usize, const N: usize>(
                k: &mut [$t],
                ldk: usize,
                b: &LowerBlock<'_, $t>,
                i0: usize,
                j0: usize,
                accumulate: bool,
            ) {
                const L: usize = $lanes;
                let LowerBlock {
                    g, h, stride, cols, ..
                } = *b;
                if cols == 0 {
                    return;
                }
                assert!(
                    i0 + M * L <= stride
                        && j0 + N <= stride
                        && (j0 + N - 1) * ldk + i0 + M * L <= k.len()
                );
                assert!(g.len() >= cols * stride && h.len() >= cols * stride);
                let mut acc = [[$zero(); M]; N];
                let kp = k.as_mut_ptr();
                if accumulate {
                    for (n, accn) in acc.iter_mut().enumerate() {
                        for (m, a) in accn.iter_mut().enumerate() {
                            // SAFETY: inside k (asserted).
                            *a = unsafe { $load(kp.add((j0 + n) * ldk + i0 + m * L)) };
                        }
                    }
                }
                let (gp, hp) = (g.as_ptr(), h.as_ptr());
                for c in 0..cols {
                    let (gb, hb) = (c * stride + i0, c * stride + j0);
                    let mut x = [$zero(); M];
                    for (m, xm) in x.iter_mut().enumerate() {
                        // SAFETY: gb + M L <= cols * stride <= g.len() (asserted).
                        *xm = unsafe { $load(gp.add(gb + m * L)) };
                    }
                    for (n, accn) in acc.iter_mut().enumerate() {
                        // SAFETY: hb + N <= cols * stride <= h.len() (asserted).
                        let hv = $splat(unsafe { *hp.add(hb + n) });
                        for (a, &xm) in accn.iter_mut().zip(&x) {
                            *a = $fmadd(xm, hv, *a);
                        }
                    }
                }
                for (n, accn) in acc.iter().enumerate() {
                    for (m, &a) in accn.iter().enumerate() {
                        // SAFETY: inside k (asserted).
                        unsafe { $store(kp.add((j0 + n) * ldk + i0 + m * L), a) };
                    }
                }
            }
        };
    }

    tile!(
        avx2_f32,
        "avx2,fma",
        f32,
        __m256,
        8,
        _mm256_loadu_ps,
        _mm256_storeu_ps,
        _mm256_set1_ps,
        _mm256_fmadd_ps,
        _mm256_setzero_ps
    );
    tile!(
        avx2_f64,
        "avx2,fma",
        f64,
        __m256d,
        4,
        _mm256_loadu_pd,
        _mm256_storeu_pd,
        _mm256_set1_pd,
        _mm256_fmadd_pd,
        _mm256_setzero_pd
    );
    tile!(
        avx512_f32,
        "avx512f",
        f32,
        __m512,
        16,
        _mm512_loadu_ps,
        _mm512_storeu_ps,
        _mm512_set1_ps,
        _mm512_fmadd_ps,
        _mm512_setzero_ps
    );
    tile!(
        avx512_f64,
        "avx512f",
        f64,
        __m512d,
        8,
        _mm512_loadu_pd,
        _mm512_storeu_pd,
        _mm512_set1_pd,
        _mm512_fmadd_pd,
        _mm512_setzero_pd
    );
}
