//! Meshes: surface (triangle) and volumetric (tet / hex) meshes, their readers and
//! writers, the voxelizer, and the embedding of a render mesh in a volumetric mesh.
//!
//! This is the first stage of the data flow (DESIGN.md): everything downstream (finite
//! elements, reduction, contact, rendering) starts from these types. Every reader returns
//! a [`MeshError`] naming the file, the line or byte offset, and what was expected.

pub mod error;
pub mod surface;
pub mod interp;
pub mod volume;
pub mod voxelize;
pub mod generate;
pub mod embed;

pub use interp::Interpolation;
pub use error::{Location, MeshError};
pub use surface::{Aabb, SurfaceMesh};
pub use volume::{ElementKind, Material, VolumeMesh};
pub use voxelize::{hex_to_tets, voxelize, Voxelization, VoxelizeError, VoxelizeOptions};
pub use generate::{box_hex_mesh, box_tet_mesh, vertices_where};
pub use embed::{embed, EmbedError, Embedding};
