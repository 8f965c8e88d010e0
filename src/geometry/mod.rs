//! Geometry for contact, computed offline: signed
//! distance fields of closed meshes and of polygon soups (thesis 3.11) and their Vega
//! `.dist` files, and multi-resolution pointshells by particle repulsion (3.8.1) or
//! farthest-point ordering, and the embedding of render-mesh vertices in a volumetric
//! mesh. The run-time contact engine in `crate::contact` uses them.

pub mod dist;
pub mod embed;
pub mod farthest;
pub mod nurbs;
pub mod pointshell;
pub mod sdf;
pub mod soup;
pub mod thickness;
pub use pointshell::PointshellQuality;
pub use sdf::{ClosestPoint, MeshDistance, SdfError, SignedDistanceField};

pub use sdf::{SdfMethod, SdfOptions};
