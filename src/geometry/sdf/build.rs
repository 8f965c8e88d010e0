//! Filling the grid of a [`SignedDistanceField`] (thesis 3.11): the nodes of a cubic box
//! of side s = enlarge * (largest side of the mesh's bounding box), centred on the box,
//! with r cells per side,
//!
//! ```text
//!     x_ijk = c - s/2 (1, 1, 1) + h (i, j, k),      h = s / r,      0 <= i, j, k <= r,
//! ```
//!
//! take the signed distance d(x_ijk), by one of two methods ([`SdfMethod`]):
//! - band and propagate (`band.rs`): exact distances within `band` cells of the surface,
//!   Bridson's closest-triangle propagation outside, signs from the band's pseudonormals
//!   flood-filled outward;
//! - exact: one tree query per node, each row bounded by the previous node's distance
//!   plus h (distance is 1-Lipschitz: |d(x + h e)| <= |d(x)| + h).
//!
//! Each stage is reported through [`Progress`] under its [`stage`] name. The polygon-soup
//! path (`super::super::soup`) shares the grid and the unsigned band and propagation.

use nalgebra::{Point3, Vector3};
use rayon::prelude::*;

use super::band::{self, Grid};
use super::{
    check_memory, estimate_bytes, stage, MeshDistance, SdfError, SdfMethod, SdfOptions,
    SignedDistanceField,
};
use crate::mesh::Aabb;
use crate::progress::Progress;

impl SignedDistanceField {
    /// Samples the signed distance of `distance` on a cubic box around the mesh bounding
    /// box, enlarged by `enlarge` about its centre, with `resolution` cells per side, by
    /// the default method ([`SdfMethod::BandAndPropagate`], band
    /// [`DEFAULT_BAND`](super::DEFAULT_BAND) cells). Stages are reported to `progress`.
    pub fn compute(
        distance: &MeshDistance,
        resolution: usize,
        enlarge: f64,
        progress: &dyn Progress,
    ) -> Result<Self, SdfError> {
        let opts = SdfOptions {
            resolution,
            enlarge,
            ..SdfOptions::default()
        };
        Self::compute_with(distance, &opts, progress)
    }

    /// Samples the signed distance of `distance` on the cubic grid of `opts`. Refuses
    /// grids whose working memory ([`estimate_bytes`]) exceeds
    /// [`SdfOptions::memory_budget_bytes`] before allocating anything, grids that cannot
    /// represent the mesh ([`SdfError::GridOutOfRange`]), and meshes
    /// whose components cross or nest ([`MeshDistance::check_solid`]). Each stage (see
    /// [`stage`]) is reported to `progress` with its total, then advanced as it goes.
    pub fn compute_with(
        distance: &MeshDistance,
        opts: &SdfOptions,
        progress: &dyn Progress,
    ) -> Result<Self, SdfError> {
        opts.validate()?;
        check_memory(
            opts.resolution,
            estimate_bytes(opts.resolution, opts.method, distance.triangles.len()),
            opts.memory_budget_bytes,
        )?;
        let grid = cubic_grid(&distance.bounding_box(), opts.resolution, opts.enlarge)?;
        distance.check_solid()?;
        Self::compute_on_grid(distance, &grid, opts, progress)
    }

    /// The field on a given grid (`opts.resolution` and `enlarge` are not used).
    pub(crate) fn compute_on_grid(
        distance: &MeshDistance,
        grid: &Grid,
        opts: &SdfOptions,
        progress: &dyn Progress,
    ) -> Result<Self, SdfError> {
        opts.validate()?;
        let values = match opts.method {
            SdfMethod::Exact => exact_values(distance, grid, progress),
            SdfMethod::BandAndPropagate => band_signed_values(distance, grid, opts.band, progress),
        };
        // The grid checks keep every distance finite; a value that is not is refused
        // here rather than written into a field.
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            return Err(SdfError::GridOutOfRange {
                problem: format!("node {i} has the non-finite distance {}", values[i]),
                side: grid.h * (grid.nodes[0] - 1) as f64,
                spacing: grid.h,
            });
        }
        let cells = grid.nodes.map(|n| n - 1);
        Self::from_values(grid.origin, grid.h, cells, values)
    }
}

