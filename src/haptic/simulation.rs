//! One haptic cycle of a scene (thesis Fig. 4.2), without threads or devices, so that a
//! live loop, a headless replay and the tests run exactly the same code:
//!
//! 1. the device pose becomes the manipulandum through the workspace (scale, clutch);
//! 2. the haptic object's deformed field follows its reduced state, and the object is
//!    pushed out of any environment point that a deformation (the environment's Newmark
//!    step, or its own) carried past the penetration limit since the last cycle
//!    ([`crate::contact::continuous::push_out`]);
//! 3. every environment pointshell is traversed against the haptic object's field;
//! 4. the static virtual coupling solves the 6x6 equilibrium of coupling, contact and
//!    friction wrenches ([`crate::coupling::friction`]) and proposes a step of the haptic
//!    object; the step is swept against every environment pointshell and cut at the first
//!    contact deeper than the penetration limit, then slid along the blocking contact
//!    ([`crate::contact::continuous`]), so no motion carries the object through a wall;
//! 5. the device wrench (the unsaturated spring, clamped) is returned; a non-finite value
//!    anywhere yields zero force and a flag;
//! 6. each deformable object takes one implicit Newmark step under its reduced contact
//!    forces.
//!
//! Allocation-free after construction.

use nalgebra::{Isometry3, Point3, Translation3, Vector3};

use crate::contact::continuous::{push_out, slide, Blocking, Overlap};
use crate::contact::ContactPoint;
use crate::contact::{
    continuous::CycleMotion, continuous::ShellSweep, continuous::SweepParams, model::PointContact,
    ContactOutput, Poses, Traversal,
};
use crate::coupling::friction::Patch;
use crate::coupling::{
    friction::FrictionProxy, pose_is_finite, workspace::Workspace, CouplingOutput, StaticCoupling,
    Step,
};
use crate::dynamics::StepEvent;
use crate::scene::{params::Param, params::Settings, EnvironmentObject, HapticField, Scene};

/// What one cycle did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CycleReport {
    /// Manipulandum pose of the grasp frame in the simulation world.
    pub manipulandum: Isometry3<f64>,
    /// Simulated pose of the haptic object's grasp frame after the cycle.
    pub simulation: Isometry3<f64>,
    /// Force for the device (N, world frame): zero when `fault` is set.
    pub force: Vector3<f64>,
    /// Torque for the device (N m, world frame): zero when `fault` is set.
    pub torque: Vector3<f64>,
    /// Nodes traversed, over all environment objects.
    pub traversed: usize,
    /// Points in contact, over all environment objects.
    pub contacts: usize,
    /// Deepest pointshell level reached (over all objects, 1-based; 0 if none).
    pub level_of_detail: usize,
    /// Rank kept by the 6x6 solve.
    pub rank: usize,
    /// A non-finite value was produced; the device got zero force.
    pub fault: bool,
    /// A deformable object diverged and was reset to rest this cycle.
    pub reset: bool,
    /// The fraction of the coupling's step that the continuous contact let through
    /// (1: all of it; less: the motion was cut at a first contact).
    pub swept: f64,
    /// The friction force on the haptic object (N, world frame; zero without friction).
    pub friction: Vector3<f64>,
    /// The friction torque on the haptic object about its grasp point (N m, world frame):
    /// the lever of the force acting at the contact patch, and the patch's torsional
    /// friction.
    pub friction_torque: Vector3<f64>,
    /// The deepest point in contact this cycle (m, positive inside; 0 without contact):
    /// how deep the haptic object touches, before this cycle's step.
    pub depth: f64,
    /// How far the haptic object was pushed out of points that a deformation carried
    /// beyond the penetration limit since the last cycle (m; 0 almost always), before
    /// the contact was measured.
    pub pushed_out: f64,
}

/// How many times a blocked step slides along the contacts that blocked it.
const SLIDES: usize = 4;

/// Rounds of [`HapticSimulation::push_out`], at most.
const PUSH_ROUNDS: usize = 3;

