//! Geometry for contact: exact point-triangle distances and signed distance fields
//! (thesis 3.11). The pointshell, the BD-tree and the traversal build on these
//! (issue: time-critical contact).

pub mod farthest;
pub mod pointshell;
pub mod sdf;
pub mod triangle;

pub use farthest::{farthest_point_order, farthest_point_pointshell, FarthestOrdering};
pub use pointshell::{
    sample_pointshell, Pointshell, PointshellError, PointshellParams, PointshellProgress,
    PointshellQuality,
};
pub use sdf::{ClosestPoint, MeshDistance, SdfError, SignedDistanceField};
