//! How stiff a contact the loop can render and stay stable: the closed loop of the haptic
//! cycle with the simulated hand and device (latency of one servo sample, encoder
//! quantization, servo jitter), at a given rate, judged by a passivity observer (Hannaford
//! and Ryu 2002): the energy the device puts into the hand, `E = sum_k F_k . (x_{k+1} -
//! x_k)`, the force written at cycle `k` acting while the hand moves to the next reading. A passive, settled contact stops exchanging energy once the hand holds still; a
//! loop that oscillates keeps pumping energy into (or out of) the hand and the force
//! ripples.
//!
//! The experiment: a 4 cm cube held at its centre is pressed by the hand (grip 200 N/m,
//! 0.2 kg, damping ratio 0.7; its target goes 6 mm below the floor in 0.5 s) onto a floor
//! slab sampled by a pointshell, and held. Over the last 0.5 s of the run the loop is
//! *stable* when the observer drifts by less than 1 mJ and the force varies by less than
//! 5% of its mean plus the ripple of two encoder steps at the rendered stiffness (which
//! quantization alone causes; an oscillating loop ripples by newtons). [`largest_stable`]
//! climbs a geometric ladder of stiffnesses until the first unstable one.
//!
//! The device renders the coupling spring, whose stiffness in series with the contact's
//! (`k_C` times the L/l-scaled number of points, thesis Theorem 4.7) is the stiffness
//! felt. The coupling ladder holds the contact at `k_C = 1e5` N/m per point (the coupling
//! dominates); the contact ladder holds the coupling at 1000 N/m: the contact enters the
//! implicit 6x6 equilibrium of the static coupling, so its stiffness alone should not
//! destabilize the loop, and the ladder checks that it does not.

use nalgebra::{Isometry3, Point3, UnitQuaternion, Vector3};

use haptics_devices::{
    simulated::HandTarget, simulated::SimConfig, simulated::SimulatedDevice,
    simulated::TargetSource, Device, Pose, Wrench,
};

use super::HapticSimulation;
use crate::contact::{params::ContactParams, ContactShell};
use crate::coupling::CouplingParams;
use crate::geometry::{
    pointshell::sample_pointshell, pointshell::PointshellParams, MeshDistance, SignedDistanceField,
};
use crate::mesh::{box_surface_mesh, SurfaceMesh};
use crate::progress::NoProgress;
use crate::scene::{EnvironmentObject, HapticField, HapticObject, Scene};

/// The coupling stiffness of the contact ladder (N/m): stable at 1 kHz and above, so
/// the ladder shows what the contact alone does.
pub const CONTACT_LADDER_COUPLING: f64 = 1000.0;

/// Which stiffness a ladder varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stiffness {
    /// The virtual coupling `k_VC` (contact held stiff).
    Coupling,
    /// The contact `k_C` per point (coupling held at [`CONTACT_LADDER_COUPLING`]).
    Contact,
}

/// The floor and the cube, built once and copied per run.
#[derive(Debug, Clone)]
pub struct Floor {
    cube: SurfaceMesh,
    sdf: SignedDistanceField,
    slab: SurfaceMesh,
    shell: ContactShell,
}

impl Floor {
    /// A 4 cm cube in a 48-cell field, and a 40 x 4 x 40 cm slab sampled by 4,200 points
    /// in 3 levels.
    pub fn new() -> Self {
        let cube = box_surface_mesh(Vector3::repeat(0.04), [2, 2, 2]);
        let sdf = SignedDistanceField::compute(
            &MeshDistance::new(&cube).expect("a closed box"),
            48,
            1.5,
            &NoProgress,
        )
        .expect("the cube's field");
        let slab = box_surface_mesh(Vector3::new(0.4, 0.04, 0.4), [10, 1, 10]);
        let ps = sample_pointshell(
            &MeshDistance::new(&slab).expect("a closed box"),
            &slab,
            &PointshellParams {
                first_level_points: 200,
                levels: 3,
                ..PointshellParams::default()
            },
            &NoProgress,
        )
        .expect("the slab's pointshell");
        let shell = ContactShell::new(ps.points, ps.normals, ps.level_offsets, None)
            .expect("a valid pointshell");
        Floor {
            cube,
            sdf,
            slab,
            shell,
        }
    }

    /// The scene at `rate_hz` with the given stiffnesses: the cube 3 cm above the slab.
    pub fn scene(&self, rate_hz: f64, contact_k: f64, coupling_k: f64) -> Scene {
        Scene {
            name: "floor".into(),
            description: "a cube pressed onto a floor slab".into(),
            haptic: HapticObject {
                name: "cube".into(),
                field: HapticField::Rigid(self.sdf.clone()),
                grasp: Point3::origin(),
                pose: Isometry3::translation(0.0, 0.02 + 0.02 + 0.03, 0.0),
                surface: self.cube.clone(),
                render_basis: vec![],
                min_half_thickness: None,
            },
            environment: vec![EnvironmentObject {
                name: "floor".into(),
                shell: self.shell.clone(),
                pose: Isometry3::identity(),
                dynamics: None,
                surface: self.slab.clone(),
                render_basis: vec![],
            }],
            contact: ContactParams {
                stiffness: contact_k,
                ..ContactParams::default()
            },
            coupling: CouplingParams {
                stiffness: coupling_k,
                torque_stiffness: 0.5,
                saturation_force: None,
                dt: 1.0 / rate_hz,
                ..CouplingParams::default()
            },
            workspace_scale: 1.0,
            rate_hz,
        }
    }
}

