//! The physics core of a real-time 6-DOF haptic renderer for reduced deformable contact,
//! after Barbic's 2007 thesis. It needs no GPU and no window: the renderer and the
//! application live in the `haptics-app` crate on top of it.
//!
//! One module per stage of the data flow:
//! - [`mesh`]: surface and volumetric meshes and their file formats (OBJ, STL, glTF,
//!   COLLADA, Vega `.veg`/`.bou`/`.interp`, TetGen), voxelization, embedding, generated
//!   solids;
//! - [`fem`]: StVK hexahedra and tetrahedra (3x3x3 Gauss), edge-based StVK, FVM forces,
//!   hyperelastic tets, the Blemker muscle material, mass and stiffness assembly;
//! - [`reduction`]: linear modes, modal derivatives, the mass-PCA basis, the cubic
//!   reduced-force polynomials, optimized cubature and the baked-model directory (thesis
//!   Ch. 2);
//! - [`dynamics`]: implicit Newmark in full space and reduced (thesis 2.9);
//! - [`geometry`]: signed distance fields, multi-resolution pointshells (3.6-3.11) and
//!   NURBS solids;
//! - [`contact`]: the nested point tree, its traversal with graceful degradation and
//!   temporal coherence, the penalty contact model, the deformed distance field and
//!   continuous contact (3.5-3.12);
//! - [`coupling`]: static virtual coupling with saturation and degenerate directions,
//!   the workspace and friction (Ch. 4);
//! - [`haptic`]: the allocation-free haptic cycle, the 1 kHz thread, its log and replay;
//! - [`scene`]: TOML scenes loaded into runtime objects with a baked cache, and the
//!   tunable parameters ([`scene::params::Param`]) defined once;
//! - [`muscle`]: active skeletal muscle: the fusiform muscle, its isometric experiment
//!   (with `testbed`), statics, contraction and the reduced real-time muscle;
//! - [`proximity`]: point and mesh-mesh distances and sweeps (a bounding-volume
//!   hierarchy), exact triangle distances and SE(3) motions, under the signed distance,
//!   the path check and the planner;
//! - [`check`]: continuous collision checks of a rigid (or compliant) part along a path,
//!   on OMPL.app's problems and scenes;
//! - [`plan`]: collision-free paths for a rigid part (RRT-Connect on exact distances);
//! - `formats` (with `testbed`): every file format the engine reads, behind one entry
//!   point (fuzzed);
//! - [`assets`], [`io`], [`progress`], [`plot`]: bundled files, atomic writes and binary
//!   readers, progress reports and cancellation, PNG plots.
//!
//! # The `testbed` feature
//!
//! The experiments and harnesses that exercise the engine without being part of it are
//! compiled only with the cargo feature `testbed`: the accuracy experiment of thesis
//! Fig. 2.3 (`dynamics::accuracy`), the stability ladder (`haptic::stability`), the
//! isometric muscle experiment (`muscle::isometric` and its re-exports in `muscle`) and
//! the table of every reader that the fuzzers drive (`formats`). The `haptics-app` CLI,
//! the Python bindings and the fuzz targets turn it on; so does this crate's
//! dev-dependency on itself, so that its tests and benches always build with it.
//!
//! The equations and their sources are in `docs/equations.md`, the architecture in
//! `docs/architecture.md`.
//!
//! # Example: load a scene, run haptic cycles, read the forces
//!
//! ```
//! use haptics::haptic::HapticSimulation;
//! use haptics::progress::NoProgress;
//! use haptics::scene::load_scene;
//! use nalgebra::Isometry3;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // A rigid square peg above a square shaft with 2 cm clearance (scene units; the
//! // device moves 0.1 m per scene unit). The first load bakes the peg's distance field
//! // and the shaft's pointshell into the cache; later loads read them back.
//! let scene_file = haptics::assets::asset("scenes/peg-shaft.toml");
//! let cache = std::env::temp_dir().join("haptics-example-cache");
//! let scene = load_scene(&scene_file, &cache, &NoProgress)?;
//! let mut sim = HapticSimulation::new(scene);
//!
//! // One cycle per millisecond: lower the stylus 6 cm, bringing the peg into the shaft,
//! // then push it 1 cm sideways, into a wall.
//! let mut report = None;
//! for i in 1..=400 {
//!     let down = -0.06 * (i as f64 / 200.0).min(1.0);
//!     let side = 0.01 * ((i as f64 - 200.0) / 200.0).max(0.0);
//!     let device = Isometry3::translation(side, down, 0.0);
//!     report = Some(sim.cycle(&device, false));
//! }
//! let r = report.expect("cycles ran");
//! // The force for the device (N, world frame) pushes the hand back out of the wall,
//! // and never exceeds the device's limit.
//! assert!(r.contacts > 0 && r.force.x < 0.0, "force {:?}", r.force);
//! assert!(r.force.norm() <= sim.coupling.params.device_max_force);
//! println!("{} points in contact, force {:.3?} N", r.contacts, r.force);
//! # Ok(())
//! # }
//! ```

// Numerical loops index several parallel arrays by the same dof or node index; iterator
// chains over zipped slices would obscure the formulas they implement.
#![allow(clippy::needless_range_loop)]
#![warn(missing_docs)]

pub mod assets;
pub mod check;
pub mod contact;
pub mod coupling;
pub mod dynamics;
pub mod fem;
#[cfg(feature = "testbed")]
pub mod formats;
pub mod geometry;
pub mod haptic;
pub mod io;
pub mod mesh;
pub mod muscle;
pub mod plan;
pub mod plot;
pub mod progress;
pub mod proximity;
pub mod reduction;
pub mod scene;