/// Distance lookups of [`HapticSimulation::push_out`] per cycle, at most (a count, so
/// replays stay deterministic): the muscle's jump, the most seen, takes 491.
const PUSH_LOOKUPS: usize = 1024;

/// Where a sweep's motion starts, which says what it may reuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SweepFrom {
    /// The pose of this cycle's traversal: its lookups and coherence bounds are shared.
    Traversal,
    /// Where the last sweep stopped (a slide of its rest): its gathered points are reused.
    LastSweep,
    /// Anywhere else (the push out, before the traversal): nothing is shared.
    Elsewhere,
}

/// Contacts a cycle's slides respect, at most.
const MAX_MET: usize = 64;

/// A scene being simulated.
#[derive(Debug, Clone)]
pub struct HapticSimulation {
    /// The scene: haptic object, environment objects and their settings.
    pub scene: Scene,
    /// Static virtual coupling of the haptic object's grasp frame to the manipulandum;
    /// its pose is the haptic object's simulated grasp frame.
    pub coupling: StaticCoupling,
    /// Device-to-simulation mapping (scale and clutch indexing).
    pub workspace: Workspace,
    traversals: Vec<Traversal>,
    sweeps: Vec<ShellSweep>,
    /// Contacts met by this cycle's sweeps (the slide respects them all).
    met: Vec<Blocking>,
    /// Points found beyond the penetration limit at the start of this cycle.
    overlaps: Vec<Overlap>,
    /// The grasp frame and each environment's reduced coordinates at the last traversal.
    traversed_at: Option<Isometry3<f64>>,
    traversed_q: Vec<Vec<f64>>,
    /// The haptic object's radius about its grasp point (with a margin for deformation).
    haptic_radius: f64,
    outputs: Vec<ContactOutput>,
    /// Stick/slip state of the friction.
    pub friction: FrictionProxy,
    field_force: Vec<f64>,
    /// Cycles run.
    pub cycle: u64,
    last_manipulandum: Option<Isometry3<f64>>,
    /// The haptic object's grasp frame when the scene starts, where a reset puts it.
    start: Isometry3<f64>,
    /// The device's bounds on the coupling ([`crate::haptic::device_fit`]), kept through
    /// live edits.
    caps: Option<crate::haptic::device_fit::CouplingCaps>,
    /// The clutch button's bit in a device reading's buttons.
    clutch_mask: u32,
}

/// The summed contact of one cycle's traversals.
struct Traversed {
    total: PointContact,
    traversed: usize,
    contacts: usize,
    level_of_detail: usize,
    depth: f64,
}

impl HapticSimulation {
    /// Prepares the traversals and places the manipulandum on the haptic object (the
    /// workspace index maps the device origin to the object's initial grasp frame).
    pub fn new(scene: Scene) -> Self {
        let grasp_frame = scene.haptic.pose * Translation3::from(scene.haptic.grasp.coords);
        let field_r = scene.haptic.field.r();
        let traversals = scene
            .environment
            .iter()
            .map(|e| scene.haptic.field.new_traversal(&e.shell, scene.contact))
            .collect();
        let sweeps = scene
            .environment
            .iter()
            .map(|e| scene.haptic.field.new_sweep(&e.shell))
            .collect();
        let outputs = scene
            .environment
            .iter()
            .map(|e| Traversal::output(&e.shell, field_r))
            .collect();
        HapticSimulation {
            coupling: StaticCoupling::new(scene.coupling, grasp_frame),
            workspace: Workspace::new(scene.workspace_scale, grasp_frame),
            traversals,
            sweeps,
            met: Vec::with_capacity(MAX_MET),
            // Every point of every environment could be past the limit.
            overlaps: Vec::with_capacity(scene.environment.iter().map(|e| e.shell.len()).sum()),
            traversed_at: None,
            traversed_q: scene
                .environment
                .iter()
                .map(|e| e.dynamics.as_ref().map_or(Vec::new(), |d| d.q.clone()))
                .collect(),
            haptic_radius: 1.25
                * scene
                    .haptic
                    .surface
                    .vertices
                    .iter()
                    .map(|v| (v - scene.haptic.grasp).norm())
                    .fold(0.0, f64::max),
            outputs,
            friction: FrictionProxy::default(),
            field_force: vec![0.0; field_r],
            cycle: 0,
            last_manipulandum: None,
            start: grasp_frame,
            caps: None,
            clutch_mask: haptics_devices::SafetySettings::default().clutch_mask(),
            scene,
        }
    }

