//! Options, errors, progress stage names and memory estimate of the distance-field
//! computations (thesis 3.11). [`SdfOptions`] holds the grid resolution, the box
//! enlargement (the cubic box is the mesh's bounding box enlarged 1.5x about its centre,
//! the thesis's setting and Vega's `computeDistanceField` default), the filling method
//! and the exact band's half-width; [`stage`] names what is reported through
//! [`crate::progress::Progress`]; [`estimate_bytes`] refuses a grid before anything is
//! allocated:
//!
//! ```text
//!     bytes = (r + 1)^3 (8 + 4) + 88 T      (band and propagate: 8-byte slot + f32 value
//!                                            per node, corners and slab buckets per
//!                                            triangle)
//!     bytes = (r + 1)^3 8                   (exact queries: rows plus the result)
//! ```
//!
//! for r cells per side and T triangles, refused above [`SdfOptions::memory_budget_bytes`]
//! (default [`MAX_SDF_BYTES`], 2 GiB; the command line's `--max-memory GB` raises it).

use super::band;

/// Errors building distance fields.
#[derive(Debug, thiserror::Error)]
pub enum SdfError {
    /// The mesh has boundary or non-manifold edges, so it has no inside.
    #[error("the mesh is not closed ({boundary} boundary edges, {nonmanifold} non-manifold edges): a signed field needs a closed surface; for a polygon soup use the polygon-soup path (`haptics sdf --soup`: unsigned field, offset surface, then signed field)")]
    NotClosed {
        /// Edges with one triangle.
        boundary: usize,
        /// Edges with more than two triangles.
        nonmanifold: usize,
    },
    /// The closed components cross or nest, so the inside is ambiguous.
    #[error("the mesh's {components} closed components {how} (triangles {first} and {second}): its inside is ambiguous, so it is a polygon soup; use the polygon-soup path (`haptics sdf --soup`: unsigned field, offset surface, then signed field)")]
    NotSolid {
        /// Closed components of the mesh.
        components: usize,
        /// A triangle of one offending component.
        first: usize,
        /// A triangle of the other.
        second: usize,
        /// "cross" or "nest".
        how: &'static str,
    },
    /// The mesh has no triangles.
    #[error("the mesh has no triangles")]
    Empty,
    /// The bounding box has no extent or is not finite.
    #[error("the mesh's bounding box is degenerate or not finite (largest side {side}): no grid fits it")]
    DegenerateBox {
        /// The largest side of the box.
        side: f64,
    },
    /// The grid over the (enlarged) bounding box cannot be represented: a corner is not
    /// finite, the spacing vanishes at the box's coordinates, or the distances would
    /// overflow the f32 node values.
    #[error("the distance grid cannot represent this mesh: {problem} (box side {side:e}, spacing {spacing:e}); rescale or recentre the mesh")]
    GridOutOfRange {
        /// What overflows, in words.
        problem: String,
        /// Side of the enlarged cubic box.
        side: f64,
        /// Grid spacing.
        spacing: f64,
    },
    /// A query point that is not finite, or so far from the mesh that its distance
    /// overflows.
    #[error("distance query at ({}, {}, {}): {reason}", point[0], point[1], point[2])]
    BadQuery {
        /// The query point.
        point: [f64; 3],
        /// Why it has no distance.
        reason: &'static str,
    },
    /// The grid's working memory would exceed the budget
    /// ([`SdfOptions::memory_budget_bytes`], default [`MAX_SDF_BYTES`]).
    #[error("resolution {resolution} needs about {} ({bytes} bytes), above the memory limit of {} ({limit} bytes); choose a smaller resolution, or raise the limit with `--max-memory GB` (haptics sdf) or SdfOptions::memory_budget_bytes", human_bytes(*bytes), human_bytes(*limit))]
    TooLarge {
        /// The requested resolution.
        resolution: usize,
        /// Its estimated working memory.
        bytes: u64,
        /// The budget it exceeds.
        limit: u64,
    },
    /// A grid with zero cells along an axis.
    #[error("resolution must be at least 1")]
    ZeroResolution,
    /// An option outside its valid range.
    #[error("invalid option: {what}")]
    InvalidOption {
        /// What is wrong.
        what: String,
    },
}

const GIB: f64 = (1u64 << 30) as f64;

/// Bytes in GiB (two decimals), or in MiB below 1 GiB.
fn human_bytes(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= GIB {
        format!("{:.2} GiB", b / GIB)
    } else {
        format!("{:.2} MiB", b / (1u64 << 20) as f64)
    }
}

/// How [`SignedDistanceField::compute_with`](super::SignedDistanceField::compute_with)
/// fills the grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SdfMethod {
    /// Exact distances in a narrow band, closest-triangle propagation outside it, signs
    /// flood-filled from the band (fast; far nodes are an upper bound, almost always
    /// exact).
    #[default]
    BandAndPropagate,
    /// One exact tree query per node (slow; every node exact).
    Exact,
}

