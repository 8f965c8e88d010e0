//! Every file format the engine reads, behind one byte-level entry point.
//!
//! Each reader of the engine has a `read_*` function that opens a file and a `parse_*`
//! function that takes its bytes; this module lists them all in one table, [`Format`], so
//! that the fuzzers (`fuzz/`, one cargo-fuzz target per format) and the corpus replay test
//! (`tests/fuzz_corpus.rs`) drive exactly the code a user's file goes through. The
//! contract they check, for any input whatever:
//! - no panic, no unbounded loop, no allocation far beyond the input's size;
//! - either a parsed value, or an error whose message names the file.
//!
//! Inputs are bytes because files are: text formats go through the same UTF-8 check as
//! their `read_*` functions (an invalid byte is an error with its position).

use std::path::{Path, PathBuf};

use crate::geometry::dist::parse_dist;
use crate::geometry::pointshell::Pointshell;
use crate::mesh::interp::parse_interp;
use crate::mesh::text::as_utf8;
use crate::mesh::{bou::parse_bou, parse_obj, stl::parse_stl, tetgen::parse_tetgen};
use crate::reduction::bake::parse_manifest;
use crate::reduction::vega::{parse_cub, parse_matrix, Precision};
use crate::scene::format::parse_scene_bytes;
use haptics_devices::hid::profile::Profile;
use haptics_devices::trajectory::parse_trajectory;

/// A file format the engine reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// Wavefront `.obj` surface meshes.
    Obj,
    /// `.stl` surface meshes, ASCII or binary.
    Stl,
    /// Vega `.veg` volumetric meshes (without `*INCLUDE`, which reads other files).
    Veg,
    /// Vega `.bou` fixed-vertex lists.
    Bou,
    /// Vega `.interp` render-mesh interpolation weights.
    Interp,
    /// TetGen `.node` and `.ele` files; the input holds the `.node` text, a NUL byte,
    /// then the `.ele` text.
    TetGen,
    /// Vega matrixIO `.U` files (8-byte floats).
    MatrixU,
    /// Vega matrixIO `.float` files (4-byte floats).
    MatrixFloat,
    /// Vega `.cub` cubic reduced-force polynomials.
    Cub,
    /// Signed distance fields, `.dist`.
    Dist,
    /// Multi-resolution pointshells, `.pshell`.
    Pointshell,
    /// Scene files, TOML.
    Scene,
    /// Recorded stylus trajectories, CSV.
    Trajectory,
    /// HID device profiles, TOML.
    DeviceProfile,
    /// Baked-model manifests, `manifest.toml`.
    Manifest,
    /// COLLADA `.dae` meshes (OMPL.app's robots and worlds).
    Collada,
    /// glTF 2.0 meshes (`.glb`, or `.gltf` with its buffers inside).
    Gltf,
    /// OMPL.app problem definitions, `.cfg`.
    OmplProblem,
    /// OMPL geometric paths of SE(3) states, `.path`.
    OmplPath,
}

impl Format {
    /// Every format, in a fixed order.
    pub const ALL: [Format; 19] = [
        Format::Obj,
        Format::Stl,
        Format::Veg,
        Format::Bou,
        Format::Interp,
        Format::TetGen,
        Format::MatrixU,
        Format::MatrixFloat,
        Format::Cub,
        Format::Dist,
        Format::Pointshell,
        Format::Scene,
        Format::Trajectory,
        Format::DeviceProfile,
        Format::Manifest,
        Format::Collada,
        Format::Gltf,
        Format::OmplProblem,
        Format::OmplPath,
    ];

    /// The short name: the fuzz target's and the corpus directory's name.
    pub fn name(self) -> &'static str {
        match self {
            Format::Obj => "obj",
            Format::Stl => "stl",
            Format::Veg => "veg",
            Format::Bou => "bou",
            Format::Interp => "interp",
            Format::TetGen => "tetgen",
            Format::MatrixU => "matrix_u",
            Format::MatrixFloat => "matrix_float",
            Format::Cub => "cub",
            Format::Dist => "dist",
            Format::Pointshell => "pointshell",
            Format::Scene => "scene",
            Format::Trajectory => "trajectory",
            Format::DeviceProfile => "device_profile",
            Format::Manifest => "manifest",
            Format::Collada => "collada",
            Format::Gltf => "gltf",
            Format::OmplProblem => "ompl_problem",
            Format::OmplPath => "ompl_path",
        }
    }

    /// The format with this [`Format::name`] (how each fuzz target picks its format).
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The file name the input is parsed under (errors must name it).
    pub fn file_name(self) -> &'static str {
        match self {
            Format::Obj => "input.obj",
            Format::Stl => "input.stl",
            Format::Veg => "input.veg",
            Format::Bou => "input.bou",
            Format::Interp => "input.interp",
            Format::TetGen => "input.node",
            Format::MatrixU => "input.U",
            Format::MatrixFloat => "input.float",
            Format::Cub => "input.cub",
            Format::Dist => "input.dist",
            Format::Pointshell => "input.pshell",
            Format::Scene => "input.toml",
            Format::Trajectory => "input.csv",
            Format::DeviceProfile => "input-profile.toml",
            Format::Manifest => "manifest.toml",
            Format::Collada => "input.dae",
            Format::Gltf => "input.glb",
            Format::OmplProblem => "input.cfg",
            Format::OmplPath => "input.path",
        }
    }
}