    /// World pose of the haptic object's body frame.
    pub fn haptic_pose(&self) -> Isometry3<f64> {
        self.coupling.pose * Translation3::from(-self.scene.haptic.grasp.coords)
    }

    /// The current tunable settings.
    pub fn settings(&self) -> Settings {
        Settings {
            coupling: self.coupling.params,
            ..self.scene.settings()
        }
    }

    /// Bounds the coupling by a device's caps, now and through later [`Self::set`]s.
    pub fn set_caps(&mut self, caps: crate::haptic::device_fit::CouplingCaps) {
        caps.apply(&mut self.coupling.params);
        caps.apply(&mut self.scene.coupling);
        self.caps = Some(caps);
    }

    /// Sets a tunable parameter, clamped into its range and within the device's caps
    /// (allocation-free: the haptic thread applies live edits with it).
    pub fn set(&mut self, param: Param, value: f64) {
        let mut s = self.settings();
        param.set(&mut s, value);
        if let Some(caps) = &self.caps {
            caps.apply(&mut s.coupling);
        }
        self.coupling.params = s.coupling;
        if param.is_contact() {
            self.set_contact_params(|c| *c = s.contact);
        }
        if param.is_dynamics() {
            self.edit_dynamics(|d| {
                d.material_scale = s.material_scale;
                d.active_modes = s.modes_used;
                d.activation = s.activation;
            });
        }
    }

    /// Edits the contact parameters of every traversal.
    pub(crate) fn set_contact_params(
        &mut self,
        edit: impl Fn(&mut crate::contact::params::ContactParams),
    ) {
        edit(&mut self.scene.contact);
        for t in &mut self.traversals {
            edit(&mut t.params);
        }
    }

    /// Edits the integrator settings of every reduced-deformable object.
    pub(crate) fn edit_dynamics(&mut self, edit: impl Fn(&mut crate::dynamics::ReducedParams)) {
        for d in self.scene.dynamics_mut() {
            edit(&mut d.params);
        }
    }

    /// Puts the objects back as the scene starts: the haptic object at its initial pose,
    /// the deformable objects at rest; and forgets the traversal caches and the friction
    /// state. The workspace mapping is kept.
    ///
    /// The scene places the object at its initial pose, free of contact there as the scene
    /// is written; the manipulandum need not be: an object put on a stylus that is inside
    /// a wall (output off, nothing pushed it out) would start deep inside and stay caught
    /// there. From the initial pose the coupling draws the object to the manipulandum by
    /// swept motions (it stops at a wall in between, as any motion does). The haptic
    /// thread re-arms the device after a reset ([`haptics_devices::Device::rearm`]): the
    /// force stays off until the coupling's is small, when the two have met, then ramps.
    pub fn reset(&mut self) {
        self.coupling.pose = self.start;
        self.traversed_at = None;
        for t in &mut self.traversals {
            t.reset();
        }
        self.friction.reset();
        for d in self.scene.dynamics_mut() {
            d.reset();
        }
    }

    /// The last contact output of environment object `i`.
    pub fn contact_output(&self, i: usize) -> &ContactOutput {
        &self.outputs[i]
    }

    /// Runs one cycle for a device reading: its pose, and its buttons for the clutch
    /// (the step of the haptic thread, of replays and of recordings).
    pub fn device_cycle(&mut self, pose: &haptics_devices::Pose, buttons: u32) -> CycleReport {
        self.cycle(&pose.isometry(), buttons & self.clutch_mask != 0)
    }

