//! Generated assembly puzzles with known answers, shipped in `assets/check/` for
//! `haptics check` (and, later, the planner).
//!
//! **The alpha puzzle** (our own shape, after the interlocked tubes of the alpha puzzle
//! benchmark, thesis Fig. 3.31): two interlocked twisted tubes.
//! - The robot is a tube swept along an arc of a helix, 1.25 turns about the z axis,
//!   `h(s) = (rho cos s, rho sin s, c s)` with `c` the pitch over 2 pi.
//! - The world is a closed tube along a saddle-shaped ring that encircles the helix at
//!   `h(0)`, in the plane normal to it there, with the saddle's rise along the helix.
//!
//! The robot is threaded through the ring: pulled straight out, its curved body meets the
//! ring. A screw motion about z (turn by `phi`, rise by `c phi`) maps the helix onto
//! itself, so the robot can slide along its own track, through the ring, and out: that
//! is the solution, collision-free with a clearance set by the ring's opening and the
//! track's curvature. The perturbed path keeps the start and the goal but pushes the
//! robot sideways in the middle, into the ring's rim.
//!
//! States follow OMPL.app's conventions ([`super::ompl`]): the robot's origin is the mean
//! of its distinct vertices.

use nalgebra::{Point3, UnitQuaternion, Vector3};

use crate::mesh::box_hex_mesh;
use crate::mesh::collada::distinct_vertex_sum;
use crate::mesh::shapes::{closed_tube, open_tube};
use crate::mesh::{volume::Material, volume::VolumeMesh, SurfaceMesh};
use crate::proximity::rigid::State;

/// A generated problem: meshes in world coordinates (the robot as it is at the start),
/// the robot's origin, and two paths between the same start and goal.
#[derive(Debug, Clone)]
pub struct Puzzle {
    /// The problem's name.
    pub name: String,
    /// The fixed part.
    pub world: SurfaceMesh,
    /// The moving part, placed at the start.
    pub robot: SurfaceMesh,
    /// The robot's origin (OMPL.app's: the mean of its distinct vertices).
    pub origin: Point3<f64>,
    /// A path that passes.
    pub solution: Vec<State>,
    /// The same start and goal, with a path that collides in the middle.
    pub perturbed: Vec<State>,
}

/// The alpha puzzle's dimensions (m).
pub mod alpha {
    /// Radius of the helix the robot follows.
    pub const HELIX_RADIUS: f64 = 0.30;
    /// The helix's rise per turn.
    pub const PITCH: f64 = 0.5;
    /// The robot's extent along the helix: from this many turns before the ring...
    pub const TURNS_BEFORE: f64 = 0.6;
    /// ...to this many after it.
    pub const TURNS_AFTER: f64 = 0.65;
    /// The robot tube's radius.
    pub const ROBOT_RADIUS: f64 = 0.04;
    /// The ring's radius (its centreline).
    pub const RING_RADIUS: f64 = 0.12;
    /// The ring tube's radius.
    pub const RING_TUBE_RADIUS: f64 = 0.025;
    /// The saddle's rise along the helix.
    pub const SADDLE: f64 = 0.03;
    /// How far past the ring (helix parameter, rad) the solution takes the robot's end.
    pub const EXIT_MARGIN: f64 = 0.9;
    /// The perturbed path's largest sideways push.
    pub const PUSH: f64 = 0.09;
    /// The screw's step between states (rad).
    pub const STEP: f64 = 2.0 * std::f64::consts::PI / 180.0;
}

/// The point of the helix at parameter `s`.
fn helix(s: f64) -> Point3<f64> {
    let c = alpha::PITCH / std::f64::consts::TAU;
    Point3::new(
        alpha::HELIX_RADIUS * s.cos(),
        alpha::HELIX_RADIUS * s.sin(),
        c * s,
    )
}

