//! The run-time cubature forces: construction from points and weights, the reduced
//! force and stiffness, and the [`ReducedInternalForces`] interface of the integrator.

use nalgebra::{DMatrix, DVector, Matrix3};

use crate::fem::{TetKernel, TetMaterial};
use crate::reduction::evaluator::{dot, ReducedInternalForces};

use super::kernels::{
    add_lower, apply_tangent, axpy9_with, dot9, dot9_with, lower_product, LowerBlock, Real,
};
use super::linear::{add_affine, affine_linearization, EquilibriumCorrection, LinearPart};
use super::*;

impl<M: TetMaterial> CubatureForces<M> {
    /// Cubature with the given tets (`elements`, indices into `kernel`) and weights, in
    /// the basis `basis` (3n x r, one column per mode). With `exact_linear` the points
    /// integrate only the nonlinear remainder and the affine part U^T R(0) + U^T K0 U q
    /// is exact (at the material's activation now); the weights must come from a
    /// training with the same setting. The precision is
    /// [`CubaturePrecision::default_for`] r.
    pub fn from_points(
        kernel: &TetKernel,
        basis: &DMatrix<f64>,
        material: M,
        elements: &[usize],
        weights: &[f64],
        exact_linear: bool,
    ) -> Result<Self, CubatureError> {
        let r = check_basis(kernel, basis)?;
        if elements.len() != weights.len() {
            return Err(CubatureError::BadPoints(format!(
                "{} elements but {} weights",
                elements.len(),
                weights.len()
            )));
        }
        if let Some(&e) = elements.iter().find(|&&e| e >= kernel.num_elements()) {
            return Err(CubatureError::BadPoints(format!(
                "element {e} of a mesh of {} tets",
                kernel.num_elements()
            )));
        }
        if let Some(w) = weights.iter().find(|w| !w.is_finite() || **w < 0.0) {
            return Err(CubatureError::BadPoints(format!("weight {w}")));
        }
        let n = elements.len();
        let mut gt = vec![0.0; 9 * n * r];
        for (p, &e) in elements.iter().enumerate() {
            mode_gradients(kernel, basis, e, &mut gt[9 * p * r..9 * (p + 1) * r]);
        }
        let scale: Vec<f64> = elements
            .iter()
            .zip(weights)
            .map(|(&e, &w)| w * kernel.volume[e])
            .collect();
        let mut material = material;
        let (linear, linear_slope) = if exact_linear {
            let (base, slope) =
                affine_linearization(kernel, &mut material, basis, elements, &scale);
            match slope {
                Some(slope) => (Some(base.clone()), Some(Box::new((base, slope)))),
                None => (Some(base), None),
            }
        } else {
            (None, None)
        };
        let mut cub = CubatureForces {
            r,
            material,
            elements: elements.to_vec(),
            weights: weights.to_vec(),
            scale,
            gt,
            gt32: None,
            linear,
            linear_slope,
            linear_activation: 0.0,
            correction: None,
            kernels: default_kernels(r),
            block_bytes: BLOCK_BYTES,
            stiffness_slices: 1,
        };
        cub.set_precision(CubaturePrecision::default_for(r));
        let alpha = cub.material.activation();
        cub.set_activation(alpha);
        Ok(cub)
    }

    /// Every tet with weight 1: the exact reduced force U^T R(U q) and stiffness
    /// U^T K(U q) U (a reference, as slow as the full mesh; no separate linear part).
    /// Stored in f64: the exact equilibria and the training's stiffness probes are
    /// computed with it, and the f32 rounding of G would move them by about 1e-7.
    pub fn all_elements(
        kernel: &TetKernel,
        basis: &DMatrix<f64>,
        material: M,
    ) -> Result<Self, CubatureError> {
        let elements: Vec<usize> = (0..kernel.num_elements()).collect();
        let weights = vec![1.0; elements.len()];
        let mut exact = Self::from_points(kernel, basis, material, &elements, &weights, false)?;
        exact.set_precision(CubaturePrecision::F64);
        Ok(exact)
    }