    /// Which device button is the clutch ([`haptics_devices::SafetySettings::clutch_button`]
    /// of the device's profile; the default button 1 until set; none: no clutch).
    pub fn set_clutch_button(&mut self, button: Option<u32>) {
        self.clutch_mask = haptics_devices::safety::clutch_mask(button);
    }

    /// Runs one cycle for a device pose (device frame, metres) and clutch state.
    ///
    /// A device pose that is not finite, or whose manipulandum is not (a coordinate of
    /// 1e308 divided by a workspace scale below 1), never reaches the coupling: the cycle
    /// reports `fault`, renders zero force, keeps the simulation pose and leaves the
    /// workspace mapping (clutch included) untouched, so the next finite reading resumes.
    /// The reported manipulandum is then the last finite one (the simulation pose if there
    /// was none). Bounded time on any input.
    pub fn cycle(&mut self, device: &Isometry3<f64>, clutch: bool) -> CycleReport {
        self.cycle += 1;
        let (mapped, manipulandum) = self.map_device(device, clutch);
        self.scene.haptic.field.update_deformation();
        let pushed_out = self.push_out();
        let contact = self.traverse_environment();
        // The contact patch, shared by the two friction calls ([`patch_once`]).
        let mut patch: Option<Option<Patch>> = None;
        let (pushed, friction, friction_torque) = self.add_friction(&contact.total, &mut patch);
        let (c, swept) = self.couple(mapped.as_ref(), &pushed, contact.depth);
        self.update_friction(&c, &contact.total, &mut patch);
        let finite = !c.fault
            && c.device_force
                .iter()
                .chain(c.device_torque.iter())
                .all(|v| v.is_finite())
            && pose_is_finite(&self.coupling.pose);
        let reset = self.step_dynamics();
        // On a fault the object stays where it was: the coupling never commits a
        // non-finite pose, and the manipulandum may be the very value that was refused.
        let zero_unless = |v: Vector3<f64>| if finite { v } else { Vector3::zeros() };
        CycleReport {
            manipulandum,
            simulation: self.coupling.pose,
            force: zero_unless(c.device_force),
            torque: zero_unless(c.device_torque),
            traversed: contact.traversed,
            contacts: contact.contacts,
            level_of_detail: contact.level_of_detail,
            rank: c.rank,
            fault: !finite,
            reset,
            swept,
            friction,
            friction_torque,
            depth: contact.depth,
            pushed_out,
        }
    }

    /// Step 1: the device pose through the workspace. Returns the manipulandum when the
    /// reading maps to a finite one, and the manipulandum to report (the last finite
    /// one, else the simulation pose).
    fn map_device(
        &mut self,
        device: &Isometry3<f64>,
        clutch: bool,
    ) -> (Option<Isometry3<f64>>, Isometry3<f64>) {
        let mapped = self.workspace.try_manipulandum(device, clutch);
        if mapped.is_some() {
            self.last_manipulandum = mapped;
        }
        let shown = mapped
            .or(self.last_manipulandum)
            .unwrap_or(self.coupling.pose);
        (mapped, shown)
    }

    /// Step 3: every environment pointshell against the haptic object's field, into
    /// `self.outputs`; the summed contact and the reduced coordinates it was taken at.
    fn traverse_environment(&mut self) -> Traversed {
        let body = self.haptic_pose();
        let grasp = self.coupling.pose * Point3::origin();
        let mut sum = Traversed {
            total: PointContact::zero(),
            traversed: 0,
            contacts: 0,
            level_of_detail: 0,
            depth: 0.0,
        };
        for ((env, tr), out) in self
            .scene
            .environment
            .iter()
            .zip(&mut self.traversals)
            .zip(&mut self.outputs)
        {
            let poses = Poses {
                shell: env.pose,
                field: body,
                grasp,
            };
            let q = env.q();
            self.scene
                .haptic
                .field
                .traverse(tr, &env.shell, &poses, q, out);
            sum.total.add(&out.contact);
            sum.traversed += out.traversed;
            sum.contacts += out.contacts.len();
            sum.level_of_detail = sum.level_of_detail.max(out.deepest_level + 1);
            sum.depth = out.contacts.iter().fold(sum.depth, |d, c| d.max(-c.depth));
        }
        self.traversed_at = Some(self.coupling.pose);
        for (env, q) in self.scene.environment.iter().zip(&mut self.traversed_q) {
            if let Some(d) = &env.dynamics {
                q.copy_from_slice(&d.q);
            }
        }
        sum
    }