/// The alpha puzzle (see the module docs).
pub(crate) fn alpha_puzzle() -> Puzzle {
    use std::f64::consts::{PI, TAU};
    let c = alpha::PITCH / TAU;
    // The robot: the helix arc, sampled every degree.
    let (s0, s1) = (-alpha::TURNS_BEFORE * TAU, alpha::TURNS_AFTER * TAU);
    let n = ((s1 - s0) / (PI / 180.0)).ceil() as usize;
    let arc: Vec<Point3<f64>> = (0..=n)
        .map(|i| helix(s0 + (s1 - s0) * i as f64 / n as f64))
        .collect();
    let robot = open_tube(&arc, alpha::ROBOT_RADIUS, 20);
    // The ring, about h(0), normal to the helix there, rising and falling twice along it.
    let center = helix(0.0);
    let tangent = Vector3::new(0.0, alpha::HELIX_RADIUS, c).normalize();
    let u = Vector3::x();
    let v = tangent.cross(&u);
    let ring: Vec<Point3<f64>> = (0..240)
        .map(|i| {
            let a = TAU * i as f64 / 240.0;
            center
                + (u * a.cos() + v * a.sin()) * alpha::RING_RADIUS
                + tangent * (alpha::SADDLE * (2.0 * a).sin())
        })
        .collect();
    let world = closed_tube(&ring, alpha::RING_TUBE_RADIUS, 16);
    let (sum, count) = distinct_vertex_sum(robot.vertices.iter().copied());
    let origin = Point3::from(sum / count.max(1) as f64);
    // The screw about z: turn by phi and rise by c phi, down the track until the robot's
    // far end is `EXIT_MARGIN` past the ring.
    let phi_end = -(s1 + alpha::EXIT_MARGIN);
    let steps = (phi_end.abs() / alpha::STEP).ceil() as usize;
    let screw = |phi: f64, push: Vector3<f64>| {
        let q = UnitQuaternion::from_axis_angle(&Vector3::z_axis(), phi);
        State::new(
            q * origin.coords + Vector3::new(0.0, 0.0, c * phi) + push,
            q,
        )
    };
    let solution = (0..=steps)
        .map(|k| screw(phi_end * k as f64 / steps as f64, Vector3::zeros()))
        .collect();
    let perturbed = (0..=steps)
        .map(|k| {
            let f = k as f64 / steps as f64;
            screw(phi_end * f, u * (alpha::PUSH * (PI * f).sin()))
        })
        .collect();
    Puzzle {
        name: "alpha".into(),
        world,
        robot,
        origin,
        solution,
        perturbed,
    }
}

/// A hose for the compliant check (`assets/check/hose/`): a thick-walled tube along the
/// body z axis, its simulation mesh of trilinear hexes (radial x angular x axial, the
/// angular seam joined), its surface (the mesh's boundary), and the vertices of its two
/// end rings, held fixed (clamped in their fittings).
#[derive(Debug, Clone)]
pub struct Hose {
    /// The simulation mesh.
    pub volume: VolumeMesh,
    /// Its boundary, outward.
    pub surface: SurfaceMesh,
    /// The end rings' vertices (0-based).
    pub fixed: Vec<usize>,
}

/// The hose's dimensions (scene units).
pub mod hose {
    /// Length along z, centred on the origin.
    pub const LENGTH: f64 = 10.0;
    /// Outer radius.
    pub const OUTER: f64 = 1.5;
    /// Bore radius.
    pub const INNER: f64 = 0.9;
    /// Hexes through the wall, around, and along.
    pub const CELLS: [usize; 3] = [2, 24, 40];
    /// Young's modulus (scene units: N per unit^2), a soft rubber hose, and Poisson's
    /// ratio.
    pub const YOUNGS_MODULUS: f64 = 500.0;
    /// Poisson's ratio.
    pub const POISSON_RATIO: f64 = 0.45;
    /// Density (kg per unit^3).
    pub const DENSITY: f64 = 1000.0;
}

