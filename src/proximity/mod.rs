//! Proximity queries between triangle meshes, the low-level machinery (the role of
//! parry's `query`) that the path check, the planner and the compliant check call:
//!
//! - [`bvh`]: a bounding-volume hierarchy over a triangle mesh with its queries: exact
//!   or slack distances between two meshes, the point distance and the inside test, the
//!   sweep of a rigid motion over an interval and the planner's decision;
//! - [`exact`]: exact distances and crossings between triangles and segments (Ericson,
//!   "Real-Time Collision Detection", 5.1.9, 5.2);
//! - [`rigid`]: SE(3) states, their interpolation and the motion bound of a segment.
//!
//! The point-triangle closest point is [`crate::geometry::triangle::closest_point`].

pub mod bvh;
pub mod exact;
pub mod rigid;