    /// Step 4a: the friction wrench joins the contact wrench in the coupling's
    /// equilibrium. Returns the sum and the friction force and torque.
    fn add_friction(
        &mut self,
        total: &PointContact,
        patch: &mut Option<Option<Patch>>,
    ) -> (PointContact, Vector3<f64>, Vector3<f64>) {
        let mut pushed = *total;
        if self.scene.contact.friction.is_none() {
            return (pushed, Vector3::zeros(), Vector3::zeros());
        }
        let pose = &self.coupling.pose;
        let outputs = &self.outputs;
        let (force, torque) = self.friction.add_to(
            (&pose.translation.vector, &pose.rotation),
            |n| patch_once(patch, outputs, n),
            &mut pushed,
        );
        (pushed, force, torque)
    }

    /// Step 4b: the coupling's step, swept against the environment and committed. The
    /// coupling refuses non-finite systems itself (no motion, `fault`); a bad device
    /// reading does not even reach it. Returns the output and the fraction of the step
    /// taken.
    fn couple(
        &mut self,
        mapped: Option<&Isometry3<f64>>,
        pushed: &PointContact,
        depth: f64,
    ) -> (CouplingOutput, f64) {
        match mapped.and_then(|m| Some((m, self.coupling.propose(m, pushed)?))) {
            Some((m, step)) => {
                let (pose, t) = self.swept_pose(&step, depth);
                (self.coupling.commit(m, &pose, &step), t)
            }
            None => (CouplingOutput::faulted(), 1.0),
        }
    }

    /// Step 4c: the friction proxy's stick or slip under the committed coupling.
    fn update_friction(
        &mut self,
        c: &CouplingOutput,
        total: &PointContact,
        patch: &mut Option<Option<Patch>>,
    ) {
        let (Some(f), false) = (self.scene.contact.friction, c.fault) else {
            return;
        };
        let pose = &self.coupling.pose;
        let outputs = &self.outputs;
        self.friction.update(
            &f,
            (&pose.translation.vector, &pose.rotation),
            total,
            |n| patch_once(patch, outputs, n),
            (&c.coupling_force, &c.coupling_torque),
        );
    }

    /// Step 6: reduced contact forces into each deformable object (and the held one),
    /// then one Newmark step each. Returns whether one diverged and was reset.
    fn step_dynamics(&mut self) -> bool {
        let mut reset = false;
        for (env, out) in self.scene.environment.iter_mut().zip(&self.outputs) {
            if let Some(d) = &mut env.dynamics {
                reset |= d.step(&out.reduced_force) != StepEvent::Ok;
            }
        }
        if let Some(dynamics) = self.scene.haptic.field.dynamics_mut() {
            self.field_force.fill(0.0);
            for out in &self.outputs {
                for (f, g) in self.field_force.iter_mut().zip(&out.field_reduced_force) {
                    *f += g;
                }
            }
            reset |= dynamics.step(&self.field_force) != StepEvent::Ok;
        }
        reset
    }

    /// The penetration limit of the continuous contact: the scene's `max_penetration`,
    /// at most half the haptic object's thinnest half-thickness (so that no point crosses
    /// a thin part within the limit); 0 when off.
    pub fn penetration_limit(&self) -> f64 {
        let limit = self.scene.contact.max_penetration;
        match self.scene.haptic.min_half_thickness {
            Some(h) if limit > 0.0 => limit.min(0.5 * h),
            _ => limit,
        }
    }

