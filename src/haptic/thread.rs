//! The haptic thread: runs [`HapticSimulation`] against a device at a fixed rate (1 kHz
//! by default, up to 10 kHz) with the hybrid sleep/spin scheduler.
//!
//! Each cycle, in order: drain commands (non-blocking), read the device, run the cycle
//! (coupling, traversal, 6x6 solve, reduced forces, Newmark steps), write the force,
//! record the cycle time, publish a snapshot. Rules (docs/architecture.md): no allocation, no
//! blocking lock, no I/O inside a cycle; state leaves through a lock-free triple buffer;
//! commands arrive over a crossbeam channel. A cycle that overruns its period, or a device
//! read that fails, renders zero force and is counted, never hidden.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use haptics_devices::{Device, Wrench};
use nalgebra::{Isometry3, Point3, Vector3};

use crate::haptic::CycleReport;

use crate::haptic::scheduler::PeriodicScheduler;
use crate::haptic::CycleStats;
use crate::haptic::HapticSimulation;
use crate::haptic::TimingSummary;
use crate::scene::params::Param;

/// Edits sent to the haptic thread.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Command {
    /// Change a tunable parameter (validated by the sender with [`Param::validate`]; the
    /// thread clamps it into its range regardless).
    Set(Param, f64),
    /// Put the haptic object back at its initial pose and the deformables at rest
    /// ([`HapticSimulation::reset`]).
    Reset,
}

/// Contact points carried by a snapshot (the first ones in point order when more are in
/// contact; [`Snapshot::contacts_total`] has the true count).
pub const SNAPSHOT_CONTACTS: usize = 256;

/// One point in contact, for display.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ContactSample {
    /// World position of the pointshell point.
    pub position: Point3<f64>,
    /// Penalty force on the haptic object at that point (world; after the L/l scaling).
    pub force: Vector3<f64>,
}

/// State published every cycle.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// Cycles run so far (the simulation's `cycle` counter).
    pub cycle: u64,
    /// Wall time since the thread started (s), taken at the end of this cycle.
    pub time_s: f64,
    /// This cycle's report; `None` if the device read failed (and in
    /// [`Snapshot::capture`]).
    pub report: Option<CycleReport>,
    /// World pose of the haptic object's body frame.
    pub haptic_pose: Isometry3<f64>,
    /// Reduced coordinates of each environment object (empty for rigid ones).
    pub q: Vec<Vec<f64>>,
    /// Reduced coordinates of a deformable haptic object.
    pub haptic_q: Vec<f64>,
    /// Timing of the cycles so far (refreshed every 256 cycles).
    pub timing: TimingSummary,
    /// Cycles that rendered zero force because they overran or the device failed.
    pub zero_force_cycles: u64,
    /// Work time of this cycle (µs): device read to device write.
    pub cycle_us: f64,
    /// Whether the OS granted the haptic thread real-time priority.
    pub realtime: bool,
    /// `SNAPSHOT_CONTACTS` slots, the first `contact_count` valid (a fixed length, so
    /// that filling never allocates).
    contact_slots: Vec<ContactSample>,
    contact_count: usize,
    /// Points in contact over all environment objects.
    pub contacts_total: usize,
    /// The workspace's indexing transform (device to simulation world, thesis 4.5):
    /// input devices need it to move the manipulandum along world directions.
    pub workspace_index: Isometry3<f64>,
    /// The fatal vendor fault that stopped the device, once one happened (the session
    /// must end: output is zero from then on).
    pub device_fault: Option<haptics_devices::vendor::VendorFault>,
}

impl Snapshot {
    /// The current state of `sim` (allocates; the haptic thread refills one in place).
    pub fn capture(sim: &HapticSimulation) -> Self {
        let mut s = Snapshot::empty(sim);
        s.fill(sim);
        s
    }

    fn empty(sim: &HapticSimulation) -> Self {
        Snapshot {
            cycle: 0,
            time_s: 0.0,
            report: None,
            haptic_pose: sim.haptic_pose(),
            q: sim
                .scene
                .environment
                .iter()
                .map(|e| e.dynamics.as_ref().map_or(vec![], |d| d.q.clone()))
                .collect(),
            haptic_q: sim.scene.haptic.field.q().to_vec(),
            timing: CycleStats::new(1).summary(),
            zero_force_cycles: 0,
            cycle_us: 0.0,
            realtime: false,
            contact_slots: vec![ContactSample::default(); SNAPSHOT_CONTACTS],
            contact_count: 0,
            contacts_total: 0,
            workspace_index: sim.workspace.index,
            device_fault: None,
        }
    }