/// The cubic grid of `resolution` cells per side over `bounds` enlarged by `enlarge`
/// about its centre. Refuses boxes that are empty or not finite
/// ([`SdfError::DegenerateBox`]) and grids that cannot represent the mesh
/// ([`SdfError::GridOutOfRange`]): a corner that is not finite, a spacing below the
/// floating-point resolution of the box's coordinates (the nodes would coincide), or a
/// box whose diagonal (the largest distance a node can take, the mesh lying inside the
/// box) overflows the f32 node values or, squared, the f64 distance computations.
pub(crate) fn cubic_grid(bounds: &Aabb, resolution: usize, enlarge: f64) -> Result<Grid, SdfError> {
    let ext = bounds.extent();
    let side = ext.max() * enlarge;
    if !(side.is_finite() && side > 0.0 && ext.iter().all(|e| e.is_finite())) {
        return Err(SdfError::DegenerateBox { side });
    }
    let h = side / resolution.max(1) as f64;
    let out_of_range = |problem: String| SdfError::GridOutOfRange {
        problem,
        side,
        spacing: h,
    };
    // The diagonal bounds every node value; its square bounds the squared distances.
    let diagonal = side * 3f64.sqrt();
    // `side` is finite here, so the comparison is not with NaN.
    if diagonal >= MAX_GRID_DISTANCE {
        return Err(out_of_range(format!(
            "the box diagonal {diagonal:e} exceeds {MAX_GRID_DISTANCE:e}, so squared distances would overflow the f32 working values"
        )));
    }
    let center = bounds.center();
    let origin = center - Vector3::repeat(side / 2.0);
    let far = center + Vector3::repeat(side / 2.0);
    if !(origin.iter().chain(far.iter()).all(|c| c.is_finite())) {
        return Err(out_of_range(
            "a corner of the box is not finite".to_string(),
        ));
    }
    let largest = origin
        .iter()
        .chain(far.iter())
        .fold(0.0f64, |m, c| m.max(c.abs()));
    if !(h.is_finite() && h > largest * MIN_RELATIVE_SPACING) {
        return Err(out_of_range(format!(
            "the spacing is below {MIN_RELATIVE_SPACING:e} times the largest box coordinate {largest:e}, so neighbouring nodes would not be distinct"
        )));
    }
    Ok(Grid {
        origin,
        h,
        nodes: [resolution + 1; 3],
    })
}

/// Largest box diagonal a grid accepts (1e16). The band stage keeps *squared*
/// distances in f32 (`band::Slot`), so diagonal^2 must stay below f32::MAX = 3.4e38,
/// i.e. the diagonal below 1.8e19; 1e16 leaves a margin of a million on the squares,
/// and the node values, the outside bound and the f64 arithmetic are then far from
/// overflowing too.
const MAX_GRID_DISTANCE: f64 = 1e16;

/// Smallest grid spacing relative to the largest box coordinate: a few thousand ulps
/// (2^-52 = 2.2e-16), so the nodes origin + h i are distinct and evenly spaced.
const MIN_RELATIVE_SPACING: f64 = 1e-12;

/// The unsigned distance to the triangles on `grid` by band and propagation
/// (`band_cells` >= 1).
pub(crate) fn unsigned_values(
    vertices: &[Point3<f64>],
    triangles: &[[usize; 3]],
    grid: &Grid,
    band_cells: f64,
    progress: &dyn Progress,
) -> Vec<f32> {
    let (tris, slots, width) = band_and_propagate(vertices, triangles, grid, band_cells, progress);
    let fans = band::Fans::new(triangles, vertices.len());
    band::finish_unsigned(grid, &tris, &fans, &slots, width)
}

/// The exact band and the closest-triangle propagation shared by the unsigned and the
/// signed fields: the triangles' corners, the node slots and the band width.
fn band_and_propagate(
    vertices: &[Point3<f64>],
    triangles: &[[usize; 3]],
    grid: &Grid,
    band_cells: f64,
    progress: &dyn Progress,
) -> (Vec<band::Tri>, Vec<band::Slot>, f64) {
    let tris = band::corners(vertices, triangles);
    let width = band_cells * grid.h;
    let mut slots = band::band(grid, &tris, width, progress);
    band::propagate(grid, &tris, &mut slots, width, progress);
    (tris, slots, width)
}

/// The signed distance on `grid` by band, propagation and sign flood fill.
fn band_signed_values(
    distance: &MeshDistance,
    grid: &Grid,
    band_cells: f64,
    progress: &dyn Progress,
) -> Vec<f32> {
    let (tris, mut slots, width) = band_and_propagate(
        &distance.vertices,
        &distance.triangles,
        grid,
        band_cells,
        progress,
    );
    let fans = band::Fans::new(&distance.triangles, distance.vertices.len());
    let known = band::sign_band(grid, &tris, &fans, &mut slots, width, &|t, f| {
        distance.pseudonormal(t, f)
    });
    band::flood_sign(grid, &mut slots, known, progress);
    slots.into_par_iter().map(|s| s.v).collect()
}

/// The signed distance on `grid` by one exact query per node, z-slices in parallel;
/// along each row the previous node's distance plus the spacing bounds the next one
/// (distance is 1-Lipschitz), which prunes the tree search to a few leaves.
fn exact_values(distance: &MeshDistance, grid: &Grid, progress: &dyn Progress) -> Vec<f32> {
    let [nx, ny, nz] = grid.nodes;
    let h = grid.h;
    progress.stage(stage::EXACT, nz as u64);
    let slices: Vec<Vec<f32>> = (0..nz)
        .into_par_iter()
        .map(|k| {
            let mut out = Vec::with_capacity(nx * ny);
            for j in 0..ny {
                let mut prev: Option<f64> = None;
                for i in 0..nx {
                    let p = grid.point(i, j, k);
                    // 1-Lipschitz: |d(p)| <= |d(prev)| + h (with a little slack).
                    let d = match prev {
                        Some(dp) => distance
                            .signed_distance_bounded(&p, dp.abs() + h * (1.0 + 1e-9))
                            .unwrap_or_else(|| distance.signed_distance(&p)),
                        None => distance.signed_distance(&p),
                    };
                    prev = Some(d);
                    out.push(d as f32);
                }
            }
            progress.advance(1);
            out
        })
        .collect();
    progress.finish();
    slices.into_iter().flatten().collect()
}