    /// Pushes the haptic object out of the environment points that went deeper into it
    /// than the penetration limit since the last traversal, by a deformation the sweep
    /// does not follow: a deformable environment's Newmark step (a bulging, contracting
    /// muscle under a fingertip), or the held object's own. The sweep keeps the object's
    /// motion from taking a point past the limit; this keeps the pair's end-of-cycle
    /// state within it too, so the next traversal measures at most the limit.
    ///
    /// Only the last traversal's contact points can be past it: any other point was
    /// outside, and moved relative to the object by at most `|dc| + theta R` (the grasp
    /// frame's translation and turn since, `R` the object's radius) plus
    /// `max ||U_s|| |dq|` (the environment's deformation), so a contact point is looked up
    /// again only if its depth plus that bound reaches the limit. The held object's own
    /// deformation is not in the bound (a point shallower than the limit by more than its
    /// surface moved in one cycle is not looked up; the next traversal finds it). The
    /// points past the limit give a translation ([`push_out`]), at most the limit per
    /// cycle, which is swept like any motion (a squeezed object goes only as far as the
    /// other side allows) unless every point was verified within the limit after it.
    /// Bounded by a count of lookups ([`PUSH_LOOKUPS`]); a state with more candidates
    /// than it allows (an object deep inside) is left to the penalty. Returns the
    /// distance pushed.
    fn push_out(&mut self) -> f64 {
        let limit = self.penetration_limit();
        let Some(traversed_at) = self.traversed_at else {
            return 0.0;
        };
        if limit <= 0.0 {
            return 0.0;
        }
        // The push is linear in the points' distances: a round leaves what the field's
        // curvature bends away (under a micrometre on a bulging muscle), and the next
        // takes it back, each looking the points up again at the pushed pose.
        let from = self.coupling.pose;
        let mut dx = Vector3::zeros();
        let mut verified = false;
        let mut budget = PUSH_LOOKUPS;
        for round in 0..=PUSH_ROUNDS {
            let at = Translation3::from(dx) * from;
            let Some(moved) = self.find_overlaps(&at, &traversed_at, limit, &mut budget) else {
                // More points to look up than lookups left: none in the first round (an
                // object deep inside, left to the penalty); later, the pushes so far,
                // swept.
                break;
            };
            if self.overlaps.is_empty() {
                // Every point is within the limit at `at`: the looked-up ones by their
                // distance, the others by the bound. Nothing left to sweep when no point
                // could have moved by the limit (the push of a hand held still).
                verified = moved < limit;
                break;
            }
            if round == PUSH_ROUNDS {
                break;
            }
            dx += push_out(&self.overlaps);
        }
        if !dx.iter().all(|v| v.is_finite()) || dx == Vector3::zeros() {
            return 0.0;
        }
        // At most the limit per cycle, swept: an object found deep inside comes out at
        // 1 m/s (p = 1 mm at 1 kHz) instead of jumping out in one cycle.
        if dx.norm() > limit {
            dx *= limit / dx.norm();
            verified = false;
        }
        if verified {
            self.coupling.pose = Translation3::from(dx) * from;
            return dx.norm();
        }
        let motion = CycleMotion {
            from,
            dx,
            dw: Vector3::zeros(),
            grasp: self.scene.haptic.grasp,
        };
        let params = self.sweep_params(limit);
        // (The contacts it meets are forgotten before the step's own sweep.)
        let (t, _) = self.first_contact(&motion, &params, SweepFrom::Elsewhere);
        self.coupling.pose = motion.grasp_at(t);
        t * dx.norm()
    }

