//! Meshes: surface (triangle) and volumetric (tet / hex) meshes, their readers and
//! writers, the voxelizer, and the embedding of a render mesh in a volumetric mesh.
//!
//! This is the first stage of the data flow (DESIGN.md): everything downstream (finite
//! elements, reduction, contact, rendering) starts from these types. Every reader returns
//! a [`MeshError`] naming the file, the line or byte offset, and what was expected.

pub mod error;
pub mod generate;
pub mod interp;
pub mod surface;
pub mod volume;

pub use error::{Location, MeshError};
pub use interp::Interpolation;
pub use surface::{Aabb, SurfaceMesh};
pub use volume::{ElementKind, Material, VolumeMesh};

pub mod bou;
pub mod obj;
pub mod read;
pub mod stl;
pub mod tetgen;
pub(crate) mod text;
pub mod veg;

pub use bou::{read_bou, write_bou};
pub use interp::{read_interp, write_interp};
pub use obj::{parse_obj, read_obj, write_obj};
pub use read::{read_any, read_surface, read_volume, AnyMesh};
pub use stl::{read_stl, write_stl_ascii, write_stl_binary};
pub use tetgen::read_tetgen;
pub use veg::{check_elements, read_veg, write_veg};
