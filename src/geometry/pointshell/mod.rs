//! Multi-resolution oriented pointshells by particle repulsion (thesis 3.8.1;
//! docs/equations.md "Particle repulsion (3.8.1)", "Pointshell sampling (3.6)", "Nested point
//! tree (3.9)").
//!
//! A pointshell samples the level set T = { x : d(x) = offset } of a closed triangle mesh's
//! signed distance d (offset 0: the surface itself; offset > 0: an outward offset surface,
//! for thin parts and for the closed offset surface of a polygon soup). Each point carries
//! the unit *inward* normal of T, the direction of its penalty force (thesis 3.5).
//!
//! Levels. Level 0 holds N1 points; the points of levels 0..=i together number
//! N1 * 4^i, so level i >= 1 injects 3 * N1 * 4^(i-1) new points (the cumulative count
//! quadruples, which is docs/equations.md's "each level has 4x the points at half the
//! radius": the set of levels 0..=i is the tree level L_(i+1) of 3.9, and it is that set
//! whose spacing halves). Each level's points are seeded by stratified area-weighted
//! random sampling of the mesh and projected onto T (`generation.rs`), then relaxed by
//! particle repulsion while all earlier levels stay frozen (`repulsion.rs`). A level
//! stops after `iterations` iterations or when the mean move falls below
//! `convergence` * R.
//!
//! Radius. With A the mesh area and N the cumulative count of levels 0..=i, the target
//! spacing is h = sqrt(A / N) and
//!
//! ```text
//!     R = c h = c sqrt(A / N),      c = PointshellParams::radius_factor (default 2):
//! ```
//!
//! about pi c^2 = 12.6 neighbours lie within R, so the kernels of a point's first ring of
//! neighbours overlap. R halves exactly from one level to the next, as in the thesis.
//!
//! Files, by concern:
//! - this file: the parameters, the [`Pointshell`] type, errors and the sampler
//!   ([`sample_pointshell`]: one [`Progress`] stage per level; per-level
//!   [`LevelStats`] from [`sample_pointshell_with_stats`]);
//! - `generation.rs`: the random generator ([`SplitMix64`]), the stratified surface
//!   sampler ([`SurfaceSampler`]) and the projection onto the level set ([`LevelSet`]);
//! - `repulsion.rs`: the repulsion kernel, force and iteration;
//! - `grid.rs`: the uniform grid ([`PointGrid`]), reused by the farthest-point ordering
//!   (`super::farthest`) and the contact point tree;
//! - `quality.rs`: coverage and uniformity ([`PointshellQuality`]);
//! - `file.rs`: the binary file format ([`Pointshell::write`], [`Pointshell::read`]).

mod file;
mod generation;
mod grid;
mod quality;
mod repulsion;

pub use file::PointshellFileError;

pub use generation::{LevelSet, SurfaceSampler};
pub use grid::PointGrid;

pub use quality::{mean_and_cv, point_set_quality, PointshellQuality};

pub use repulsion::{repulsion_force, repulsion_kernel};

use std::ops::Range;
use std::time::Instant;

use haptics_devices::rng::SplitMix64;
use nalgebra::{Point3, Vector3};
use rayon::prelude::*;

use super::sdf::{MeshDistance, SdfError};
use crate::mesh::SurfaceMesh;
use crate::progress::Progress;

/// Largest pointshell this module builds (points of all levels together).
pub const MAX_POINTS: usize = 1 << 28;

/// Projections onto the level set stop when |d - offset| is below this fraction of the
/// mesh's bounding-box diagonal.
pub const PROJECTION_TOLERANCE: f64 = 1e-10;

/// The largest level-set offset accepted, in bounding-box diagonals of the mesh: an
/// offset surface a thousand times the object's size is not a contact shell, and
/// offsets far beyond it (1e308) overflow the projection onto the level set.
pub const MAX_OFFSET_DIAGONALS: f64 = 1e3;