/// The hose (see [`Hose`]).
pub(crate) fn hose_model() -> Hose {
    use std::f64::consts::TAU;
    let [nr, nt, nz] = hose::CELLS;
    let material = Material::new(
        "rubber",
        hose::DENSITY,
        hose::YOUNGS_MODULUS,
        hose::POISSON_RATIO,
    );
    // A box in (radius, angle, length), mapped to the annulus: the map's Jacobian is r > 0,
    // so the hexes keep their orientation.
    let boxed = box_hex_mesh(
        Vector3::new(hose::OUTER - hose::INNER, TAU, hose::LENGTH),
        hose::CELLS,
        Point3::new(hose::INNER, 0.0, -0.5 * hose::LENGTH),
        material,
    );
    let (vt, vz) = (nt + 1, nz + 1);
    // Join the seam: the vertices at angle 2 pi are those at 0.
    let mut index = vec![usize::MAX; boxed.vertices.len()];
    let mut vertices = Vec::new();
    for i in 0..=nr {
        for j in 0..nt {
            for k in 0..vz {
                let old = (i * vt + j) * vz + k;
                index[old] = vertices.len();
                let p = boxed.vertices[old];
                vertices.push(Point3::new(p.x * p.y.cos(), p.x * p.y.sin(), p.z));
            }
        }
        for k in 0..vz {
            index[(i * vt + nt) * vz + k] = index[(i * vt) * vz + k];
        }
    }
    let volume = VolumeMesh {
        vertices,
        connectivity: boxed.connectivity.iter().map(|&v| index[v]).collect(),
        ..boxed
    };
    let surface = SurfaceMesh {
        vertices: volume.vertices.clone(),
        triangles: volume.boundary_triangles(),
    };
    let fixed = (0..volume.vertices.len())
        .filter(|&v| volume.vertices[v].z.abs() >= 0.5 * hose::LENGTH - 1e-9)
        .collect();
    Hose {
        volume,
        surface,
        fixed,
    }
}

/// The hose-disassembly path (`assets/check/hose/pull.path`): body poses of the scene's
/// part, a 0.5-thick plate, pulled straight up from below the two hoses of
/// `assets/scenes/hose-disassembly.toml` through the 0.3-wide gap between them, 0.1 too
/// narrow on each side, and out above them.
pub(crate) fn hose_pull() -> Vec<State> {
    (0..=60)
        .map(|k| {
            State::new(
                Vector3::new(0.0, -1.5 + 0.1 * k as f64, 0.0),
                UnitQuaternion::identity(),
            )
        })
        .collect()
}