    /// Whether the affine part of the force is exact ([`CubatureOptions::exact_linear`]).
    pub fn exact_linear(&self) -> bool {
        self.linear.is_some()
    }

    /// Number of reduced coordinates r.
    pub fn r(&self) -> usize {
        self.r
    }

    /// Number of cubature points N.
    pub fn num_points(&self) -> usize {
        self.elements.len()
    }

    /// The tets of the cubature points (indices into the kernel's mesh).
    pub fn elements(&self) -> &[usize] {
        &self.elements
    }

    /// The non-negative weight of each point (multiplying its rest volume).
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }

    /// The material.
    pub fn material(&self) -> &M {
        &self.material
    }

    /// Sets the material's run-time activation (a run-time input: no refit). With a
    /// material affine in its activation the exact linear part follows it (recombined
    /// only when the activation changes; allocates nothing).
    pub fn set_activation(&mut self, alpha: f64) {
        self.material.set_activation(alpha);
        let alpha = self.material.activation();
        if alpha != self.linear_activation {
            if let (Some(lin), Some(affine)) = (&mut self.linear, &self.linear_slope) {
                lin.combine(&affine.0, &affine.1, alpha);
            }
            if let Some(c) = &mut self.correction {
                c.interpolate(alpha);
            }
            self.linear_activation = alpha;
        }
    }

    /// Equilibrium correction: makes the unloaded equilibria of this cubature those of
    /// exact integration in the same basis, `equilibria` (activation, q*) from
    /// [`exact_equilibria`], by subtracting the fit's force residual there, f~(q*), linearly
    /// interpolated in the activation (a constant offset per activation: the stiffness
    /// is unchanged, and the energy gains the matching linear term). For a muscle whose
    /// unloaded equilibrium moves with its activation (an 8.8 mm contraction): the
    /// palpation stiffness depends on where the belly sits, and a force fit to 2%
    /// misplaces it (docs/muscle.md). Allocates; call it once after training or loading.
    pub fn correct_equilibria(
        &mut self,
        equilibria: &[(f64, Vec<f64>)],
    ) -> Result<(), CubatureError> {
        let r = self.r;
        if equilibria.is_empty()
            || equilibria
                .iter()
                .any(|(a, q)| !a.is_finite() || q.len() != r)
            || equilibria.windows(2).any(|w| w[0].0 >= w[1].0)
        {
            return Err(CubatureError::BadOptions(format!(
                "equilibrium correction: {} states, which must be of {r} coordinates at \
                 finite, strictly ascending activations",
                equilibria.len()
            )));
        }
        let entry = self.material.activation();
        self.correction = None;
        let (mut f, mut k) = (vec![0.0; r], vec![0.0; r * r]);
        let mut scratch = self.scratch();
        let mut offsets = Vec::new();
        for (alpha, q) in equilibria {
            self.set_activation(*alpha);
            self.evaluate(q, &mut f, &mut k, &mut scratch);
            offsets.push(f.clone());
        }
        self.correction = Some(Box::new(EquilibriumCorrection {
            activations: equilibria.iter().map(|(a, _)| *a).collect(),
            offsets,
            now: vec![0.0; r],
        }));
        // Recombine at the activation on entry.
        self.linear_activation = f64::NAN;
        self.set_activation(entry);
        Ok(())
    }

    /// The storage and stiffness arithmetic in use.
    pub fn precision(&self) -> CubaturePrecision {
        if self.gt32.is_some() {
            CubaturePrecision::F32
        } else {
            CubaturePrecision::F64
        }
    }

    /// Sets the storage and stiffness arithmetic (default:
    /// [`CubaturePrecision::default_for`] r). Make new scratch buffers afterwards.
    pub fn set_precision(&mut self, precision: CubaturePrecision) {
        self.gt32 = match precision {
            CubaturePrecision::F64 => None,
            CubaturePrecision::F32 => {
                let (r, stride) = (self.r, self.stride32());
                let mut g = vec![0.0f32; stride * self.gt.len() / r];
                for (dst, src) in g.chunks_exact_mut(stride).zip(self.gt.chunks_exact(r)) {
                    for (d, &x) in dst.iter_mut().zip(src) {
                        *d = x as f32;
                    }
                }
                Some(g)
            }
        };
        self.sum_point_linearizations();
    }

    /// Fills [`LinearPart::k_force`] and [`LinearPart::f_force`] of the linear part (and
    /// of its activation endpoints) from the points' linearizations and G as stored, and
    /// recombines at the current activation. Allocates; called when G is (re)stored.
    pub(super) fn sum_point_linearizations(&mut self) {
        let (r, n) = (self.r, self.elements.len());
        let stride = self.stride32();
        let g: Vec<f64> = match &self.gt32 {
            None => self.gt.clone(),
            Some(g32) => g32
                .chunks_exact(stride)
                .flat_map(|c| c[..r].iter().map(|&x| x as f64))
                .collect(),
        };
        let sum = |lin: &mut LinearPart| {
            let mut k = lin.k0.clone();
            let mut f = lin.f0.clone();
            let mut tg = vec![0.0; 9 * r];
            for p in 0..n {
                let gp = &g[9 * p * r..9 * (p + 1) * r];
                // tg column a = sum_c t0[a, c] g_c (r-vectors).
                for a in 0..9 {
                    for j in 0..r {
                        tg[a * r + j] = (0..9).map(|c| lin.t0[p][(a, c)] * gp[c * r + j]).sum();
                    }
                }
                for a in 0..9 {
                    let (ga, pa) = (&gp[a * r..(a + 1) * r], lin.p0[p][a]);
                    for j in 0..r {
                        f[j] -= pa * ga[j];
                        let tj = tg[a * r + j];
                        for (i, gi) in ga.iter().enumerate() {
                            k[j * r + i] -= gi * tj;
                        }
                    }
                }
            }
            // Symmetric in exact arithmetic (t0 is a Hessian); averaged so it is in
            // floating point too.
            for j in 0..r {
                for i in j + 1..r {
                    let m = 0.5 * (k[j * r + i] + k[i * r + j]);
                    k[j * r + i] = m;
                    k[i * r + j] = m;
                }
            }
            lin.k_force = k;
            lin.f_force = f;
        };
        if let Some(lin) = &mut self.linear {
            sum(lin);
        }
        if let Some(affine) = &mut self.linear_slope {
            sum(&mut affine.0);
            sum(&mut affine.1);
        }
        // Recombine at the current activation.
        self.linear_activation = f64::NAN;
        let alpha = self.material.activation();
        self.set_activation(alpha);
    }

    /// Points per block of the stiffness product.
    pub(super) fn block_points(&self) -> usize {
        let (bytes, stride) = match self.precision() {
            CubaturePrecision::F64 => (8, self.r),
            CubaturePrecision::F32 => (4, self.stride32()),
        };
        (self.block_bytes / (9 * stride * bytes)).clamp(1, self.elements.len().max(1))
    }

    /// Column length of the f32 storage: r rounded up to whole 8-lane registers.
    pub(super) fn stride32(&self) -> usize {
        self.r.div_ceil(8) * 8
    }

    /// Column length of the storage of scalar type `S` (f64: r; f32: [`Self::stride32`]).
    pub(super) fn stride_of<S: Real>(&self) -> usize {
        if S::LANES == 8 {
            self.stride32()
        } else {
            self.r
        }
    }

    /// Buffers for [`Self::evaluate`] (sized for the current precision).
    pub fn scratch(&self) -> CubatureScratch {
        let (n64, n32) = match self.precision() {
            CubaturePrecision::F64 => (9 * self.block_points() * self.r, 0),
            CubaturePrecision::F32 => (0, 9 * self.block_points() * self.stride32()),
        };
        let slices = self.stiffness_slices;
        let lagged = if slices > 1 { slices } else { 0 };
        CubatureScratch {
            h64: vec![0.0; n64],
            h32: vec![0.0; n32],
            k32: vec![0.0; if n32 > 0 { self.stride32() * self.r } else { 0 }],
            slices64: vec![0.0; if n64 > 0 { lagged * self.r * self.r } else { 0 }],
            slices32: vec![
                0.0;
                if n32 > 0 {
                    lagged * self.stride32() * self.r
                } else {
                    0
                }
            ],
            slices,
            next_slice: 0,
            filled: false,
        }
    }

    /// The reduced force f~(q) alone (length r): the force of [`Self::evaluate`] without
    /// the stiffness (portable kernels). Allocates nothing; `scratch` is unused (kept for
    /// a uniform signature).
    pub fn evaluate_force(&self, q: &[f64], force: &mut [f64], scratch: &mut CubatureScratch) {
        let _ = scratch;
        #[cfg(target_arch = "x86_64")]
        if self.kernels >= SimdLevel::Avx2 {
            // SAFETY: the CPU has AVX2 and FMA (`kernels` is never above `detect`).
            return unsafe { self.force_avx2(q, force) };
        }
        self.force_any::<false>(q, force)
    }

    /// [`Self::force_any`] with hardware fused multiply-adds (the same bits as the
    /// portable build's library calls, which cost a function call each).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn force_avx2(&self, q: &[f64], force: &mut [f64]) {
        self.force_any::<true>(q, force)
    }

    /// `SIMD`: the point loops in explicit AVX2 registers (the caller's CPU has them).
    #[inline(always)]
    pub(super) fn force_any<const SIMD: bool>(&self, q: &[f64], force: &mut [f64]) {
        let r = self.r;
        force[..r].iter_mut().for_each(|x| *x = 0.0);
        let all = 0..self.elements.len();
        match &self.gt32 {
            None => self.force_with::<f64, SIMD>(&self.gt, q, force, all),
            Some(g32) => self.force_with::<f32, SIMD>(g32, q, force, all),
        }
        if let Some(lin) = &self.linear {
            add_affine(lin, &q[..r], &mut force[..r]);
        }
        self.subtract_correction(&mut force[..r]);
    }

    /// Adds the stresses of the points in `points` to `force` (without the affine part
    /// and the correction).
    #[inline(always)]
    pub(super) fn force_with<S: Real, const SIMD: bool>(
        &self,
        g: &[S],
        q: &[f64],
        force: &mut [f64],
        points: std::ops::Range<usize>,
    ) {
        let r = self.r;
        let stride = self.stride_of::<S>();
        let q = &q[..r];
        let force = &mut force[..r];
        for p in points {
            let e = self.elements[p];
            let gp = &g[9 * p * stride..9 * (p + 1) * stride];
            let fv = dot9_with::<S, SIMD>(gp, q, r, stride);
            let f = Matrix3::from_column_slice(&fv);
            let pk = self.material.first_pk(e, &f) * self.scale[p];
            let pk: [f64; 9] = std::array::from_fn(|c| pk.as_slice()[c]);
            axpy9_with::<S, SIMD>(&pk, gp, force, r, stride);
        }
    }

    /// force -= the equilibrium correction at the current activation.
    #[inline(always)]
    pub(super) fn subtract_correction(&self, force: &mut [f64]) {
        if let Some(c) = &self.correction {
            for (f, o) in force.iter_mut().zip(&c.now) {
                *f -= o;
            }
        }
    }

    /// f~(q) into `force` (length r) and K~(q) into `stiffness` (r x r column-major),
    /// using `scratch` (from [`Self::scratch`]). Allocates nothing.
    pub fn evaluate(
        &self,
        q: &[f64],
        force: &mut [f64],
        stiffness: &mut [f64],
        scratch: &mut CubatureScratch,
    ) {
        self.dispatch::<false>(q, force, stiffness, scratch)
    }

    /// [`Self::evaluate`] (`SLICED` false) or the sliced evaluation of
    /// [`Self::evaluate_step`], in the compilation of the kernels in use.
    #[inline(always)]
    pub(super) fn dispatch<const SLICED: bool>(
        &self,
        q: &[f64],
        force: &mut [f64],
        stiffness: &mut [f64],
        scratch: &mut CubatureScratch,
    ) {
        match self.kernels {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the CPU has AVX-512F, AVX2 and FMA (`kernels` is never above
            // `SimdLevel::detect`).
            SimdLevel::Avx512 => unsafe {
                self.evaluate_avx512::<SLICED>(q, force, stiffness, scratch)
            },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the CPU has AVX2 and FMA (as above).
            SimdLevel::Avx2 => unsafe {
                self.evaluate_avx2::<SLICED>(q, force, stiffness, scratch)
            },
            _ => self.evaluate_any::<false, false, SLICED>(q, force, stiffness, scratch),
        }
    }

    /// The force and stiffness for one step of an integrator
    /// ([`ReducedInternalForces::evaluate_step`]). With one stiffness slice (the
    /// default) this is [`Self::evaluate`]. With S slices
    /// ([`Self::set_stiffness_slices`]) the points are cut into S consecutive slices;
    /// the force is exact (every point's stress at `q`), but only one slice's tangent
    /// is evaluated and multiplied out, in turn, and the stiffness is the exact affine
    /// part plus every slice's share as of its last refresh, at most S - 1 calls ago
    /// (the first call, with a fresh `scratch`, refreshes them all). The Newton step
    /// that uses it is then a modified Newton step: the same residual, so the same
    /// equilibria, with a Jacobian lagged by at most S - 1 steps in its nonlinear part.
    /// The cost per call is the force plus 1 / S of the stiffness. The slices'
    /// products live in `scratch`, which must come from [`Self::scratch`] after the
    /// last [`Self::set_stiffness_slices`] (else this is [`Self::evaluate`]).
    /// Deterministic: the result depends only on the calls made with this `scratch`.
    /// Allocates nothing.
    pub fn evaluate_step(
        &self,
        q: &[f64],
        force: &mut [f64],
        stiffness: &mut [f64],
        scratch: &mut CubatureScratch,
    ) {
        let (s, r) = (self.stiffness_slices, self.r);
        let sized = match self.precision() {
            CubaturePrecision::F64 => scratch.slices64.len() == s * r * r,
            CubaturePrecision::F32 => scratch.slices32.len() == s * self.stride32() * r,
        };
        if s <= 1 || scratch.slices != s || !sized {
            return self.evaluate(q, force, stiffness, scratch);
        }
        self.dispatch::<true>(q, force, stiffness, scratch)
    }

    /// Cuts the points into `slices` (at least 1, at most the number of points) whose
    /// stiffness [`Self::evaluate_step`] refreshes in turn. Make new scratch buffers
    /// afterwards.
    pub fn set_stiffness_slices(&mut self, slices: usize) {
        self.stiffness_slices = slices.clamp(1, self.elements.len().max(1));
    }

    /// The number of stiffness slices ([`Self::set_stiffness_slices`]).
    pub fn stiffness_slices(&self) -> usize {
        self.stiffness_slices
    }

    /// Runs the given compilation of the kernels, or the fastest below it this CPU
    /// has, so tests can compare them on one machine. Returns the one chosen.
    pub fn use_kernels(&mut self, kernels: SimdLevel) -> SimdLevel {
        self.kernels = kernels.or_below();
        self.kernels
    }

    /// The compilation of the kernels in use.
    pub fn kernels(&self) -> SimdLevel {
        self.kernels
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn evaluate_avx2<const SLICED: bool>(
        &self,
        q: &[f64],
        force: &mut [f64],
        stiffness: &mut [f64],
        scratch: &mut CubatureScratch,
    ) {
        self.evaluate_any::<false, true, SLICED>(q, force, stiffness, scratch);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx2,fma")]
    pub(super) unsafe fn evaluate_avx512<const SLICED: bool>(
        &self,
        q: &[f64],
        force: &mut [f64],
        stiffness: &mut [f64],
        scratch: &mut CubatureScratch,
    ) {
        self.evaluate_any::<true, true, SLICED>(q, force, stiffness, scratch);
    }

    /// `WIDE`: the stiffness product in AVX-512's register width; `SIMD`: in explicit
    /// AVX2 / AVX-512 registers (the caller's CPU has them); `SLICED`: the stiffness
    /// slices of [`Self::evaluate_step`] (their buffers checked by the caller).
    #[inline(always)]
    pub(super) fn evaluate_any<const WIDE: bool, const SIMD: bool, const SLICED: bool>(
        &self,
        q: &[f64],
        force: &mut [f64],
        stiffness: &mut [f64],
        scratch: &mut CubatureScratch,
    ) {
        let r = self.r;
        let stiffness = &mut stiffness[..r * r];
        match &self.linear {
            Some(lin) => stiffness.copy_from_slice(&lin.k0),
            None => stiffness.iter_mut().for_each(|x| *x = 0.0),
        }
        force[..r].iter_mut().for_each(|x| *x = 0.0);
        if SLICED {
            self.sliced::<WIDE, SIMD>(q, force, stiffness, scratch);
        } else {
            self.whole::<WIDE, SIMD>(q, force, stiffness, scratch);
        }
        if let Some(lin) = &self.linear {
            add_affine(lin, &q[..r], &mut force[..r]);
        }
        self.subtract_correction(&mut force[..r]);
        for j in 0..r {
            for i in j + 1..r {
                stiffness[i * r + j] = stiffness[j * r + i];
            }
        }
    }

    /// The points' force and the lower triangle of their whole stiffness, added to
    /// `force` and `stiffness`.
    #[inline(always)]
    pub(super) fn whole<const WIDE: bool, const SIMD: bool>(
        &self,
        q: &[f64],
        force: &mut [f64],
        stiffness: &mut [f64],
        scratch: &mut CubatureScratch,
    ) {
        let r = self.r;
        let all = 0..self.elements.len();
        let CubatureScratch { h64, h32, k32, .. } = scratch;
        match &self.gt32 {
            None => {
                let k = &mut *stiffness;
                self.evaluate_with::<f64, WIDE, SIMD>(&self.gt, q, force, k, r, h64, true, all);
            }
            Some(g32) => {
                let ldk = self.stride32();
                assert!(k32.len() == ldk * r, "scratch from another precision");
                if self.evaluate_with::<f32, WIDE, SIMD>(g32, q, force, k32, ldk, h32, false, all) {
                    add_lower(stiffness, k32, ldk, r);
                }
            }
        }
    }

    /// The points' force and the lower triangle of their stiffness slices (one
    /// refreshed, or all on a fresh scratch), added to `force` and `stiffness`; then the
    /// next slice's turn.
    #[inline(always)]
    pub(super) fn sliced<const WIDE: bool, const SIMD: bool>(
        &self,
        q: &[f64],
        force: &mut [f64],
        stiffness: &mut [f64],
        scratch: &mut CubatureScratch,
    ) {
        let r = self.r;
        let refresh = if scratch.filled {
            Some(scratch.next_slice)
        } else {
            None
        };
        let CubatureScratch {
            h64,
            h32,
            slices64,
            slices32,
            ..
        } = scratch;
        match &self.gt32 {
            None => self.sliced_with::<f64, WIDE, SIMD>(
                &self.gt, q, force, stiffness, slices64, r, h64, refresh,
            ),
            Some(g32) => self.sliced_with::<f32, WIDE, SIMD>(
                g32,
                q,
                force,
                stiffness,
                slices32,
                self.stride32(),
                h32,
                refresh,
            ),
        }
        scratch.filled = true;
        scratch.next_slice = (scratch.next_slice + 1) % self.stiffness_slices;
    }

    /// The points' force, every slice's, and the stiffness of slice `refresh` (of every
    /// slice when `None`) into its buffer in `slices` (lower triangles, leading
    /// dimension `ldk`, one after the other); then every slice's buffer added, in slice
    /// order, to the lower triangle of `stiffness`.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn sliced_with<T: Real, const WIDE: bool, const SIMD: bool>(
        &self,
        g: &[T],
        q: &[f64],
        force: &mut [f64],
        stiffness: &mut [f64],
        slices: &mut [T],
        ldk: usize,
        h: &mut [T],
        refresh: Option<usize>,
    ) {
        let (r, n, count) = (self.r, self.elements.len(), self.stiffness_slices);
        for s in 0..count {
            let points = s * n / count..(s + 1) * n / count;
            if refresh.is_none_or(|k| k == s) {
                let k = &mut slices[s * ldk * r..(s + 1) * ldk * r];
                let h = &mut *h;
                if !self.evaluate_with::<T, WIDE, SIMD>(g, q, force, k, ldk, h, false, points) {
                    k.iter_mut().for_each(|x| *x = T::default());
                }
            } else {
                self.force_with::<T, SIMD>(g, q, force, points);
            }
        }
        for s in 0..count {
            add_lower(stiffness, &slices[s * ldk * r..(s + 1) * ldk * r], ldk, r);
        }
    }

    /// Adds the stresses of the points in `points` to `force` (without the affine part)
    /// and the lower triangle of their sum_p G_p^T T_p G_p into `k` (added to it when
    /// `accumulate`, else overwritten when there are points). Points go in blocks: the
    /// tangent products of a block (`h`) and its G columns stay in cache for the
    /// block's product. Returns whether `k` was written.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn evaluate_with<T: Real, const WIDE: bool, const SIMD: bool>(
        &self,
        g: &[T],
        q: &[f64],
        force: &mut [f64],
        k: &mut [T],
        ldk: usize,
        h: &mut [T],
        accumulate: bool,
        points: std::ops::Range<usize>,
    ) -> bool {
        let r = self.r;
        let q = &q[..r];
        let force = &mut force[..r];
        let stride = self.stride_of::<T>();
        let block = self.block_points();
        assert!(
            h.len() >= 9 * block * stride,
            "scratch from another precision"
        );
        let mut written = false;
        let n = points.end;
        let mut start = points.start;
        while start < n {
            let end = (start + block).min(n);
            for p in start..end {
                let e = self.elements[p];
                let gp = &g[9 * p * stride..9 * (p + 1) * stride];
                let fv = dot9_with::<T, SIMD>(gp, q, r, stride);
                let f = Matrix3::from_column_slice(&fv);
                let s = self.scale[p];
                let (pk, t) = self.material.first_pk_and_tangent(e, &f);
                // The stress whole (the force's affine part holds the sum of the
                // points' linearizations), the tangent's remainder (in the f32 product
                // the whole bulk tangent would round off the soft directions).
                let (pk, mut t) = (pk * s, t * s);
                if let Some(lin) = &self.linear {
                    t -= &lin.t0[p];
                }
                let pk: [f64; 9] = std::array::from_fn(|c| pk.as_slice()[c]);
                axpy9_with::<T, SIMD>(&pk, gp, force, r, stride);
                let tt: [[T; 9]; 9] =
                    std::array::from_fn(|a| std::array::from_fn(|c| T::from_f64(t[(a, c)])));
                let hp = &mut h[9 * (p - start) * stride..9 * (p - start + 1) * stride];
                apply_tangent::<T>(&tt, gp, hp, stride);
            }
            let cols = 9 * (end - start);
            let b = LowerBlock {
                g: &g[9 * start * stride..9 * end * stride],
                h: &h[..cols * stride],
                r,
                stride,
                cols,
            };
            let acc = accumulate || written;
            // Register widths in lanes of T: f32 8 (AVX2) or 16 (AVX-512), f64 4 or 8.
            match (T::LANES == 8, WIDE) {
                (true, true) => lower_product::<T, 16, 8, SIMD>(k, ldk, &b, acc),
                (true, false) | (false, true) => lower_product::<T, 8, 4, SIMD>(k, ldk, &b, acc),
                (false, false) => lower_product::<T, 4, 2, SIMD>(k, ldk, &b, acc),
            }
            written = true;
            start = end;
        }
        written
    }

    /// The fitted reduced energy W~(q) = sum_e w_e V_e W(F_e(q)) (with an exact linear
    /// part: the exact quadratic expansion at rest plus the points' remainders, zero at
    /// rest). Its gradient is the force and its Hessian the stiffness.
    pub fn strain_energy(&self, q: &[f64]) -> f64 {
        #[cfg(target_arch = "x86_64")]
        if self.kernels >= SimdLevel::Avx2 {
            // SAFETY: the CPU has AVX2 and FMA (`kernels` is never above `detect`).
            return unsafe { self.energy_avx2(q) };
        }
        self.energy_any(q)
    }

    /// [`Self::energy_any`] with hardware fused multiply-adds (the same bits).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn energy_avx2(&self, q: &[f64]) -> f64 {
        self.energy_any(q)
    }

    #[inline(always)]
    pub(super) fn energy_any(&self, q: &[f64]) -> f64 {
        match &self.gt32 {
            None => self.energy_with::<f64>(&self.gt, q),
            Some(g32) => self.energy_with::<f32>(g32, q),
        }
    }

    #[inline(always)]
    pub(super) fn energy_with<S: Real>(&self, g: &[S], q: &[f64]) -> f64 {
        let r = self.r;
        let stride = self.stride_of::<S>();
        let q = &q[..r];
        let mut w = 0.0;
        for (p, &e) in self.elements.iter().enumerate() {
            let fv = dot9::<S>(&g[9 * p * stride..9 * (p + 1) * stride], q, r, stride);
            let f = Matrix3::from_column_slice(&fv);
            w += self.scale[p] * self.material.energy_density(e, &f);
            if let Some(lin) = &self.linear {
                // Minus the point's quadratic expansion at rest (W(I) included).
                let d: [f64; 9] = std::array::from_fn(|c| fv[c] - identity_entry(c));
                let dv = nalgebra::SVector::<f64, 9>::from_column_slice(&d);
                let w0 = self.scale[p] * self.material.energy_density(e, &Matrix3::identity());
                let p0 = nalgebra::SVector::<f64, 9>::from_column_slice(&lin.p0[p]);
                w -= w0 + p0.dot(&dv) + 0.5 * dv.dot(&(lin.t0[p] * dv));
            }
        }
        if let Some(lin) = &self.linear {
            let kq = DMatrix::from_column_slice(r, r, &lin.k0) * DVector::from_column_slice(q);
            w += dot(&lin.f0, q) + 0.5 * dot(kq.as_slice(), q);
        }
        if let Some(c) = &self.correction {
            w -= dot(&c.now, q);
        }
        w
    }
}

impl<M: TetMaterial> ReducedInternalForces for CubatureForces<M> {
    type Scratch = CubatureScratch;
    fn r(&self) -> usize {
        self.r
    }
    fn scratch(&self) -> CubatureScratch {
        CubatureForces::scratch(self)
    }
    fn evaluate(
        &self,
        q: &[f64],
        force: &mut [f64],
        stiffness: &mut [f64],
        scratch: &mut CubatureScratch,
    ) {
        CubatureForces::evaluate(self, q, force, stiffness, scratch)
    }
    fn evaluate_step(
        &self,
        q: &[f64],
        force: &mut [f64],
        stiffness: &mut [f64],
        scratch: &mut CubatureScratch,
    ) {
        CubatureForces::evaluate_step(self, q, force, stiffness, scratch)
    }
    fn restart(&self, scratch: &mut CubatureScratch) {
        scratch.restart();
    }
    fn energy(&self, q: &[f64]) -> Option<f64> {
        Some(self.strain_energy(q))
    }
    fn set_activation(&mut self, alpha: f64) {
        CubatureForces::set_activation(self, alpha)
    }
}