    /// The points in contact (at most [`SNAPSHOT_CONTACTS`]).
    pub fn contacts(&self) -> &[ContactSample] {
        &self.contact_slots[..self.contact_count]
    }

    /// Copies the simulation state in place (no allocation: the vectors keep their
    /// lengths).
    fn fill(&mut self, sim: &HapticSimulation) {
        self.haptic_pose = sim.haptic_pose();
        for (dst, e) in self.q.iter_mut().zip(&sim.scene.environment) {
            if let Some(d) = &e.dynamics {
                dst.copy_from_slice(&d.q);
            }
        }
        self.haptic_q.copy_from_slice(sim.scene.haptic.field.q());
        self.workspace_index = sim.workspace.index;
        self.contact_count = 0;
        self.contacts_total = 0;
        for i in 0..sim.scene.environment.len() {
            let out = sim.contact_output(i);
            self.contacts_total += out.contacts.len();
            for c in &out.contacts {
                if self.contact_count == SNAPSHOT_CONTACTS {
                    break;
                }
                self.contact_slots[self.contact_count] = ContactSample {
                    position: c.position,
                    force: c.force * out.scale,
                };
                self.contact_count += 1;
            }
        }
    }
}

/// A running haptic thread.
pub struct HapticThread {
    commands: Sender<Command>,
    snapshots: triple_buffer::Output<Snapshot>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<(HapticSimulation, CycleStats)>>,
}

impl HapticThread {
    /// Starts the loop at `rate_hz` on `device` (wrap real devices in
    /// `haptics_devices::safety::SafeDevice` first).
    pub fn spawn(sim: HapticSimulation, mut device: Box<dyn Device + Send>, rate_hz: f64) -> Self {
        let (tx, rx) = crossbeam_channel::bounded(256);
        let (mut input, output) = triple_buffer::triple_buffer(&Snapshot::capture(&sim));
        let stop = Arc::new(AtomicBool::new(false));
        let stop_flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("haptic".into())
            .spawn(move || {
                let realtime = request_realtime_priority();
                let mut sim = sim;
                let mut scheduler = PeriodicScheduler::new(rate_hz, Duration::from_micros(200));
                let period = scheduler.period();
                let mut stats = CycleStats::new(period.as_nanos() as u64);
                let mut zero_force = 0u64;
                // Sticky: every later snapshot reports it (the buffers rotate).
                let mut device_fault = None;
                let start = Instant::now();
                while !stop_flag.load(Ordering::Relaxed) {
                    scheduler.wait();
                    let outcome = haptic_cycle(&mut sim, &mut *device, &rx, period);
                    zero_force += u64::from(outcome.zero_forced);
                    let report = outcome.report;
                    let ns = outcome.elapsed.as_nanos() as u64;
                    stats.record(ns);
                    let snap = input.input_buffer_mut();
                    snap.cycle = sim.cycle;
                    snap.time_s = start.elapsed().as_secs_f64();
                    snap.report = report;
                    snap.zero_force_cycles = zero_force;
                    snap.cycle_us = ns as f64 * 1e-3;
                    snap.realtime = realtime;
                    device_fault = device_fault.or(outcome.fault);
                    snap.device_fault = device_fault;
                    if stats.count().is_multiple_of(256) {
                        snap.timing = stats.summary();
                    }
                    snap.fill(&sim);
                    input.publish();
                }
                let _ = device.write(&Wrench::zero());
                (sim, stats)
            })
            .expect("spawning the haptic thread");
        HapticThread {
            commands: tx,
            snapshots: output,
            stop,
            handle: Some(handle),
        }
    }

    /// Sends a command (dropped, with `false`, if 256 are already queued).
    pub fn send(&self, c: Command) -> bool {
        self.commands.try_send(c).is_ok()
    }

    /// The latest published state.
    pub fn snapshot(&mut self) -> &Snapshot {
        self.snapshots.read()
    }

