//! The haptic soak: 10^6 haptic cycles of a shipped scene against an adversarial device,
//! through the exact cycle the haptic thread runs ([`haptic_cycle`]) and the safety layer
//! every device is wrapped in.
//!
//! The stack, top to bottom: the cycle -> [`SafeDevice`] (deadman on button 0, ramp,
//! clamps, stall watchdog, reconnects) -> [`ChaosDevice`] (injects, about once every 50
//! cycles, NaN/inf and 1e308 readings, teleports of up to 1 m, zero and NaN quaternions,
//! clock jumps back and to 1e300 s, 30 ms stalls, 200-cycle disconnects, failed writes
//! and button chatter on the deadman and the clutch; and records every wrench that would
//! reach the hardware) -> the simulated hand, following the scene's keyframed trajectory
//! in a loop, with its enable button held.
//!
//! What must hold, at every cycle: no non-finite value and no force or torque above the
//! device's limit reaches the hardware; no cycle allocates or takes long (no blocking);
//! and after the faults stop, the loop renders contact forces again. The figures (faults
//! injected by kind, zero-force cycles, cycle times) are printed for the README's
//! reliability section: `cargo test --release --test soak -- --nocapture`.
//! `HAPTICS_SOAK_CYCLES` shortens or lengthens the run, `HAPTICS_SOAK_SEED` (default 7)
//! draws other faults. The cycle's wall time still varies between runs (a late cycle writes
//! zero force, which moves the simulated hand), so no two runs are the same: the rules
//! must hold for every seed.

#[path = "common/alloc.rs"]
mod alloc;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;

use alloc::{allocations, Counting};
use haptics::haptic::{haptic_cycle, Command, HapticSimulation};
use haptics::progress::NoProgress;
use haptics::scene::load_scene;
use haptics_devices::simulated::keyframe_target;
use haptics_devices::trajectory::read_trajectory;
use haptics_devices::{
    safety::OutputState, safety::SafeDevice, simulated::HandTarget, simulated::SimConfig,
    simulated::SimulatedDevice, simulated::TargetSource, ChaosConfig, ChaosDevice, Fault,
    SafetySettings,
};

#[global_allocator]
static GLOBAL: Counting = Counting;

const ENABLE_BUTTON: u32 = 0;