    /// Fills `overlaps` with the last traversal's contact points that are deeper than
    /// `limit` in the haptic object with its grasp frame at `from` ([`Self::push_out`]),
    /// each distance and gradient taking one of `budget`'s lookups (a gradient of the
    /// deformed or exact field, six). Returns the bound on how far any point moved
    /// relative to the object since the traversal, over the environments; `None`, with
    /// no lookup made, if the candidates could need more lookups than `budget` has.
    fn find_overlaps(
        &mut self,
        from: &Isometry3<f64>,
        traversed_at: &Isometry3<f64>,
        limit: f64,
        budget: &mut usize,
    ) -> Option<f64> {
        let gradient_cost = match self.scene.haptic.field {
            HapticField::Rigid(_) => 1,
            HapticField::Exact(_) | HapticField::Deformable { .. } => 6,
        };
        let turned = (from.rotation * traversed_at.rotation.inverse()).angle();
        let object_moved = (from.translation.vector - traversed_at.translation.vector).norm()
            + turned * self.haptic_radius;
        // How far an environment's points moved relative to the object, at most.
        let moved = |env: &EnvironmentObject, q0: &[f64]| {
            let q = env.q();
            let dq = q
                .iter()
                .zip(q0)
                .map(|(a, b)| (a - b) * (a - b))
                .sum::<f64>();
            object_moved + env.shell.max_mode_norm * dq.sqrt()
        };
        let envs = || {
            self.scene
                .environment
                .iter()
                .zip(&self.outputs)
                .zip(&self.traversed_q)
        };
        // The candidates first: more than the budget could look up is no state that a
        // deformation makes in a cycle (hundreds of points past the limit: an object
        // started or reset deep inside). The push is skipped, and the penalty brings the
        // object out, as before the push existed, without the lookups' cost.
        let candidates: usize = envs()
            .map(|((env, out), q0)| {
                let m = moved(env, q0);
                out.contacts
                    .iter()
                    .filter(|c| -c.depth + m >= limit)
                    .count()
            })
            .sum();
        if candidates * (1 + gradient_cost) > *budget {
            return None;
        }
        let body = from * Translation3::from(-self.scene.haptic.grasp.coords);
        let to_body = body.inverse();
        let field = &self.scene.haptic.field;
        let mut overlaps = std::mem::take(&mut self.overlaps);
        overlaps.clear();
        let mut most = object_moved;
        for ((env, out), q0) in envs() {
            let q = env.q();
            let moved = moved(env, q0);
            most = most.max(moved);
            for c in &out.contacts {
                if -c.depth + moved < limit {
                    continue;
                }
                *budget -= 1;
                if overlaps.len() == overlaps.capacity() {
                    continue;
                }
                let at = (&body, &to_body);
                if let Some(o) = overlap_of(field, at, env, q, c.point as usize, limit) {
                    *budget -= gradient_cost;
                    overlaps.push(o);
                }
            }
        }
        self.overlaps = overlaps;
        Some(most)
    }

    /// Where the coupling's `step` may take the haptic object: the whole step, or the
    /// part before its first contact deeper than the limit against any environment
    /// pointshell, then the rest slid along that contact and swept again, up to
    /// [`SLIDES`] times. Returns the grasp frame and the fraction of the first sweep that
    /// was let through.
    fn swept_pose(&mut self, step: &Step, depth: f64) -> (nalgebra::Isometry3<f64>, f64) {
        let from = self.coupling.pose;
        let limit = self.penetration_limit();
        // No point moves relative to the held object by more than `reach` (the farthest
        // point that could touch lies within the object's radius about the grasp, plus
        // the limit): if even the deepest contact cannot come near the limit, the step is
        // safe without a sweep (the common case: free space and shallow contact).
        let (dx, dw) = (step.dx.norm(), step.dw.norm());
        let reach = dx + dw * (self.haptic_radius + limit + dx);
        let lip = self.scene.haptic.field.lipschitz();
        if limit <= 0.0 || depth + lip * reach < 0.5 * limit {
            return (step.pose_after(&from, 1.0), 1.0);
        }
        let params = self.sweep_params(limit);
        let mut motion = CycleMotion {
            from,
            dx: step.dx,
            dw: step.dw,
            grasp: self.scene.haptic.grasp,
        };
        self.met.clear();
        let (first, mut blocking) = self.first_contact(&motion, &params, SweepFrom::Traversal);
        let mut t = first;
        for _ in 0..SLIDES {
            if blocking.is_none() {
                break;
            }
            motion = slide(&motion, t, &self.met);
            (t, blocking) = self.first_contact(&motion, &params, SweepFrom::LastSweep);
        }
        (motion.grasp_at(t), first)
    }

