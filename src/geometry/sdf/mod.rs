//! Signed distance fields of closed triangle meshes (thesis 3.11).
//!
//! [`MeshDistance`] answers exact queries: the closest point over all triangles through
//! the mesh's bounding-volume hierarchy ([`crate::proximity::bvh::Bvh`]), and the sign from the angle-weighted pseudonormal of the closest feature
//! (face, edge or vertex; Baerentzen and Aanaes 2005): d(p) = -|p - q| when
//! (p - q) . n(q) < 0, else |p - q|.
//!
//! [`SignedDistanceField`] samples d on a regular grid over a cubic box enlarged 1.5x
//! about the mesh's bounding box (the thesis's setting) and looks it up trilinearly
//! inside the box; outside it returns the conservative bound
//! d(p) >= d_box(p) + min over the box surface of d (thesis 3.11), which never exceeds
//! the true distance (distance is 1-Lipschitz), so culling with it is safe.
//!
//! Two ways to fill the grid ([`SdfMethod`]):
//! - `BandAndPropagate` (default, `band.rs`): exact distances in a narrow band around
//!   every triangle, Bridson's closest-triangle propagation outside it, the band's
//!   pseudonormal signs flood-filled outward. Band nodes are exact; far nodes hold the
//!   exact distance to a nearby triangle (an upper bound, exact in almost all nodes).
//! - `Exact`: one tree query per node (slower; every node exact).
//!
//! Polygon soups (meshes that are not closed) go through [`super::soup`]: an unsigned
//! field, an offset surface, then the signed field of that closed surface.
//!
//! Files, by concern:
//! - `distance.rs`: the exact queries ([`MeshDistance`], [`ClosestPoint`], the solid
//!   check);
//! - `build.rs`: the grid construction ([`SignedDistanceField::compute_with`] and the
//!   exact per-node method), with `band.rs` for the band, propagation and sign stages;
//! - `field.rs`: the field and its lookup (trilinear inside the box, the conservative
//!   bound outside, gradient, Lipschitz bound);
//! - `options.rs`: [`SdfOptions`], [`SdfError`], the progress [`stage`] names and the
//!   memory estimate ([`estimate_bytes`], [`MAX_SDF_BYTES`]).

mod band;
mod build;
mod distance;
mod field;
mod options;

pub(crate) use band::Grid;
pub(crate) use build::{cubic_grid, unsigned_values};
pub use distance::{ClosestPoint, MeshDistance};
pub use field::SignedDistanceField;
pub(crate) use options::check_memory;
pub use options::{
    estimate_bytes, stage, SdfError, SdfMethod, SdfOptions, DEFAULT_BAND, DEFAULT_ENLARGE,
    MAX_SDF_BYTES,
};