    /// Stops the loop (rendering zero force) and returns the simulation and its timing.
    pub fn stop(mut self) -> (HapticSimulation, CycleStats) {
        self.stop.store(true, Ordering::Relaxed);
        let handle = self.handle.take().expect("the thread runs until stopped");
        match handle.join() {
            Ok(v) => v,
            Err(e) => std::panic::resume_unwind(e),
        }
    }
}

impl Drop for HapticThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Asks for real-time scheduling of the calling thread (Linux and other Unix: SCHED_FIFO
/// at priority 80 of 99; elsewhere the highest priority the OS offers). Returns whether
/// it was granted; refusal (no privilege) leaves the thread at normal priority.
fn request_realtime_priority() -> bool {
    use thread_priority::{ThreadPriority, ThreadPriorityValue};
    let Ok(value) = ThreadPriorityValue::try_from(80u8) else {
        return false;
    };
    #[cfg(unix)]
    {
        use thread_priority::unix::{
            set_thread_priority_and_policy, thread_native_id, RealtimeThreadSchedulePolicy,
            ThreadSchedulePolicy,
        };
        set_thread_priority_and_policy(
            thread_native_id(),
            ThreadPriority::Crossplatform(value),
            ThreadSchedulePolicy::Realtime(RealtimeThreadSchedulePolicy::Fifo),
        )
        .is_ok()
    }
    #[cfg(not(unix))]
    {
        thread_priority::set_current_thread_priority(ThreadPriority::Crossplatform(value)).is_ok()
    }
}

/// What one haptic cycle did.
#[derive(Debug, Clone, Copy)]
pub struct CycleOutcome {
    /// The simulation's report (none when the device read failed).
    pub report: Option<CycleReport>,
    /// The wrench written to the device.
    pub wrench: Wrench,
    /// Whether zero force was written instead of the report's (failed read, faulted or
    /// late cycle).
    pub zero_forced: bool,
    /// Whether the device refused the write.
    pub write_failed: bool,
    /// A fatal vendor fault reported by the read or the write.
    pub fault: Option<haptics_devices::vendor::VendorFault>,
    /// The cycle's duration, commands to write.
    pub elapsed: Duration,
}

/// One cycle of the haptic thread: drain the commands (non-blocking; after a reset the
/// device re-arms, [`Device::rearm`]), read the device, run the simulation's cycle,
/// write the wrench. Zero force is written when the read
/// failed, the cycle faulted (a non-finite or absurd pose), or the cycle took longer than
/// `period` (a late force is a wrong force). The thread's loop runs exactly this; soak
/// tests drive it directly, without the scheduler's sleeps.
pub fn haptic_cycle(
    sim: &mut HapticSimulation,
    device: &mut dyn Device,
    commands: &Receiver<Command>,
    period: Duration,
) -> CycleOutcome {
    let t0 = Instant::now();
    if apply_commands(sim, commands) {
        // The object jumped: the force goes through the gate and the ramp again.
        device.rearm();
    }
    let mut fault = None;
    let report = match device.read() {
        Ok(s) => Some(sim.device_cycle(&s.pose, s.buttons)),
        Err(e) => {
            fault = e.fatal();
            None
        }
    };
    let on_time = t0.elapsed() <= period;
    let (wrench, zero_forced) = match &report {
        Some(r) if on_time && !r.fault => (
            Wrench {
                force: r.force,
                torque: r.torque,
            },
            false,
        ),
        _ => (Wrench::zero(), true),
    };
    let written = device.write(&wrench);
    if let Err(e) = &written {
        fault = fault.or(e.fatal());
    }
    CycleOutcome {
        report,
        wrench,
        zero_forced,
        write_failed: written.is_err(),
        fault,
        elapsed: t0.elapsed(),
    }
}

/// Applies every queued command (non-blocking; commands are plain values). Returns
/// whether one was a reset.
fn apply_commands(sim: &mut HapticSimulation, rx: &Receiver<Command>) -> bool {
    let mut reset = false;
    while let Ok(c) = rx.try_recv() {
        match c {
            Command::Set(p, v) => sim.set(p, v),
            Command::Reset => {
                sim.reset();
                reset = true;
            }
        }
    }
    reset
}
