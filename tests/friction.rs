//! Coulomb friction through the virtual coupling (issue 17), on a generated scene: a flat
//! 4 x 1 x 4 cm probe pressed on a floor slab and dragged. Below the stick limit it holds;
//! it breaks away at the static limit and slides with tangential/normal force at the
//! dynamic coefficient; without the `friction` key the drag is frictionless; turned about
//! the vertical it holds, then turns against the torsional friction of its patch; and the
//! closed loop with the simulated hand stays stable with friction on.

use std::path::{Path, PathBuf};

use haptics::haptic::HapticSimulation;
use haptics::progress::NoProgress;
use haptics::scene::load_scene;
use haptics_devices::{
    simulated::HandTarget, simulated::SimConfig, simulated::SimulatedDevice,
    simulated::TargetSource, Device, Pose, Wrench,
};
use nalgebra::{Isometry3, UnitQuaternion, Vector3};

const MU_S: f64 = 0.6;
const MU_D: f64 = 0.4;
/// Coupling stiffness (N/m, workspace scale 1).
const K_VC: f64 = 300.0;

/// The probe's bottom is 1 cm above the floor's top (y = 0) at the start; the floor's
/// pointshell has `points` points.
fn scene(dir: &Path, friction: bool, points: usize) -> PathBuf {
    let key = if friction {
        format!("friction = {{ static = {MU_S}, dynamic = {MU_D} }}")
    } else {
        String::new()
    };
    let text = format!(
        r#"name = "drag"
workspace_scale = 1.0

[haptic]
name = "probe"
box = [0.04, 0.01, 0.04]
sdf_resolution = 32
position = [0.0, 0.015, 0.0]

[[environment]]
name = "floor"
boxes = [{{ size = [0.4, 0.02, 0.4], position = [0.0, -0.01, 0.0] }}]
points = {points}
levels = 3

[contact]
stiffness = 2000.0
{key}

[coupling]
stiffness = {K_VC}
torque_stiffness = 2.0
saturation_force = 0.0
max_velocity = 10.0
"#
    );
    let path = dir.join(if friction { "drag.toml" } else { "slick.toml" });
    std::fs::write(&path, text).unwrap();
    path
}

fn simulation(friction: bool) -> HapticSimulation {
    simulation_with(friction, 1000)
}

fn simulation_with(friction: bool, points: usize) -> HapticSimulation {
    let dir = tempfile::tempdir().unwrap();
    let path = scene(dir.path(), friction, points);
    let scene =
        load_scene(&path, &dir.path().join("cache"), &NoProgress).unwrap_or_else(|e| panic!("{e}"));
    HapticSimulation::new(scene)
}

/// The hand's path (device metres from the start): down 1.6 cm in 0.5 s (about 2 N of
/// press), hold to 0.7 s, then along x at 0.05 m/s.
fn hand(t: f64) -> Vector3<f64> {
    let down = -0.016 * (t / 0.5).min(1.0);
    let drag = 0.05 * (t - 0.7).max(0.0);
    Vector3::new(drag, down, 0.0)
}

/// One cycle's record: time, device force, object x.
struct Sample {
    t: f64,
    force: Vector3<f64>,
    object_x: f64,
}

fn drag(sim: &mut HapticSimulation, seconds: f64) -> Vec<Sample> {
    let mut out = Vec::new();
    for i in 0..(seconds * 1000.0) as usize {
        let t = i as f64 * 1e-3;
        let r = sim.cycle(&Isometry3::translation(hand(t).x, hand(t).y, 0.0), false);
        assert!(!r.fault && r.force.iter().all(|f| f.is_finite()), "t = {t}");
        out.push(Sample {
            t,
            force: r.force,
            object_x: r.simulation.translation.vector.x,
        });
    }
    out
}

/// Asserts that every ratio (friction over its limit per unit coefficient) is the dynamic
/// coefficient within 10% (the issue's tolerance); returns their mean.
fn within_dynamic(ratios: &[f64], what: &str) -> f64 {
    for ratio in ratios {
        assert!(
            (ratio - MU_D).abs() < 0.1 * MU_D,
            "{what} {ratio}, dynamic coefficient {MU_D}"
        );
    }
    ratios.iter().sum::<f64>() / ratios.len() as f64
}

