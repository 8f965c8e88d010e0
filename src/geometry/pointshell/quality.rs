//! Quality of a pointshell (thesis 3.8.1's goal of an even sampling): coverage and
//! uniformity of the points of levels 0..=level.
//!
//! With h = sqrt(A / N) the target spacing of N points on area A:
//!
//! ```text
//!     coverage   = max over surface samples s of min_i |s - p_i| / h
//!     mean gap   = mean over surface samples s of min_i |s - p_i| / h
//!     uniformity = std / mean of the nearest-neighbour distances among the p_i
//! ```
//!
//! A perfect triangular lattice has coverage 1.075 / sqrt(3) = 0.62 and uniformity 0;
//! uniform random points on a plane have uniformity about 0.52.

use nalgebra::Point3;
use rayon::prelude::*;

use super::{LevelSet, PointGrid, Pointshell, PointshellError, SurfaceSampler};

use crate::geometry::sdf::MeshDistance;
use crate::mesh::SurfaceMesh;
use haptics_devices::rng::SplitMix64;

/// Quality of the points of levels 0..=level (see [`Pointshell::quality`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PointshellQuality {
    /// The deepest level included.
    pub level: usize,
    /// Points of levels 0..=level.
    pub count: usize,
    /// Target spacing h = sqrt(area / count).
    pub target_spacing: f64,
    /// Largest gap over the surface samples (distance to the nearest shell point)
    /// divided by h. A perfect triangular lattice gives 1.075 / sqrt(3) = 0.62.
    pub coverage: f64,
    /// Mean gap over the surface samples divided by h.
    pub mean_gap: f64,
    /// Coefficient of variation (standard deviation / mean) of the nearest-neighbour
    /// distance among the shell points: 0 for a perfect lattice, about 0.52 for
    /// uniform random points on a plane.
    pub uniformity: f64,
    /// Smallest nearest-neighbour distance divided by h.
    pub min_separation: f64,
}

/// Coverage and uniformity figures of a point set against samples of the surface it
/// should cover (the pure core of [`Pointshell::quality`]); `area` gives the target
/// spacing sqrt(area / points.len()).
pub fn point_set_quality(
    points: &[Point3<f64>],
    surface_samples: &[Point3<f64>],
    area: f64,
) -> Result<PointshellQuality, PointshellError> {
    if points.len() < 2 {
        return Err(PointshellError::EmptyPointSet);
    }
    let h = (area / points.len() as f64).sqrt();
    let grid = PointGrid::new(points, h);
    let gaps: Vec<f64> = surface_samples
        .par_iter()
        .map(|s| {
            grid.nearest(s, None)
                .map_or(f64::INFINITY, |(_, d2)| d2.sqrt())
        })
        .collect();
    let nn: Vec<f64> = (0..grid.len())
        .into_par_iter()
        .map(|g| {
            grid.nearest(grid.point(g), Some(g))
                .map_or(0.0, |(_, d2)| d2.sqrt())
        })
        .collect();
    let max_gap = gaps.iter().copied().fold(0.0, f64::max);
    let mean_gap = if gaps.is_empty() {
        0.0
    } else {
        gaps.iter().sum::<f64>() / gaps.len() as f64
    };
    let (_, cv) = mean_and_cv(&nn);
    let min_nn = nn.iter().copied().fold(f64::INFINITY, f64::min);
    Ok(PointshellQuality {
        level: 0,
        count: points.len(),
        target_spacing: h,
        coverage: max_gap / h,
        mean_gap: mean_gap / h,
        uniformity: cv,
        min_separation: min_nn / h,
    })
}

/// Mean and coefficient of variation (population standard deviation / mean) of values.
pub fn mean_and_cv(values: &[f64]) -> (f64, f64) {
    if values.is_empty() {
        return (0.0, 0.0);
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    (mean, if mean > 0.0 { var.sqrt() / mean } else { 0.0 })
}

impl Pointshell {
    /// Coverage and uniformity of levels 0..=level on the level set this shell samples
    /// (the surface of `mesh`, or its offset surface at [`Pointshell::offset`]).
    ///
    /// Coverage: `samples` stratified random points are drawn on the mesh (seeded by
    /// `seed`) and projected onto the level set; each one's gap is its distance to the
    /// nearest shell point of levels 0..=level; coverage = max gap / h with the target
    /// spacing h = sqrt(A / count), A the mesh area (for offset > 0 the offset surface
    /// is somewhat larger, so h is slightly small there). Uniformity: coefficient of
    /// variation of the nearest-neighbour distances within levels 0..=level.
    pub fn quality(
        &self,
        mesh: &SurfaceMesh,
        distance: &MeshDistance,
        level: usize,
        samples: usize,
        seed: u64,
    ) -> Result<PointshellQuality, PointshellError> {
        if level >= self.num_levels() {
            return Err(PointshellError::NoSuchLevel {
                level,
                levels: self.num_levels(),
            });
        }
        super::check_offset(self.offset, mesh)?;
        let sampler = SurfaceSampler::new(mesh)?;
        let set = LevelSet::new(distance, mesh, self.offset);
        let raw = sampler.sample(samples, &mut SplitMix64::new(seed));
        let on_set: Vec<Point3<f64>> = if self.offset > 0.0 {
            raw.par_iter().map(|x| set.project(x).0).collect()
        } else {
            raw
        };
        let end = self.level_offsets[level + 1];
        let mut q = point_set_quality(&self.points[..end], &on_set, sampler.area())?;
        q.level = level;
        Ok(q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cv_of_constant_values_is_zero() {
        assert_eq!(mean_and_cv(&[2.0, 2.0, 2.0]), (2.0, 0.0));
        let (m, cv) = mean_and_cv(&[1.0, 3.0]);
        assert_eq!(m, 2.0);
        assert!((cv - 0.5).abs() < 1e-15);
    }
}