/// Errors building a pointshell or computing its quality.
#[derive(Debug, thiserror::Error)]
pub enum PointshellError {
    /// The first level needs at least 4 points (a tetrahedron's worth of samples).
    #[error("the first level needs at least {minimum} points, {requested} were requested")]
    TooFewPoints {
        /// Points requested for level 0.
        requested: usize,
        /// The least allowed.
        minimum: usize,
    },
    /// Zero levels requested.
    #[error("at least one level is needed")]
    NoLevels,
    /// The requested levels would exceed [`MAX_POINTS`] (or overflow).
    #[error("{levels} levels from {first} points exceed the limit of {limit} points")]
    TooManyPoints {
        /// Points of level 0.
        first: usize,
        /// Levels requested.
        levels: usize,
        /// [`MAX_POINTS`].
        limit: usize,
    },
    /// A parameter outside its valid range.
    #[error("invalid parameter {name} = {value}: {reason}")]
    InvalidParameter {
        /// The parameter's name.
        name: &'static str,
        /// Its value.
        value: f64,
        /// What a valid value is.
        reason: &'static str,
    },
    /// An offset that is absurd relative to the mesh's size.
    #[error("invalid parameter offset = {offset:e}: must be at most {limit:e} ({MAX_OFFSET_DIAGONALS} times the mesh's bounding-box diagonal {diagonal:e})")]
    OffsetTooLarge {
        /// The offset requested.
        offset: f64,
        /// The mesh's bounding-box diagonal.
        diagonal: f64,
        /// The largest offset accepted for this mesh.
        limit: f64,
    },
    /// The mesh has no area to sample.
    #[error("the mesh has no triangles with positive area to sample")]
    ZeroArea,
    /// The signed distance of the mesh could not be built (typically: not closed).
    #[error("no signed distance for this mesh: the pointshell samples a closed surface (for a polygon soup, build its closed offset surface first and sample that)")]
    Distance {
        /// Why the distance could not be built.
        #[from]
        source: SdfError,
    },
    /// A point set too small for the requested levels (farthest-point path).
    #[error("{points} points are too few for {levels} levels with branching {branching}: at least {needed} are needed")]
    PointSetTooSmall {
        /// Points given.
        points: usize,
        /// Levels requested.
        levels: usize,
        /// Growth factor of the level sizes.
        branching: usize,
        /// The fewest points that give the levels.
        needed: usize,
    },
    /// An empty point set.
    #[error("the point set is empty")]
    EmptyPointSet,
    /// Points and normals of different lengths.
    #[error("{points} points but {normals} normals")]
    NormalsMismatch {
        /// Number of points.
        points: usize,
        /// Number of normals.
        normals: usize,
    },
    /// A point or normal that is NaN, infinite or (for a normal) zero.
    #[error("{what} {index} is not finite (or is a zero normal)")]
    NonFinite {
        /// "point" or "normal".
        what: &'static str,
        /// Its index.
        index: usize,
    },
    /// A level index past the last level.
    #[error("level {level} requested but the pointshell has {levels} levels")]
    NoSuchLevel {
        /// The level requested.
        level: usize,
        /// Levels of the pointshell.
        levels: usize,
    },
    /// A start index outside the point set.
    #[error("start index {start} is outside the {points} points")]
    StartOutOfRange {
        /// The start index.
        start: usize,
        /// Number of points.
        points: usize,
    },
    /// An inconsistent pointshell (bad level offsets, lengths or normals).
    #[error("inconsistent pointshell: {0}")]
    Inconsistent(String),
}

/// Cumulative point counts of levels 0..L: N1, 4 N1, 16 N1, ... (the end offsets of the
/// levels), checked against [`MAX_POINTS`].
pub(crate) fn cumulative_counts(
    first: usize,
    levels: usize,
) -> Result<Vec<usize>, PointshellError> {
    if levels == 0 {
        return Err(PointshellError::NoLevels);
    }
    if first < 4 {
        return Err(PointshellError::TooFewPoints {
            requested: first,
            minimum: 4,
        });
    }
    let mut counts = Vec::with_capacity(levels);
    let mut n = first;
    for i in 0..levels {
        if i > 0 {
            n = n.saturating_mul(4);
        }
        if n > MAX_POINTS {
            return Err(PointshellError::TooManyPoints {
                first,
                levels,
                limit: MAX_POINTS,
            });
        }
        counts.push(n);
    }
    Ok(counts)
}