/// The default enlargement of the cubic box about the mesh's bounding box (thesis 3.11,
/// Vega's `computeDistanceField` default).
pub const DEFAULT_ENLARGE: f64 = 1.5;
/// The default half-width of the exact band, in cells.
pub const DEFAULT_BAND: f64 = 3.0;

/// Options of
/// [`SignedDistanceField::compute_with`](super::SignedDistanceField::compute_with).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SdfOptions {
    /// Cells per side of the cubic grid (nodes: resolution + 1 per side).
    pub resolution: usize,
    /// Side of the cubic box over the largest side of the mesh's bounding box (>= 1).
    pub enlarge: f64,
    /// How the grid is filled.
    pub method: SdfMethod,
    /// Half-width of the exact band in cells (>= 1: the sign flood fill needs it).
    pub band: f64,
    /// Working memory allowed for the grid ([`estimate_bytes`]), in bytes; larger grids
    /// are refused before anything is allocated. Default [`MAX_SDF_BYTES`].
    pub memory_budget_bytes: u64,
}

impl Default for SdfOptions {
    fn default() -> Self {
        SdfOptions {
            resolution: 128,
            enlarge: DEFAULT_ENLARGE,
            method: SdfMethod::BandAndPropagate,
            band: DEFAULT_BAND,
            memory_budget_bytes: MAX_SDF_BYTES,
        }
    }
}

impl SdfOptions {
    /// Checks the resolution, the enlargement and the band width.
    pub(crate) fn validate(&self) -> Result<(), SdfError> {
        if self.resolution == 0 {
            return Err(SdfError::ZeroResolution);
        }
        if !(self.enlarge.is_finite() && self.enlarge >= 1.0) {
            return Err(SdfError::InvalidOption {
                what: format!(
                    "box enlargement {} must be a finite number >= 1",
                    self.enlarge
                ),
            });
        }
        if !(self.band.is_finite() && self.band >= 1.0) {
            return Err(SdfError::InvalidOption {
                what: format!(
                    "band width {} cells must be a finite number >= 1 (the sign flood fill needs a band at least one cell wide)",
                    self.band
                ),
            });
        }
        Ok(())
    }
}

/// The stage names the field computations report through
/// [`Progress::stage`](crate::progress::Progress::stage), with what each one counts.
pub mod stage {
    /// Exact per-node queries ([`super::SdfMethod::Exact`]); counts z-slices.
    pub const EXACT: &str = "exact queries";
    /// The narrow band; counts slabs of z-planes.
    pub const BAND: &str = "narrow band";
    /// Closest-triangle propagation; counts sweeps.
    pub const PROPAGATE: &str = "propagation sweeps";
    /// Sign flood fill; counts signed nodes.
    pub const SIGN: &str = "sign flood fill";
    /// Polygon soups: marching tetrahedra of the offset surface; counts z-layers of cells.
    pub const ISOSURFACE: &str = "offset surface";
    /// Polygon soups: dropping enclosed components; counts components.
    pub const COMPONENTS: &str = "enclosed components";
}

/// The default memory budget of a field ([`SdfOptions::memory_budget_bytes`]): 2 GiB
/// (resolution 512 with the band method), so a mistyped resolution is refused before it
/// allocates; raise it explicitly (`haptics sdf --max-memory GB`) for larger grids.
pub const MAX_SDF_BYTES: u64 = 2 << 30;

/// Nodes of a cubic grid with `resolution` cells per side (saturating).
fn node_count(resolution: usize) -> u64 {
    (resolution as u64).saturating_add(1).saturating_pow(3)
}

/// Peak bytes of
/// [`SignedDistanceField::compute_with`](super::SignedDistanceField::compute_with) for a
/// mesh of `triangles` triangles: per node, the 8-byte working slot plus the 4-byte
/// result (band method), or the per-slice rows plus the flattened result (exact); per
/// triangle, its corners (72 bytes) and a few slab-bucket entries.
pub fn estimate_bytes(resolution: usize, method: SdfMethod, triangles: usize) -> u64 {
    let nodes = node_count(resolution);
    match method {
        SdfMethod::Exact => nodes.saturating_mul(8),
        SdfMethod::BandAndPropagate => nodes
            .saturating_mul(band::SLOT_BYTES + 4)
            .saturating_add((triangles as u64).saturating_mul(72 + 16)),
    }
}

/// Refuses `bytes` above the budget `limit`.
pub(crate) fn check_memory(resolution: usize, bytes: u64, limit: u64) -> Result<(), SdfError> {
    if bytes > limit {
        return Err(SdfError::TooLarge {
            resolution,
            bytes,
            limit,
        });
    }
    Ok(())
}