    /// The sweep settings of the scene with penetration limit `limit`.
    fn sweep_params(&self, limit: f64) -> SweepParams {
        SweepParams {
            node_budget: self.scene.contact.sweep_budget,
            ..SweepParams::with_limit(limit)
        }
    }

    /// The least safe fraction of `motion` over the environment, with the contact that
    /// blocked it; the blocking contact and, where the motion was stopped at once, the
    /// points at the limit it would deepen join the contacts met this cycle.
    fn first_contact(
        &mut self,
        motion: &CycleMotion,
        params: &SweepParams,
        from: SweepFrom,
    ) -> (f64, Option<Blocking>) {
        let mut best = (1.0, None);
        for ((env, sweep), traversal) in self
            .scene
            .environment
            .iter()
            .zip(&mut self.sweeps)
            .zip(&self.traversals)
        {
            let q = env.q();
            let r = self.scene.haptic.field.sweep(
                sweep,
                &env.shell,
                &env.pose,
                q,
                motion,
                params,
                (from == SweepFrom::Traversal).then_some(traversal),
                from == SweepFrom::LastSweep,
            );
            if r.t < best.0 {
                best = (r.t, r.blocking);
            }
            if r.t == 0.0 {
                let room = self.met.capacity() - self.met.len();
                let at_limit = sweep.at_limit();
                self.met
                    .extend_from_slice(&at_limit[..at_limit.len().min(room)]);
            }
        }
        if let Some(b) = best.1 {
            if self.met.len() < self.met.capacity() {
                self.met.push(b);
            }
        }
        best
    }
}

/// The contact patch for the net normal `n`, computed at most once a cycle (`patch`
/// caches it): both friction calls ask for it with the same normal.
fn patch_once(
    patch: &mut Option<Option<Patch>>,
    outputs: &[ContactOutput],
    n: &Vector3<f64>,
) -> Option<Patch> {
    *patch.get_or_insert_with(|| Patch::of_contacts(contact_points(outputs), n))
}

/// Every contact point of the cycle's outputs, with its output's force scale (the patch of
/// the friction, [`Patch::of_contacts`]).
fn contact_points(outputs: &[ContactOutput]) -> impl Iterator<Item = (&ContactPoint, f64)> + Clone {
    outputs
        .iter()
        .flat_map(|o| o.contacts.iter().map(move |c| (c, o.scale)))
}

/// The overlap of environment `env`'s shell point `s` (coordinates `q`) with the held
/// object (its field, its body placed by `body.0`, `body.1` the inverse) when the point
/// is more than `1e-6 limit` beyond the penetration `limit`: how far beyond, and the
/// field's gradient there (the shell's normal where the gradient vanishes).
fn overlap_of(
    field: &HapticField,
    body: (&Isometry3<f64>, &Isometry3<f64>),
    env: &EnvironmentObject,
    q: &[f64],
    s: usize,
    limit: f64,
) -> Option<Overlap> {
    let x = env.pose * env.shell.position(s, q);
    let y = body.1 * x;
    let excess = -field.distance(&y) - limit;
    if excess <= 1e-6 * limit || excess.is_nan() {
        return None;
    }
    // The gradient as it is, not normalized: an interpolated field's is shorter than 1
    // near edges, and the push must follow its distance.
    let g = body.0.rotation * field.gradient(&y);
    let normal = if g.norm() > 1e-3 && g.iter().all(|v| v.is_finite()) {
        g
    } else {
        env.pose.rotation * env.shell.normal(s, q)
    };
    Some(Overlap { normal, excess })
}