/// Parameters of [`sample_pointshell`].
#[derive(Debug, Clone, PartialEq)]
pub struct PointshellParams {
    /// N1: points of level 0 (at least 4).
    pub first_level_points: usize,
    /// Number of levels (at least 1); levels 0..=i hold N1 * 4^i points.
    pub levels: usize,
    /// Level-set value sampled: 0 for the surface, > 0 for the outward offset surface.
    pub offset: f64,
    /// Most repulsion iterations per level (0: the unrelaxed random sampling).
    pub iterations: usize,
    /// Seed of the random initial positions; the same seed gives the same pointshell.
    pub seed: u64,
    /// eta: a particle moves eta * R times its net (tangential) force per iteration.
    pub step: f64,
    /// c in R = c sqrt(area / cumulative count).
    pub radius_factor: f64,
    /// A level stops early when the mean move of its points falls below this times R.
    pub convergence: f64,
}

impl Default for PointshellParams {
    fn default() -> Self {
        PointshellParams {
            first_level_points: 1330,
            levels: 4,
            offset: 0.0,
            iterations: 40,
            seed: 1,
            step: 0.15,
            radius_factor: 2.0,
            convergence: 1e-3,
        }
    }
}

impl PointshellParams {
    /// Checks every parameter; returns the cumulative counts.
    pub fn validate(&self) -> Result<Vec<usize>, PointshellError> {
        let positive = |name, value: f64| {
            if value.is_finite() && value > 0.0 {
                Ok(())
            } else {
                Err(PointshellError::InvalidParameter {
                    name,
                    value,
                    reason: "must be positive and finite",
                })
            }
        };
        if !(self.offset.is_finite() && self.offset >= 0.0) {
            return Err(PointshellError::InvalidParameter {
                name: "offset",
                value: self.offset,
                reason: "must be zero or positive (an outward offset)",
            });
        }
        positive("step", self.step)?;
        positive("radius_factor", self.radius_factor)?;
        if !(self.convergence.is_finite() && self.convergence >= 0.0) {
            return Err(PointshellError::InvalidParameter {
                name: "convergence",
                value: self.convergence,
                reason: "must be zero or positive",
            });
        }
        cumulative_counts(self.first_level_points, self.levels)
    }
}

/// A multi-resolution oriented pointshell: points ordered by level.
#[derive(Debug, Clone, PartialEq)]
pub struct Pointshell {
    /// Positions; level i occupies `points[level_offsets[i]..level_offsets[i + 1]]`.
    pub points: Vec<Point3<f64>>,
    /// Unit inward normals, one per point.
    pub normals: Vec<Vector3<f64>>,
    /// Level boundaries: `level_offsets[0]` = 0, the last entry = points.len(), one more entry
    /// than levels.
    pub level_offsets: Vec<usize>,
    /// Per level: the repulsion radius R (repulsion shells) or the covering radius of the
    /// levels up to it (farthest-point shells; 0 for the last level).
    pub radii: Vec<f64>,
    /// The level-set value the points sample (0: the surface itself); 0 for shells built
    /// from arbitrary point sets.
    pub offset: f64,
}

impl Pointshell {
    /// Number of levels.
    pub fn num_levels(&self) -> usize {
        self.level_offsets.len().saturating_sub(1)
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.points.len()
    }

    /// Whether there are no points.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// The index range of level `i` (empty past the last level).
    pub fn level(&self, i: usize) -> Range<usize> {
        match (self.level_offsets.get(i), self.level_offsets.get(i + 1)) {
            (Some(&a), Some(&b)) => a..b,
            _ => 0..0,
        }
    }

