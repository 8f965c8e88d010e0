//! Geometry for contact: exact point-triangle distances and signed distance fields
//! (thesis 3.11). The pointshell, the BD-tree and the traversal build on these
//! (issue: time-critical contact).

pub mod sdf;
pub mod triangle;

pub use sdf::{ClosestPoint, MeshDistance, SdfError, SignedDistanceField};
