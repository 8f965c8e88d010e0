//! Meshes: surface (triangle) and volumetric (tet / hex) meshes, their readers and
//! writers, and the voxelizer. (The embedding of a render mesh in a volumetric mesh is
//! [`crate::geometry::embed`].)
//!
//! This is the first stage of the data flow (docs/architecture.md, "Two stages: bake,
//! then run"): everything downstream (finite elements, reduction, contact, rendering)
//! starts from these types. Every reader returns a [`MeshError`](error::MeshError) naming the file, the
//! line or byte offset, and what was expected.

pub mod bou;
pub mod collada;
pub mod error;
pub mod fibres;
mod generate;
pub mod gltf;
pub mod interp;
mod obj;
pub mod read;
pub mod shapes;
pub mod stl;
mod surface;
pub mod tetgen;
pub(crate) mod text;
pub mod veg;
pub mod volume;
pub mod voxelize;
pub use generate::{box_hex_mesh, box_surface_mesh, box_tet_mesh, vertices_where};

pub use obj::{parse_obj, read_obj, write_obj};

pub use surface::{Aabb, SurfaceMesh};

pub use text::MAX_MESH_FILE_BYTES;