    /// Checks the invariants: lengths, level offsets from 0 to len and increasing,
    /// one radius per level, finite points and unit normals (to 1e-6).
    pub fn validate(&self) -> Result<(), PointshellError> {
        let bad = |s: String| Err(PointshellError::Inconsistent(s));
        if self.normals.len() != self.points.len() {
            return bad(format!(
                "{} points but {} normals",
                self.points.len(),
                self.normals.len()
            ));
        }
        if self.level_offsets.first() != Some(&0)
            || self.level_offsets.last() != Some(&self.points.len())
        {
            return bad("level offsets must run from 0 to the point count".into());
        }
        if self.level_offsets.windows(2).any(|w| w[0] >= w[1]) {
            return bad("level offsets must increase strictly".into());
        }
        if self.radii.len() != self.num_levels() {
            return bad(format!(
                "{} radii for {} levels",
                self.radii.len(),
                self.num_levels()
            ));
        }
        for (i, (p, n)) in self.points.iter().zip(&self.normals).enumerate() {
            if !p.iter().all(|c| c.is_finite()) {
                return Err(PointshellError::NonFinite {
                    what: "point",
                    index: i,
                });
            }
            if !is_unit(n) {
                return Err(PointshellError::NonFinite {
                    what: "normal",
                    index: i,
                });
            }
        }
        Ok(())
    }
}

/// Whether n is a unit vector to 1e-6 (false for NaN).
fn is_unit(n: &Vector3<f64>) -> bool {
    (n.norm() - 1.0).abs() <= 1e-6
}

/// What the repulsion did on one level of [`sample_pointshell_with_stats`] (the command
/// line prints them as a table).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LevelStats {
    /// New points of this level.
    pub points: usize,
    /// Repulsion radius R of this level.
    pub radius: f64,
    /// Repulsion iterations done (at most [`PointshellParams::iterations`]).
    pub iterations: usize,
    /// Mean move of the last iteration divided by R (0 when no iteration ran).
    pub mean_move: f64,
    /// Whether the level stopped because the mean move fell below
    /// [`PointshellParams::convergence`] (else: out of iterations).
    pub converged: bool,
    /// Wall-clock seconds of the level: seeding, projection and repulsion.
    pub seconds: f64,
}

/// Samples a multi-resolution pointshell of the level set d = `params.offset` of a closed
/// mesh by particle repulsion (see the module documentation): `distance` must be the
/// [`MeshDistance`] of `mesh`. Each level is one `progress` stage, named
/// `"level 2/4 (180 new points)"`, with the most iterations as its total and the
/// iterations done `set` after each one. The output is deterministic for a given seed
/// (the Jacobi update makes it independent of the thread count).
pub fn sample_pointshell(
    distance: &MeshDistance,
    mesh: &SurfaceMesh,
    params: &PointshellParams,
    progress: &dyn Progress,
) -> Result<Pointshell, PointshellError> {
    sample_pointshell_with_stats(distance, mesh, params, progress).map(|(shell, _)| shell)
}

/// [`sample_pointshell`], also returning what the repulsion did on each level (one
/// [`LevelStats`] per level, in level order).
pub fn sample_pointshell_with_stats(
    distance: &MeshDistance,
    mesh: &SurfaceMesh,
    params: &PointshellParams,
    progress: &dyn Progress,
) -> Result<(Pointshell, Vec<LevelStats>), PointshellError> {
    let counts = params.validate()?;
    check_offset(params.offset, mesh)?;
    let sampler = SurfaceSampler::new(mesh)?;
    let area = sampler.area();
    let offset = params.offset;
    let set = LevelSet::new(distance, mesh, offset);
    let total = *counts.last().unwrap_or(&0);
    let mut points: Vec<Point3<f64>> = Vec::with_capacity(total);
    let mut outward: Vec<Vector3<f64>> = Vec::with_capacity(total);
    let mut level_offsets = vec![0usize];
    let mut radii = Vec::with_capacity(counts.len());
    let mut stats = Vec::with_capacity(counts.len());
    let mut rng = SplitMix64::new(params.seed);
    for (level, &cumulative) in counts.iter().enumerate() {
        let started = Instant::now();
        let begin = points.len();
        let new = cumulative - begin;
        let spacing = (area / cumulative as f64).sqrt();
        let radius = params.radius_factor * spacing;
        let cap = 0.5 * spacing;
        progress.stage(
            &format!("level {}/{} ({new} new points)", level + 1, counts.len()),
            params.iterations as u64,
        );
        let init: Vec<(Point3<f64>, Vector3<f64>)> = sampler
            .sample(new, &mut rng)
            .par_iter()
            .map(|x| set.project(x))
            .collect();
        for (p, n) in init {
            points.push(p);
            outward.push(n);
        }
        let shell = (&mut points, &mut outward);
        let mut level_stats = relax_level(shell, begin, (radius, cap), &set, params, progress);
        level_stats.seconds = started.elapsed().as_secs_f64();
        stats.push(level_stats);
        level_offsets.push(points.len());
        radii.push(radius);
    }
    let shell = Pointshell {
        points,
        normals: outward.into_iter().map(|n| -n).collect(),
        level_offsets,
        radii,
        offset,
    };
    // A projection that failed (a query whose distance overflows) leaves NaN: an error,
    // never a shell with non-finite points.
    if let Some(index) = shell
        .points
        .iter()
        .position(|p| !p.iter().all(|c| c.is_finite()))
    {
        return Err(PointshellError::NonFinite {
            what: "point",
            index,
        });
    }
    Ok((shell, stats))
}

