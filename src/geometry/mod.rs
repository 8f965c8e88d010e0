//! Geometry for contact: exact point-triangle distances and signed distance fields
//! (thesis 3.11). The pointshell, the BD-tree and the traversal build on these
//! (issue: time-critical contact).

pub mod dist;
pub mod sdf;
pub mod soup;
pub mod triangle;

pub use sdf::{ClosestPoint, MeshDistance, SdfError, SignedDistanceField};
pub use sdf::{SdfMethod, SdfOptions, SdfProgress, SdfStage};
pub use soup::{soup_offset_surface, soup_signed_field, SoupField, SoupOptions};