/// The `.cfg` of a puzzle in OMPL.app's format: robot `robot.obj`, world `world.obj`,
/// start and goal from the solution's ends, the volume bounding both paths' positions.
pub(crate) fn problem_cfg(p: &Puzzle) -> String {
    let (start, goal) = (p.solution[0], p.solution[p.solution.len() - 1]);
    let axis_angle = |s: &State| {
        s.orientation
            .axis_angle()
            .map_or((Vector3::z(), 0.0), |(a, t)| (a.into_inner(), t))
    };
    let mut lo = Vector3::repeat(f64::INFINITY);
    let mut hi = Vector3::repeat(f64::NEG_INFINITY);
    for s in p.solution.iter().chain(&p.perturbed) {
        lo = lo.inf(&s.position);
        hi = hi.sup(&s.position);
    }
    let (lo, hi) = (lo.add_scalar(-0.5), hi.add_scalar(0.5));
    let mut text = format!(
        "# Generated by haptics::check::puzzles ({}): see docs/check.md.\n\
         # The format of OMPL.app's problems (resources/3D/*.cfg).\n[problem]\nname={}\n\
         robot=robot.obj\nworld=world.obj\n",
        p.name, p.name
    );
    for (key, s) in [("start", &start), ("goal", &goal)] {
        let (axis, theta) = axis_angle(s);
        text.push_str(&format!(
            "{key}.x={}\n{key}.y={}\n{key}.z={}\n{key}.axis.x={}\n{key}.axis.y={}\n\
             {key}.axis.z={}\n{key}.theta={}\n",
            s.position.x, s.position.y, s.position.z, axis.x, axis.y, axis.z, theta
        ));
    }
    for (k, name) in ["x", "y", "z"].iter().enumerate() {
        text.push_str(&format!("volume.min.{name}={}\n", lo[k]));
    }
    for (k, name) in ["x", "y", "z"].iter().enumerate() {
        text.push_str(&format!("volume.max.{name}={}\n", hi[k]));
    }
    text.push_str("\n[solver]\nplanner=rrtconnect\n\n[benchmark]\ntime_limit=60.0\n");
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::ompl::{format_path, parse_path, read_problem};
    use crate::check::{check_path, robot_origin, CheckOptions, Robot, World};
    use crate::mesh::read_obj;
    use std::path::PathBuf;

    fn shipped() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("assets/check/alpha")
    }

    /// The solution passes with the clearance the geometry allows, the perturbed path
    /// collides in its middle, and the straight motion from start to goal collides (the
    /// robot is interlocked with the ring).
    #[test]
    fn the_alpha_solution_passes_and_the_perturbed_path_collides() {
        let p = alpha_puzzle();
        let robot = Robot::new(&robot_origin(&p.robot, &p.origin));
        let world = World::new(&p.world);
        let options = CheckOptions::default();
        let r = check_path(&robot, &world, &p.solution, &options, &mut |_| {});
        assert!(r.collision_free, "{:?}", r.first_collision);
        // The ring's opening is 0.12 - 0.025 = 0.095 about the helix, the robot's tube
        // 0.04: 0.055 on a straight track; the saddle and the track's curvature take
        // some of it, the rest must be there.
        assert!(
            r.min_clearance > 0.02 && r.min_clearance < 0.055,
            "{}",
            r.min_clearance
        );
        let r = check_path(&robot, &world, &p.perturbed, &options, &mut |_| {});
        assert!(!r.collision_free);
        let first = r.first_collision.unwrap().fraction(p.perturbed.len() - 1);
        assert!(first > 0.02 && first < 0.5, "{first}");
        let ends = [p.solution[0], p.solution[p.solution.len() - 1]];
        let r = check_path(&robot, &world, &ends, &options, &mut |_| {});
        assert!(!r.collision_free, "the pieces are not interlocked");
    }

    /// The hose is a closed, outward tube of the annulus's volume (less the facetting),
    /// its hexes all positive, its two end rings fixed.
    #[test]
    fn the_hose_is_a_clamped_tube() {
        let h = hose_model();
        assert!(h.volume.element_defects().is_empty());
        let exact =
            std::f64::consts::PI * (hose::OUTER.powi(2) - hose::INNER.powi(2)) * hose::LENGTH;
        let v = h.surface.signed_volume();
        // 24 sides keep sin(2 pi / 24) 12 / pi = 98.9% of each circle's area.
        assert!((v - exact).abs() / exact < 0.015, "{v} vs {exact}");
        let (boundary, nonmanifold) = h.surface.boundary_and_nonmanifold_edges();
        assert_eq!((boundary, nonmanifold), (0, 0));
        // Two rings of (radial layers + 1) x angles vertices.
        let [nr, nt, _] = hose::CELLS;
        assert_eq!(h.fixed.len(), 2 * (nr + 1) * nt);
    }

    /// The hose files in `assets/check/hose/` are [`hose_model`]'s output
    /// (`HAPTICS_WRITE_PUZZLES=1` rewrites them), and `pull.path` is [`hose_pull`].
    #[test]
    fn the_shipped_hose_is_the_generated_one() {
        let h = hose_model();
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("assets/check/hose");
        if std::env::var_os("HAPTICS_WRITE_PUZZLES").is_some() {
            std::fs::create_dir_all(&dir).unwrap();
            crate::mesh::veg::write_veg(&dir.join("hose.veg"), &h.volume).unwrap();
            crate::mesh::bou::write_bou(&dir.join("hose.bou"), &h.fixed).unwrap();
            crate::mesh::write_obj(&dir.join("hose.obj"), &h.surface).unwrap();
            std::fs::write(dir.join("pull.path"), format_path(&hose_pull())).unwrap();
        }
        let v = crate::mesh::veg::read_veg(&dir.join("hose.veg")).unwrap();
        assert_eq!(v.connectivity, h.volume.connectivity);
        assert_eq!(v.materials, h.volume.materials);
        for (a, b) in v.vertices.iter().zip(&h.volume.vertices) {
            assert!((a - b).norm() <= 1e-12);
        }
        let fixed =
            crate::mesh::bou::read_bou(&dir.join("hose.bou"), Some(v.vertices.len())).unwrap();
        assert_eq!(fixed, h.fixed);
        assert_meshes_equal(
            &read_obj(&dir.join("hose.obj")).unwrap(),
            &h.surface,
            "hose",
        );
        let bytes = std::fs::read(dir.join("pull.path")).unwrap();
        let read = parse_path(&bytes, &dir.join("pull.path")).unwrap();
        assert_eq!(read, hose_pull());
    }

    fn assert_meshes_equal(a: &SurfaceMesh, b: &SurfaceMesh, what: &str) {
        assert_eq!(a.triangles, b.triangles, "{what}");
        assert_eq!(a.vertices.len(), b.vertices.len(), "{what}");
        for (x, y) in a.vertices.iter().zip(&b.vertices) {
            assert!((x - y).norm() <= 1e-12, "{what}: {x} vs {y}");
        }
    }

    /// The files in `assets/check/alpha/` are the generator's output (to round-off: the
    /// files hold shortest round-trip decimals, and libm's last bits may differ between
    /// machines). `HAPTICS_WRITE_PUZZLES=1` rewrites them.
    #[test]
    fn the_shipped_alpha_puzzle_is_the_generated_one() {
        let p = alpha_puzzle();
        let dir = shipped();
        if std::env::var_os("HAPTICS_WRITE_PUZZLES").is_some() {
            std::fs::create_dir_all(&dir).unwrap();
            crate::mesh::write_obj(&dir.join("world.obj"), &p.world).unwrap();
            crate::mesh::write_obj(&dir.join("robot.obj"), &p.robot).unwrap();
            std::fs::write(dir.join("solution.path"), format_path(&p.solution)).unwrap();
            std::fs::write(dir.join("perturbed.path"), format_path(&p.perturbed)).unwrap();
            std::fs::write(dir.join("alpha.cfg"), problem_cfg(&p)).unwrap();
        }
        assert_meshes_equal(
            &read_obj(&dir.join("world.obj")).unwrap(),
            &p.world,
            "world",
        );
        assert_meshes_equal(
            &read_obj(&dir.join("robot.obj")).unwrap(),
            &p.robot,
            "robot",
        );
        for (file, states) in [
            ("solution.path", &p.solution),
            ("perturbed.path", &p.perturbed),
        ] {
            let bytes = std::fs::read(dir.join(file)).unwrap();
            let read = parse_path(&bytes, &dir.join(file)).unwrap();
            assert_eq!(read.len(), states.len(), "{file}");
            for (a, b) in read.iter().zip(states.iter()) {
                assert!((a.position - b.position).norm() <= 1e-12, "{file}");
                assert!(a.orientation.angle_to(&b.orientation) <= 1e-12, "{file}");
            }
        }
        let cfg = read_problem(&dir.join("alpha.cfg")).unwrap();
        assert!((cfg.start.position - p.solution[0].position).norm() <= 1e-12);
        let goal = p.solution[p.solution.len() - 1];
        assert!((cfg.goal.position - goal.position).norm() <= 1e-12);
        assert!(cfg.goal.orientation.angle_to(&goal.orientation) <= 1e-9);
    }
}
