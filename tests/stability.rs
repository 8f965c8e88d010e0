//! The stability experiment behind `haptics stability` (issue 17): the closed loop of the
//! haptic cycle with the simulated hand and device, judged by a passivity observer. The
//! judge must tell a stable loop from an unstable one, and a faster loop must render at
//! least as stiff a contact stably as a slower one (the rendered stiffness limit grows
//! with the rate, as the sampling delay shrinks).

use haptics::haptic::stability::{largest_stable, run, Floor, Stiffness};

/// A moderate coupling at 1 kHz (700 N/m, the PHANToM-like setting of tests/haptic.rs)
/// settles: the observer drifts by under 1 mJ and the force by under 5% during the hold.
/// A coupling of 2e5 N/m at the same rate oscillates, and the judge says so.
#[test]
fn the_observer_tells_stable_from_unstable() {
    let floor = Floor::new();
    let calm = run(&floor, 1000.0, 1e5, 700.0);
    assert!(
        calm.stable(),
        "700 N/m at 1 kHz: drift {} J, spread {} N of {} N",
        calm.drift,
        calm.hold_spread,
        calm.hold_force
    );
    let stiff = run(&floor, 1000.0, 1e5, 2e5);
    assert!(
        !stiff.stable(),
        "2e5 N/m at 1 kHz judged stable: drift {} J, spread {} N of {} N",
        stiff.drift,
        stiff.hold_spread,
        stiff.hold_force
    );
    println!(
        "700 N/m: drift {:.2e} J, spread {:.2e} N; 2e5 N/m: drift {:.2e} J, spread {:.2e} N",
        calm.drift, calm.hold_spread, stiff.drift, stiff.hold_spread
    );
}

/// The largest stable coupling stiffness on a coarse ladder (doubling from 1 kN/m) grows
/// with the rate: at 4 kHz it is more than at 1 kHz (a quarter of the sampling delay).
#[test]
fn a_faster_loop_renders_at_least_as_stiff() {
    let floor = Floor::new();
    let ladder: Vec<f64> = (0..8).map(|i| 1000.0 * 2f64.powi(i)).collect();
    let limit = |rate: f64| {
        let (stable, _) = largest_stable(&floor, rate, Stiffness::Coupling, &ladder);
        stable.map_or(0.0, |r| r.coupling_k)
    };
    let (slow, fast) = (limit(1000.0), limit(4000.0));
    println!("largest stable coupling: {slow} N/m at 1 kHz, {fast} N/m at 4 kHz");
    assert!(slow >= 1000.0, "nothing stable at 1 kHz");
    assert!(fast > slow, "4 kHz: {fast} N/m, 1 kHz: {slow} N/m");
}
