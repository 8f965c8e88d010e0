//! Proximity queries on triangle meshes, the low-level machinery (the role of parry's
//! `query`) that the signed distance, the path check, the planner and the compliant
//! check call:
//!
//! - [`triangle`]: the closest point of a triangle to a point, with the feature (face,
//!   edge or vertex) it lies on (Ericson, "Real-Time Collision Detection", 5.1.5);
//! - [`exact`]: exact distances and crossings between triangles and segments (Ericson,
//!   5.1.9, 5.2), and the interval over which two triangles meet under a translation;
//! - [`bvh`]: a bounding-volume hierarchy over a triangle mesh with its queries: a
//!   point's closest triangle (which [`crate::geometry::MeshDistance`] signs by its
//!   pseudonormal), the inside test by ray parity, exact or slack distances between two
//!   meshes, the sweep of a rigid motion over an interval, the planner's decision and
//!   the first contact of a translation;
//! - [`rigid`]: SE(3) states, their interpolation and the motion bound of a segment.
//!
//! Two inside tests answer for two kinds of mesh: the signed distance's pseudonormal
//! sign needs a closed, consistently oriented surface and is exact at any distance;
//! [`bvh::Bvh::contains`] counts ray crossings, which open and soup meshes (OMPL.app's)
//! allow.
//!
//! The haptic cycle's sweep ([`crate::contact::continuous::CycleMotion`]) is a screw
//! motion from the start of a cycle, about the moving grasp point, cut at its first
//! contact; a path check's interval ([`bvh::Motion`]) is seen from its middle, for
//! directional bounds. Both bound a point's travel with [`rigid::screw_bound`].

pub mod bvh;
pub mod exact;
pub mod rigid;
pub mod triangle;