impl Default for Floor {
    fn default() -> Self {
        Floor::new()
    }
}

/// One closed-loop run.
#[derive(Debug, Clone)]
pub struct Run {
    /// Rate (Hz).
    pub rate_hz: f64,
    /// Contact stiffness per point (N/m).
    pub contact_k: f64,
    /// Coupling stiffness (N/m).
    pub coupling_k: f64,
    /// `(time s, observer energy J)` every cycle.
    pub energy: Vec<(f64, f64)>,
    /// Mean vertical force over the judged hold (N).
    pub hold_force: f64,
    /// Largest deviation of the force from its mean over the judged hold (N).
    pub hold_spread: f64,
    /// Observer drift over the judged hold (J).
    pub drift: f64,
    /// The force ripple the encoder's quantization alone causes: two position steps at
    /// the rendered stiffness (N).
    pub quantization: f64,
    /// Whether a cycle faulted (a non-finite value).
    pub fault: bool,
}

impl Run {
    /// Stable: no fault, the observer drifts by under 1 mJ and the force varies by under
    /// 5% of its mean (plus the quantization ripple) over the judged hold.
    pub fn stable(&self) -> bool {
        !self.fault
            && self.drift.abs() < 1e-3
            && self.hold_force > 0.0
            && self.hold_spread < 0.05 * self.hold_force + self.quantization
    }
}

/// Runs the press-and-hold at `rate_hz`: the device's servo period is `1 / rate_hz`, its
/// jitter 3% of the rate, its encoders the default 0.02 mm and 2 pi / 2^14 rad.
pub fn run(floor: &Floor, rate_hz: f64, contact_k: f64, coupling_k: f64) -> Run {
    let mut sim = HapticSimulation::new(floor.scene(rate_hz, contact_k, coupling_k));
    let script = |t: f64| {
        // 3 cm to the floor, then 6 mm into it, in 0.5 s; held.
        HandTarget::new(Pose {
            position: Vector3::new(0.0, -0.036 * (t / 0.5).min(1.0), 0.0),
            orientation: UnitQuaternion::identity(),
        })
    };
    let config = SimConfig {
        period_s: 1.0 / rate_hz,
        jitter_hz: 0.03 * rate_hz,
        ..SimConfig::default()
    };
    let resolution = config.position_resolution_m;
    let mut device = SimulatedDevice::new(config, TargetSource::Script(Box::new(script)))
        .expect("valid simulated-device settings");
    let cycles = (1.5 * rate_hz) as usize;
    let mut out = Run {
        rate_hz,
        contact_k,
        coupling_k,
        energy: Vec::with_capacity(cycles),
        hold_force: 0.0,
        hold_spread: 0.0,
        drift: 0.0,
        // The rendered stiffness: the coupling in series with the contact of the (at most
        // L = 10 unscaled) points (thesis Theorem 4.7).
        quantization: 2.0 * resolution / (1.0 / coupling_k + 1.0 / (10.0 * contact_k)),
        fault: false,
    };
    let mut energy = 0.0;
    // The last reading's position and the force written after it.
    let mut last: Option<(Vector3<f64>, Vector3<f64>)> = None;
    let mut hold: Vec<(f64, f64)> = Vec::new();
    for _ in 0..cycles {
        let Ok(s) = device.read() else {
            out.fault = true;
            break;
        };
        // The force written last cycle acted on the hand while it moved to this reading.
        if let Some((p, f)) = last {
            energy += f.dot(&(s.pose.position - p));
        }
        let r = sim.cycle(&s.pose.isometry(), false);
        out.fault |= r.fault;
        let _ = device.write(&Wrench {
            force: r.force,
            torque: r.torque,
        });
        last = Some((s.pose.position, r.force));
        out.energy.push((s.time_s, energy));
        if s.time_s >= 1.0 {
            hold.push((r.force.y, energy));
        }
    }
    if let (Some(first), Some(end)) = (hold.first(), hold.last()) {
        let mean = hold.iter().map(|h| h.0).sum::<f64>() / hold.len() as f64;
        out.hold_force = mean;
        out.hold_spread = hold.iter().map(|h| (h.0 - mean).abs()).fold(0.0, f64::max);
        out.drift = end.1 - first.1;
    }
    out
}

/// The ladder's stiffnesses: from `start`, times 1.25 each step, up to `end`.
pub fn ladder(start: f64, end: f64) -> Vec<f64> {
    let mut k = vec![start];
    while let Some(&last) = k.last() {
        if last * 1.25 > end {
            break;
        }
        k.push(last * 1.25);
    }
    k
}

/// Climbs the ladder of `which` at `rate_hz` until the first unstable run: returns the
/// last stable run (if any) and the first unstable one (if reached).
pub fn largest_stable(
    floor: &Floor,
    rate_hz: f64,
    which: Stiffness,
    ladder: &[f64],
) -> (Option<Run>, Option<Run>) {
    let mut stable = None;
    for &k in ladder {
        let r = match which {
            Stiffness::Coupling => run(floor, rate_hz, 1e5, k),
            Stiffness::Contact => run(floor, rate_hz, k, CONTACT_LADDER_COUPLING),
        };
        if !r.stable() {
            return (stable, Some(r));
        }
        stable = Some(r);
    }
    (stable, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ladder_is_geometric_and_bounded() {
        let l = ladder(100.0, 300.0);
        assert_eq!(l.len(), 5);
        assert!((l[1] / l[0] - 1.25).abs() < 1e-15);
        assert!(*l.last().unwrap() <= 300.0);
    }
}
