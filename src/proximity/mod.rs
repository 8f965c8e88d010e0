//! Proximity queries between triangle meshes, the low-level machinery (the role of
//! parry's `query`) that the path check, the planner and the compliant check call:
//!
//! - [`bvh`]: a bounding-volume hierarchy over a triangle mesh with its queries: exact
//!   or slack distances between two meshes, the point distance and the inside test, the
//!   sweep of a rigid motion over an interval, the planner's decision and the first
//!   contact of a translation;
//! - [`exact`]: exact distances and crossings between triangles and segments (Ericson,
//!   "Real-Time Collision Detection", 5.1.9, 5.2), and the interval over which two
//!   triangles meet under a translation;
//! - [`rigid`]: SE(3) states, their interpolation and the motion bound of a segment.
//!
//! The point-triangle closest point is [`crate::geometry::triangle::closest_point`].
//!
//! Two neighbours answer related questions with their own structures, for reasons:
//! - the signed distance of a closed mesh ([`crate::geometry::sdf::MeshDistance`])
//!   keeps a compact tree of boxes only (four triangles a leaf, a fixed stack), which its
//!   point queries at 1 kHz and over every grid node of a bake walk with a few cache
//!   lines, and signs by the pseudonormal of the closest feature, which needs a closed,
//!   consistently oriented mesh; [`bvh::Bvh`] carries spheres and oriented boxes for
//!   mesh-mesh queries, and its inside test counts ray crossings, which open and soup
//!   meshes (OMPL.app's) allow;
//! - the haptic cycle's sweep ([`crate::contact::continuous::CycleMotion`]) is a screw
//!   motion from the start of a cycle, about the moving grasp point, cut at its first
//!   contact; a path check's interval ([`bvh::Motion`]) is seen from its middle, for
//!   directional bounds. Both bound a point's travel with [`rigid::screw_bound`].

pub mod bvh;
pub mod exact;
pub mod rigid;