/// Stick then slip. While the hand has moved less than the stick limit allows
/// (`k_VC dx < mu_s N`, here up to 60% of it), the probe stays within the tangential
/// spring's give (`mu_s N / k_t`, under 0.1 mm at the contact's 2e4 N/m); the largest
/// tangential force before it moves is the static limit (within 5%: the hand moves
/// 0.05 mm a cycle, 1.5% of the limit's spring stretch); once sliding, tangential/normal
/// is the dynamic coefficient within 10% (the issue's tolerance) on every cycle of the
/// last 0.5 s.
#[test]
fn a_dragged_probe_sticks_then_slides_at_the_dynamic_coefficient() {
    let mut sim = simulation(true);
    let samples = drag(&mut sim, 2.0);
    let at = |t: f64| &samples[(t * 1000.0) as usize];
    let press = at(0.69).force.y;
    assert!(press > 1.5, "the probe presses with {press} N");
    let x0 = at(0.69).object_x;
    // Stick: the hand has moved 0.05 m/s x dt; 60% of the limit is at dt = 0.6 mu_s N / (k 0.05).
    let stick_end = 0.7 + 0.6 * MU_S * press / (K_VC * 0.05);
    for s in samples.iter().filter(|s| s.t > 0.7 && s.t < stick_end) {
        let moved = (s.object_x - x0).abs();
        assert!(
            moved < 1e-4,
            "t = {:.3}: the probe slid {moved} m below the stick limit",
            s.t
        );
    }
    // Break-away: the peak tangential force before the probe has moved 1 mm.
    let peak = samples
        .iter()
        .filter(|s| s.t > 0.7 && (s.object_x - x0).abs() < 1e-3)
        .map(|s| -s.force.x / s.force.y)
        .fold(0.0, f64::max);
    assert!(
        (peak - MU_S).abs() < 0.05 * MU_S,
        "break-away at tangential/normal {peak}, static coefficient {MU_S}"
    );
    // Slip.
    let sliding: Vec<f64> = samples
        .iter()
        .filter(|s| s.t > 1.5)
        .map(|s| -s.force.x / s.force.y)
        .collect();
    let mean = within_dynamic(&sliding, "sliding at tangential/normal");
    assert!(at(1.99).object_x - x0 > 0.04, "the probe did not slide");
    println!("press {press:.3} N, break-away ratio {peak:.3}, sliding ratio {mean:.4}");
}

/// Without the key, dragging the pressed probe costs no tangential force: under 1% of
/// the normal force (the net contact normal of a flat face on a flat floor is vertical
/// up to the pointshell's sampling), and the probe follows the hand.
#[test]
fn without_the_key_the_drag_is_frictionless() {
    let mut sim = simulation(false);
    assert!(sim.scene.contact.friction.is_none());
    let samples = drag(&mut sim, 1.5);
    for s in samples.iter().filter(|s| s.t > 0.8) {
        assert!(s.force.y > 1.0, "t = {}: not pressing", s.t);
        assert!(
            s.force.x.abs() < 0.01 * s.force.y,
            "t = {:.3}: tangential {} N against normal {} N",
            s.t,
            s.force.x,
            s.force.y
        );
        assert!(s.force.y > 0.0);
    }
    let last = samples.last().unwrap();
    assert!((last.object_x - hand(last.t).x).abs() < 1e-3);
}

/// The hand turns about the vertical (device radians from the start): after the press and
/// hold of [`hand`], at 0.5 rad/s.
fn twist(t: f64) -> f64 {
    0.5 * (t - 0.7).max(0.0)
}

/// One twisting cycle's record: time, device torque and force, the object's turn about
/// the vertical, and the patch's torsional lever.
struct TwistSample {
    t: f64,
    torque: f64,
    normal: f64,
    turn: f64,
    rho: f64,
}

fn twist_run(sim: &mut HapticSimulation, seconds: f64) -> Vec<TwistSample> {
    use haptics::coupling::friction::Patch;
    let mut out = Vec::new();
    for i in 0..(seconds * 1000.0) as usize {
        let t = i as f64 * 1e-3;
        let p = hand(t.min(0.7));
        let pose = Isometry3::from_parts(
            p.into(),
            UnitQuaternion::from_scaled_axis(Vector3::y() * twist(t)),
        );
        let r = sim.cycle(&pose, false);
        assert!(
            !r.fault && r.torque.iter().all(|v| v.is_finite()),
            "t = {t}"
        );
        let output = sim.contact_output(0);
        let rho = Patch::of_contacts(
            output.contacts.iter().map(|c| (c, output.scale)),
            &Vector3::y(),
        )
        .map_or(0.0, |p| p.radius);
        out.push(TwistSample {
            t,
            torque: r.torque.y,
            normal: r.force.y,
            turn: r.simulation.rotation.scaled_axis().y,
            rho,
        });
    }
    out
}