fn cycles() -> u64 {
    std::env::var("HAPTICS_SOAK_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000)
}

/// The seed of the hand's noise and of the chaos device's faults.
fn seed() -> u64 {
    std::env::var("HAPTICS_SOAK_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7)
}

fn cache() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("haptics-cache")
}

/// The simulated hand, following `targets` (keyframes) round and round with the enable
/// button held.
fn looping_hand(
    targets: Vec<haptics_devices::trajectory::TrajectorySample>,
    seed: u64,
) -> SimulatedDevice {
    let period = targets.last().map_or(1.0, |s| s.time_s) + 0.5;
    let mut hint = 0;
    let script = move |t: f64| {
        let phase = t.rem_euclid(period);
        if phase < 0.01 {
            hint = 0;
        }
        let mut target: HandTarget = keyframe_target(&targets, phase, &mut hint);
        target.buttons |= 1 << ENABLE_BUTTON;
        target
    };
    // The hand's own servo stalls are off: the chaos device injects longer ones, and the
    // clean tail must be clean.
    let config = SimConfig {
        seed,
        stall_probability: 0.0,
        ..SimConfig::default()
    };
    SimulatedDevice::new(config, TargetSource::Script(Box::new(script))).unwrap()
}

#[test]
fn a_million_cycles_of_adversarial_device_input_on_the_peg_in_shaft() {
    soak("peg-shaft", "peg-shaft-insert", cycles());
}

/// The deformable bridge (reduced StVK dynamics stepped every cycle) under the same
/// faults, for a fifth of the cycles: its cycles cost ten times as much.
#[test]
fn adversarial_device_input_on_the_deformable_bridge() {
    soak("bridge-probe", "bridge-probe-poke", cycles() / 5);
}

type Stack = SafeDevice<ChaosDevice<SimulatedDevice>>;

/// The simulation of the bundled scene `scene_name` and the device stack: the hand
/// following the keyframes `targets` in a loop, the chaos device, the safety layer.
fn stack(scene_name: &str, targets: &str) -> (HapticSimulation, Stack, Duration) {
    let scene = load_scene(
        &haptics::assets::asset(format!("scenes/{scene_name}.toml")),
        &cache(),
        &NoProgress,
    )
    .unwrap();
    let period = Duration::from_secs_f64(1.0 / scene.rate_hz);
    let targets = read_trajectory(&haptics::assets::asset(format!(
        "trajectories/targets/{targets}.csv"
    )))
    .unwrap()
    .samples;
    let chaos = ChaosDevice::new(
        looping_hand(targets, seed()),
        ChaosConfig {
            seed: seed(),
            ..ChaosConfig::default()
        },
    );
    let settings = SafetySettings {
        enable_button: Some(ENABLE_BUTTON),
        // Reconnect attempts are paced on the wall clock; here at every cycle, so that the
        // soak's cycles are spent on faults and contact, not on waiting.
        reconnect_interval_s: 0.0,
        ..SafetySettings::default()
    };
    let device = SafeDevice::new(chaos, settings).unwrap();
    (HapticSimulation::new(scene), device, period)
}

const TAIL: usize = 30_000;

/// How output behaved over [`TAIL`] fault-free cycles.
#[derive(Debug)]
struct Tail {
    /// The first cycle with output on (gate passed, ramp done).
    first_active: Option<usize>,
    /// Cycles with output on.
    active: usize,
    /// The largest force sent.
    peak_force: f64,
}

impl Tail {
    /// The fraction of the cycles after the first active one with output on.
    fn on_fraction(&self) -> f64 {
        self.first_active
            .map_or(0.0, |f| self.active as f64 / (TAIL - f) as f64)
    }
}

fn run_tail(
    sim: &mut HapticSimulation,
    device: &mut Stack,
    rx: &Receiver<Command>,
    period: Duration,
) -> Tail {
    let mut t = Tail {
        first_active: None,
        active: 0,
        peak_force: 0.0,
    };
    for i in 0..TAIL {
        let o = haptic_cycle(sim, device, rx, period);
        // A disconnect in progress ends within its 200 cycles.
        if i >= 200 {
            assert!(o.report.is_some_and(|r| !r.fault), "clean cycle {i}: {o:?}");
        }
        if device.state() == OutputState::Active {
            t.first_active.get_or_insert(i);
            t.active += 1;
            t.peak_force = t.peak_force.max(device.last_output().force.norm());
        }
    }
    t
}

/// Runs `n` soak cycles of the bundled scene `scene_name` with the hand following the
/// keyframes `targets` in a loop, and checks the rules of the module documentation.
fn soak(scene_name: &str, targets: &str, n: u64) {
    let (commands, rx) = crossbeam_channel::bounded(1);
    // The reference: the same stack without faults.
    let (mut sim, mut device, period) = stack(scene_name, targets);
    device.inner_mut().calm();
    let reference = run_tail(&mut sim, &mut device, &rx, period);

    let (mut sim, mut device, period) = stack(scene_name, targets);
    let home = sim.workspace;
    let (max_force, max_torque) = (device.max_force_n(), device.max_torque_nm());
    // Warm-up: first-touch allocations (none are expected, but they are not the rule).
    for _ in 0..1000 {
        haptic_cycle(&mut sim, &mut device, &rx, period);
    }
    let mut times_ns: Vec<u32> = Vec::with_capacity(n as usize);
    let (mut zero_forced, mut no_reading, mut faulted, mut failed_writes) = (0u64, 0, 0, 0);
    let allocations_before = allocations();
    let start = Instant::now();
    for _ in 0..n {
        let o = haptic_cycle(&mut sim, &mut device, &rx, period);
        times_ns.push(o.elapsed.as_nanos().min(u32::MAX as u128) as u32);
        zero_forced += u64::from(o.zero_forced);
        no_reading += u64::from(o.report.is_none());
        faulted += u64::from(o.report.is_some_and(|r| r.fault));
        failed_writes += u64::from(o.write_failed);
    }
    let wall = start.elapsed();
    let allocated = allocations() - allocations_before;

    // The clean tail: no more faults; the loop must render contact again. Button chatter
    // on the clutch re-indexed the workspace at random, so first the user re-homes it (and
    // resets the objects to their start, through the thread's command channel, which
    // re-arms the output).
    device.inner_mut().calm();
    sim.workspace = home;
    commands.send(Command::Reset).unwrap();
    let tail = run_tail(&mut sim, &mut device, &rx, period);
    let stats = device.inner().stats().clone();
    let events = {
        use haptics_devices::SafetyEvent as E;
        let ev = device.events();
        [
            E::Disconnected,
            E::Reconnected,
            E::Stall,
            E::NonFinitePose,
            E::VelocityLimit,
            E::DeadmanReleased,
        ]
        .map(|e| format!("{} {}", e.code(), ev.count(e)))
        .join(", ")
    };
    times_ns.sort_unstable();
    let pct = |p: f64| times_ns[((times_ns.len() - 1) as f64 * p) as usize] as f64 * 1e-3;
    eprintln!(
        "soak: {n} cycles of {scene_name} in {:.1} s; {} faults injected:",
        wall.as_secs_f64(),
        stats.total()
    );
    for f in Fault::ALL {
        eprintln!("  {:>20}: {}", f.name(), stats.count(f));
    }
    eprintln!("  safety layer events: {events}");
    eprintln!(
        "  cycles without a reading {no_reading}, faulted {faulted}, zero force {zero_forced}, \
         failed writes {failed_writes}; cycle time median {:.1} us, p99.9 {:.1} us, max {:.1} us; \
         max force written {:.3} N (limit {max_force}), max torque {:.4} N m (limit {max_torque}); \
         {allocated} allocations; after the faults: {tail:?}, on {:.0}% of the time after re-enabling (without faults: {:.0}%, peak {:.3} N)",
        pct(0.5),
        pct(0.999),
        pct(1.0),
        stats.max_force_n,
        stats.max_torque_nm,
        100.0 * tail.on_fraction(),
        100.0 * reference.on_fraction(),
        reference.peak_force,
    );

    // Every kind of fault happened, many times (the default rates give about one fault per
    // 50 cycles; at 10^6 cycles each kind occurs hundreds of times).
    for f in Fault::ALL {
        let expected = n / 5_000;
        assert!(
            stats.count(f) >= expected.min(10),
            "{}: only {} injected",
            f.name(),
            stats.count(f)
        );
    }
    assert!(no_reading > 0 && zero_forced >= no_reading);
    // Nothing non-finite and nothing above the limits reached the hardware. The clamp
    // scales a vector to the limit, whose norm may then differ from it by rounding.
    assert_eq!(stats.non_finite_writes, 0);
    assert!(
        stats.max_force_n <= max_force * (1.0 + 1e-12),
        "{}",
        stats.max_force_n
    );
    assert!(stats.max_torque_nm <= max_torque * (1.0 + 1e-12));
    // The force did reach the hand between faults (the soak is not all zeros).
    assert!(stats.nonzero_writes > n / 10, "{}", stats.nonzero_writes);
    // No cycle allocated, and none blocked: the slowest cycle took less than 200 ms. The
    // median is microseconds, but this machine is shared and CI runs two tests at once on
    // two cores (a slowest cycle of 32 ms was seen with a build running beside); a blocked
    // cycle, such as the SVD that once spun forever on a 1e308 reading, takes seconds or
    // never ends.
    assert_eq!(allocated, 0, "{allocated} allocations in the soak");
    assert!(
        pct(1.0) < 200_000.0,
        "the slowest cycle took {} us",
        pct(1.0)
    );
    // Recovery: after the faults stop, output re-enables (gate and ramp) and renders the
    // contacts of the trajectory (it pushes the peg into the shaft's wall, or the probe
    // into the bridge, every few seconds). The gate waits for a small commanded force,
    // which takes until the hand has drawn the object out of where the chaos left it: up
    // to two periods of the trajectory, two thirds of the tail.
    // Once on, it may still be cut by the safety layer for good reasons (a hand flung
    // faster than the velocity limit by a deep contact), but about as often as in the
    // same run without faults: within 10 percentage points.
    let first = tail
        .first_active
        .expect("output never re-enabled after the faults");
    assert!(
        first < TAIL / 3 * 2,
        "output re-enabled only at clean cycle {first}"
    );
    assert!(
        tail.on_fraction() >= reference.on_fraction() - 0.1,
        "output on {:.3} of the time after the faults, {:.3} without faults",
        tail.on_fraction(),
        reference.on_fraction()
    );
    // And the contacts are felt about as strongly as without faults: the peak force
    // between half and twice the reference's (the peak varies by where in the loop the
    // contact is met; an object caught in the bridge presses at the clamp).
    assert!(
        reference.peak_force > 0.1
            && tail.peak_force >= 0.5 * reference.peak_force
            && tail.peak_force <= 2.0 * reference.peak_force,
        "peak force after recovery {} N, {} N without faults",
        tail.peak_force,
        reference.peak_force
    );
}