/// Where an input of `format` is parsed: the bare [`Format::file_name`], except that a
/// scene sits in the bundled `assets/scenes` so that its relative paths reach the
/// bundled models, as the shipped scenes' do.
fn input_path(format: Format) -> PathBuf {
    match format {
        Format::Scene => crate::assets::asset("scenes").join(format.file_name()),
        _ => PathBuf::from(format.file_name()),
    }
}

/// Parses `bytes` as `format`, under the name [`Format::file_name`] (and `input.ele` for
/// the second half of a TetGen input). Returns the error's message on failure.
pub fn parse(format: Format, bytes: &[u8]) -> Result<(), String> {
    let path = &input_path(format);
    let text = || as_utf8(bytes, path).map_err(|e| e.to_string());
    match format {
        Format::Obj => done(parse_obj(text()?, path)),
        Format::Stl => done(parse_stl(bytes, path)),
        Format::Veg => done(crate::mesh::veg::parse_veg(text()?, path)),
        Format::Bou => done(parse_bou(text()?, path, None)),
        Format::Interp => done(parse_interp(text()?, path, None, None)),
        Format::TetGen => {
            let split = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
            let ele_path = Path::new("input.ele");
            let node = as_utf8(&bytes[..split], path).map_err(|e| e.to_string())?;
            let ele = as_utf8(bytes.get(split + 1..).unwrap_or(&[]), ele_path)
                .map_err(|e| e.to_string())?;
            let material = crate::mesh::read::default_material();
            done(parse_tetgen(node, path, ele, ele_path, &material))
        }
        Format::MatrixU => done(parse_matrix(bytes, path, Precision::F64)),
        Format::MatrixFloat => done(parse_matrix(bytes, path, Precision::F32)),
        Format::Cub => done(parse_cub(bytes, path)),
        Format::Dist => done(parse_dist(bytes, path)),
        Format::Pointshell => done(Pointshell::parse(bytes, path)),
        Format::Scene => done(parse_scene_bytes(bytes, path)),
        Format::Trajectory => done(parse_trajectory(bytes, path)),
        Format::DeviceProfile => done(Profile::from_bytes(bytes, path)),
        Format::Manifest => done(parse_manifest(text()?, path)),
        Format::Collada => done(crate::mesh::collada::parse_collada(bytes, path)),
        Format::Gltf => done(crate::mesh::gltf::parse_gltf(bytes, path, None)),
        Format::OmplProblem => done(crate::check::ompl::parse_problem(bytes, path)),
        Format::OmplPath => done(crate::check::ompl::parse_path(bytes, path)),
    }
}

/// A reader's result with the value dropped and the error as its message.
fn done<T, E: std::fmt::Display>(result: Result<T, E>) -> Result<(), String> {
    result.map(drop).map_err(|e| e.to_string())
}

/// Parses `bytes` as `format` and checks the contract of this module: an error must
/// name the file. Returns a description of the breach, if any (a panic, which is the
/// other breach, propagates).
pub fn check_contract(format: Format, bytes: &[u8]) -> Result<(), String> {
    match parse(format, bytes) {
        Ok(()) => Ok(()),
        Err(message) => {
            let names_file = message.contains(format.file_name())
                || (format == Format::TetGen && message.contains("input.ele"));
            if names_file {
                Ok(())
            } else {
                Err(format!(
                    "the {} error does not name the file {}: {message}",
                    format.name(),
                    format.file_name()
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        for f in Format::ALL {
            assert_eq!(Format::from_name(f.name()), Some(f));
        }
        let mut names: Vec<_> = Format::ALL.iter().map(|f| f.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Format::ALL.len());
    }

    #[test]
    fn empty_and_binary_garbage_are_errors_that_name_the_file() {
        for f in Format::ALL {
            for input in [&b""[..], &[0xff, 0xfe, 0x00, 0x80][..]] {
                check_contract(f, input).unwrap();
            }
        }
    }
}