/// Torsional friction (the soft-finger contact of the friction proxy): the pressed probe
/// turned by the hand holds while the device torque is below the torsional limit
/// `mu_s N rho` (`rho` the patch's force-weighted mean distance from its centre of
/// pressure, the lever of a sliding patch's friction), breaks away at it (within 5%),
/// then turns with the device torque at `mu_d N rho` (within 10%: the issue's tolerance
/// for the force ratio) on every cycle of the last 0.5 s. `rho` is within 15% of a 4 cm
/// square's mean distance from its centre (0.3826 x 4 cm; the floor's pointshell samples
/// the footprint with about 80 points). Without the key the twist costs no torque.
#[test]
fn a_twisted_probe_sticks_then_turns_at_the_torsional_limit() {
    let mut sim = simulation_with(true, 8000);
    let samples = twist_run(&mut sim, 1.5);
    let at = |t: f64| &samples[(t * 1000.0) as usize];
    let press = at(0.69).normal;
    assert!(press > 1.5, "the probe presses with {press} N");
    let rho = at(0.69).rho;
    let square = 0.3826 * 0.04;
    assert!(
        (rho - square).abs() < 0.15 * square,
        "patch lever {rho} m, square {square} m"
    );
    let turn0 = at(0.69).turn;
    let limit = |s: &TwistSample, mu: f64| mu * s.normal * s.rho;
    // Stick: while the device torque is below 60% of the limit, the probe has not turned
    // more than the torsional spring's give (mu_s N rho / (k_t rho2) < 3 mrad).
    for s in samples.iter().filter(|s| s.t > 0.7) {
        if s.torque.abs() > 0.6 * limit(s, MU_S) {
            break;
        }
        assert!(
            (s.turn - turn0).abs() < 3e-3,
            "t = {:.3}: turned {} rad below the torsional limit",
            s.t,
            s.turn - turn0
        );
    }
    // Break-away: the largest torque before the probe has turned 0.05 rad.
    let peak = samples
        .iter()
        .filter(|s| s.t > 0.7 && (s.turn - turn0).abs() < 0.05)
        .map(|s| s.torque.abs() / (s.normal * s.rho))
        .fold(0.0, f64::max);
    assert!(
        (peak - MU_S).abs() < 0.05 * MU_S,
        "break-away at torque/(N rho) {peak}, static coefficient {MU_S}"
    );
    let sliding: Vec<f64> = samples
        .iter()
        .filter(|s| s.t > 1.0)
        .map(|s| s.torque.abs() / (s.normal * s.rho))
        .collect();
    let mean = within_dynamic(&sliding, "turning at torque/(N rho)");
    assert!(at(1.49).turn - turn0 > 0.2, "the probe did not turn");
    println!(
        "press {press:.3} N, rho {rho:.5} m, break-away {peak:.3}, turning {mean:.4}, torque {:.4} N m",
        at(1.49).torque
    );

    // Without the key: the probe follows the twist at no torque but the coupling's lag
    // behind a hand turning at 0.5 rad/s (about 0.5 mN m: under 10% of the frictional
    // torque).
    let mut slick = simulation_with(false, 8000);
    for s in twist_run(&mut slick, 1.5).iter().filter(|s| s.t > 0.8) {
        assert!(
            s.torque.abs() < 0.1 * limit(s, MU_D),
            "t = {:.3}: frictionless twist torque {} N m",
            s.t,
            s.torque
        );
    }
}

/// The closed loop with the simulated hand (default grip, servo jitter, quantization and
/// one sample of latency) pressing, dragging and holding with friction on: no fault, the
/// force within the device limit; while the hand holds still in stick after the drag, the
/// force varies by less than 5% of its mean and the passivity observer (energy the device
/// put into the hand) does not grow.
#[test]
fn friction_is_stable_with_the_simulated_hand() {
    let mut sim = simulation(true);
    let script = move |t: f64| {
        // Down, drag 3 cm by 1.3 s, then hold still.
        let p = hand(t.min(1.3));
        HandTarget::new(Pose {
            position: p,
            orientation: UnitQuaternion::identity(),
        })
    };
    let mut device =
        SimulatedDevice::new(SimConfig::default(), TargetSource::Script(Box::new(script))).unwrap();
    let mut energy = 0.0;
    // The last reading's position and the force written after it.
    let mut last: Option<(Vector3<f64>, Vector3<f64>)> = None;
    let (mut hold, mut hold_energy) = (Vec::new(), Vec::new());
    for _ in 0..2500 {
        let s = device.read().unwrap();
        // The force written last cycle acted while the hand moved to this reading.
        if let Some((p, f)) = last {
            energy += f.dot(&(s.pose.position - p));
        }
        let r = sim.cycle(&s.pose.isometry(), false);
        assert!(!r.fault && r.force.iter().all(|f| f.is_finite()));
        assert!(r.force.norm() <= 8.5 + 1e-9);
        device
            .write(&Wrench {
                force: r.force,
                torque: r.torque,
            })
            .unwrap();
        last = Some((s.pose.position, r.force));
        if (1.8..2.4).contains(&s.time_s) {
            hold.push(r.force);
            hold_energy.push(energy);
        }
    }
    let mean = hold.iter().sum::<Vector3<f64>>() / hold.len() as f64;
    let spread = hold.iter().map(|f| (f - mean).norm()).fold(0.0, f64::max);
    assert!(mean.y > 0.5, "pressing with {} N", mean.y);
    assert!(
        spread < 0.05 * mean.norm(),
        "the held force varies by {spread} N around {mean:?}"
    );
    let drift = hold_energy.last().unwrap() - hold_energy.first().unwrap();
    assert!(
        drift.abs() < 1e-3,
        "the passivity observer drifts by {drift} J"
    );
    println!("hold force {mean:?}, spread {spread:.2e} N, observer drift {drift:.2e} J");
}
