//! Meshes: surface (triangle) and volumetric (tet / hex) meshes, their readers and
//! writers, and the voxelizer. (The embedding of a render mesh in a volumetric mesh is
//! [`crate::geometry::embed`].)
//!
//! This is the first stage of the data flow (docs/architecture.md, "Two stages: bake,
//! then run"): everything downstream (finite elements, reduction, contact, rendering)
//! starts from these types. Every reader returns a [`MeshError`] naming the file, the
//! line or byte offset, and what was expected.

pub mod bou;
pub mod collada;
pub mod error;
pub mod fibres;
pub mod generate;
pub mod gltf;
pub mod interp;
pub mod obj;
pub mod read;
pub mod shapes;
pub mod stl;
pub mod surface;
pub mod tetgen;
pub(crate) mod text;
pub mod veg;
pub mod volume;
pub mod voxelize;

pub use self::gltf::read_gltf;
pub use bou::{read_bou, write_bou};
pub use error::{Location, MeshError};
pub use fibres::{fibres_path, parse_fibres, read_fibres, write_fibres};
pub use generate::{box_hex_mesh, box_surface_mesh, box_tet_mesh, vertices_where};
pub use interp::{read_interp, write_interp, Interpolation, MAX_INTERP_WEIGHT};
pub use obj::{parse_obj, read_obj, write_obj};
pub use read::{read_any, read_surface, read_volume, AnyMesh};
pub use stl::{read_stl, write_stl_ascii, write_stl_binary};
pub use surface::{Aabb, SurfaceMesh};
pub use tetgen::read_tetgen;
pub use text::MAX_MESH_FILE_BYTES;
pub use veg::{check_elements, read_veg, write_veg};
pub use volume::{ElementKind, Material, VolumeMesh};
pub use voxelize::{hex_to_tets, voxelize, Voxelization, VoxelizeError, VoxelizeOptions};