/// The repulsion of one level: the points from `begin` on (positions and outward
/// normals in `shell`) relaxed at `radius` (moves capped at `radii.1`) on the level set
/// until their mean move is below the convergence or the iterations run out, each
/// iteration `set` on `progress`, whose stage it finishes.
fn relax_level(
    shell: (&mut Vec<Point3<f64>>, &mut Vec<Vector3<f64>>),
    begin: usize,
    radii: (f64, f64),
    set: &LevelSet,
    params: &PointshellParams,
    progress: &dyn Progress,
) -> LevelStats {
    let (points, outward) = shell;
    let (radius, cap) = radii;
    let mut stats = LevelStats {
        points: points.len() - begin,
        radius,
        iterations: 0,
        mean_move: 0.0,
        converged: false,
        seconds: 0.0,
    };
    for iteration in 1..=params.iterations {
        let mean_move = repulsion::relax(points, outward, begin, radius, params.step, cap, set);
        progress.set(iteration as u64);
        stats.iterations = iteration;
        stats.mean_move = mean_move;
        if mean_move < params.convergence {
            stats.converged = true;
            break;
        }
    }
    progress.finish();
    stats
}

/// Refuses an offset that is not finite and non-negative, or that exceeds
/// [`MAX_OFFSET_DIAGONALS`] times the bounding-box diagonal of `mesh`.
pub fn check_offset(offset: f64, mesh: &SurfaceMesh) -> Result<(), PointshellError> {
    if !(offset.is_finite() && offset >= 0.0) {
        return Err(PointshellError::InvalidParameter {
            name: "offset",
            value: offset,
            reason: "must be zero or positive (an outward offset) and finite",
        });
    }
    let b = mesh.bounding_box();
    let diagonal = if b.is_empty() { 0.0 } else { b.extent().norm() };
    let limit = MAX_OFFSET_DIAGONALS * diagonal;
    // NaN limits (a mesh whose box is not finite) refuse every positive offset.
    if offset > 0.0 && (limit.is_nan() || offset > limit) {
        return Err(PointshellError::OffsetTooLarge {
            offset,
            diagonal,
            limit,
        });
    }
    Ok(())
}

/// Builds the [`MeshDistance`] of `mesh` and samples its pointshell; a mesh that is not
/// closed gives [`PointshellError::Distance`] with a hint to use the offset surface of
/// the soup.
pub fn sample_pointshell_of_mesh(
    mesh: &SurfaceMesh,
    params: &PointshellParams,
    progress: &dyn Progress,
) -> Result<Pointshell, PointshellError> {
    params.validate()?;
    let distance = MeshDistance::new(mesh)?;
    sample_pointshell(&distance, mesh, params, progress)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cumulative_counts_quadruple_and_reject_bad_requests() {
        assert_eq!(
            cumulative_counts(1330, 4).unwrap(),
            vec![1330, 5320, 21280, 85120]
        );
        assert!(matches!(
            cumulative_counts(3, 2),
            Err(PointshellError::TooFewPoints { .. })
        ));
        assert!(matches!(
            cumulative_counts(10, 0),
            Err(PointshellError::NoLevels)
        ));
        assert!(matches!(
            cumulative_counts(1000, 40),
            Err(PointshellError::TooManyPoints { .. })
        ));
    }
}
