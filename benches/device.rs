//! The device layer's added latency on real-hardware paths, through the fake vendor
//! libraries (devices/fakes, built by rustc at bench time): one round trip is what the
//! haptic thread does around its cycle, `read` the pose, compute the force, `write` it,
//! through the safety layer. The "cycle" here is a spring to the centre (a few
//! nanoseconds), so the medians are the layer's own cost:
//!
//! - `openhaptics`: the lock-free hand-off with HDAPI's servo thread (a seqlock load of
//!   the latest frame, the safety pipeline, a seqlock store of the wrench);
//! - `forcedimension`: two DHD calls (`dhdGetPositionAndOrientationFrame`,
//!   `dhdGetButtonMask`) and `dhdSetForceAndTorque`, each into the fake's mutex and
//!   trigonometry (the real SDK's cost is its USB transfer instead);
//! - `haply`: the hand-off with the Haply device's I/O thread (as `openhaptics`), which
//!   answers a fake Inverse Service's 1 kHz state updates on loopback meanwhile; after the
//!   group, the median turnaround from a state update to its force command (what the
//!   service waits for), read from the fake's log;
//! - `simulated`: the simulated hand's integration, for comparison.
//!
//! The target: at most 20 µs median added latency.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use haptics_devices::vendor::fake_inverse::{FakeInverseService, Script};
use haptics_devices::vendor::fakes;
use haptics_devices::{
    safety::SafeDevice, simulated::HandTarget, simulated::SimConfig, simulated::SimulatedDevice,
    simulated::TargetSource, vendor::dhd::ForceDimensionDevice, vendor::haply::HaplyDevice,
    vendor::openhaptics::OpenHapticsDevice, vendor::Vendor, Device, Pose, SafetySettings, Wrench,
};

fn round_trip(d: &mut dyn Device) -> Wrench {
    let s = d.read().expect("the fake device reads");
    let w = Wrench::from_force(-100.0 * s.pose.position);
    d.write(&w).expect("the fake device takes the force");
    w
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("device_roundtrip");
    // No deadman, a short ramp: the layer runs its full pipeline at full scale.
    let settings = SafetySettings {
        ramp_time_s: 0.01,
        ..SafetySettings::default()
    };

    std::env::set_var(
        "HAPTICS_OPENHAPTICS_LIB",
        fakes::build(Vendor::OpenHaptics).unwrap(),
    );
    {
        let mut d = SafeDevice::new(OpenHapticsDevice::open().unwrap(), settings.clone()).unwrap();
        g.bench_function("openhaptics", |b| b.iter(|| black_box(round_trip(&mut d))));
    }

    std::env::set_var(
        "HAPTICS_DHD_LIB",
        fakes::build(Vendor::ForceDimension).unwrap(),
    );
    {
        let mut d =
            SafeDevice::new(ForceDimensionDevice::open().unwrap(), settings.clone()).unwrap();
        g.bench_function("forcedimension", |b| {
            b.iter(|| black_box(round_trip(&mut d)))
        });
    }

    let service = FakeInverseService::start(Script::default()).unwrap();
    std::env::set_var("HAPTICS_HAPLY_SERVICE", service.address());
    {
        let mut d = SafeDevice::new(HaplyDevice::open().unwrap(), settings.clone()).unwrap();
        g.bench_function("haply", |b| b.iter(|| black_box(round_trip(&mut d))));
    }
    let mut turnaround: Vec<f64> = service.frames().iter().map(|f| f.turnaround_s).collect();
    turnaround.sort_by(f64::total_cmp);
    if !turnaround.is_empty() {
        println!(
            "haply: state update to force command, median {:.1} us, p99 {:.1} us over {} updates",
            turnaround[turnaround.len() / 2] * 1e6,
            turnaround[turnaround.len() * 99 / 100] * 1e6,
            turnaround.len()
        );
    }

    let target = TargetSource::Fixed(HandTarget::new(Pose::identity()));
    let sim = SimulatedDevice::new(SimConfig::default(), target).unwrap();
    let mut d = SafeDevice::new(sim, settings).unwrap();
    g.bench_function("simulated", |b| b.iter(|| black_box(round_trip(&mut d))));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
