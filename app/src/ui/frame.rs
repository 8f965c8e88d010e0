//! From the haptic state to what a frame draws: poses and reduced coordinates from a
//! [`Snapshot`], contact markers, and the debug views (pointshell points and the BD
//! spheres a traversal visits, thesis Fig. 3.11) computed on the render side.

use nalgebra::Translation3;

use crate::render::overlay::{bd_spheres, pointshell_points};
use crate::render::{ContactMarker, FrameState};
use haptics::contact::{deformed_field::DeformedDistanceField, Poses, Traversal};
use haptics::haptic::Snapshot;
use haptics::scene::Scene;

/// Fills `frame` from a snapshot of `scene`'s simulation (reusing its vectors).
pub fn fill_frame(snapshot: &Snapshot, scene: &Scene, frame: &mut FrameState) {
    frame.haptic_pose = snapshot.haptic_pose.cast();
    frame.manipulandum_pose = snapshot
        .report
        .as_ref()
        .map(|r| (r.manipulandum * Translation3::from(-scene.haptic.grasp.coords)).cast());
    frame.haptic_q.clear();
    frame
        .haptic_q
        .extend(snapshot.haptic_q.iter().map(|&x| x as f32));
    frame.environment_q.resize_with(snapshot.q.len(), Vec::new);
    for (dst, q) in frame.environment_q.iter_mut().zip(&snapshot.q) {
        dst.clear();
        dst.extend(q.iter().map(|&x| x as f32));
    }
    frame.contacts.clear();
    frame
        .contacts
        .extend(snapshot.contacts().iter().map(|c| ContactMarker {
            position: c.position.cast(),
            force: c.force.cast(),
        }));
    frame.lines.clear();
    frame.points.clear();
}

/// Which debug views to draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DebugViews {
    /// Pointshell levels to show as points (0 = none).
    pub pointshell_levels: usize,
    /// The BD spheres visited by the traversal.
    pub bd_spheres: bool,
}

/// The render side's contact state for the debug views: its own traversals (recording
/// visited nodes, without temporal coherence so every visited node is drawn) and, for a
/// deformable haptic object, its own copy of the deformed field (updated from the
/// snapshot's q). The shells and rigid fields are read from the scene passed to
/// [`DebugContact::add_views`]; the haptic thread's state is never touched.
#[derive(Debug)]
pub struct DebugContact {
    field: Option<Box<DeformedDistanceField>>,
    traversals: Vec<Traversal>,
    outputs: Vec<haptics::contact::ContactOutput>,
}

impl DebugContact {
    pub fn new(scene: &Scene) -> Self {
        let field = scene.haptic.field.deformed().map(|f| Box::new(f.clone()));
        let field_r = scene.haptic.field.r();
        let params = haptics::contact::params::ContactParams {
            temporal_coherence: false,
            ..scene.contact
        };
        let traversals = scene
            .environment
            .iter()
            .map(|e| {
                let mut t = Traversal::new(&e.shell, params);
                t.set_recording(true);
                t
            })
            .collect();
        DebugContact {
            field,
            outputs: scene
                .environment
                .iter()
                .map(|e| Traversal::output(&e.shell, field_r))
                .collect(),
            traversals,
        }
    }

    /// Sets the node budget of the debug traversals (follow the haptic thread's).
    pub fn set_budget(&mut self, budget: usize) {
        for t in &mut self.traversals {
            t.params.warm_budget = budget;
        }
    }

    /// Appends the enabled debug views for the state in `snapshot` of `scene` (the scene
    /// this was built for) to `frame`.
    pub fn add_views(
        &mut self,
        scene: &Scene,
        snapshot: &Snapshot,
        views: DebugViews,
        frame: &mut FrameState,
    ) {
        let body = snapshot.haptic_pose;
        let grasp = snapshot
            .report
            .as_ref()
            .map_or(body * scene.haptic.grasp, |r| {
                r.simulation.translation.vector.into()
            });
        if views.bd_spheres {
            if let Some(field) = &mut self.field {
                field.update(&snapshot.haptic_q);
            }
        }
        for (i, (env, q)) in scene.environment.iter().zip(&snapshot.q).enumerate() {
            if views.pointshell_levels > 0 {
                pointshell_points(
                    &env.shell,
                    &env.pose,
                    q,
                    views.pointshell_levels,
                    &mut frame.points,
                );
            }
            if views.bd_spheres {
                let poses = Poses {
                    shell: env.pose,
                    field: body,
                    grasp,
                };
                let (t, out) = (&mut self.traversals[i], &mut self.outputs[i]);
                match &self.field {
                    Some(field) => t.run(&env.shell, field.as_ref(), &poses, q, out),
                    // A rigid field (or a scene other than the one this was built for:
                    // its field as it is).
                    None => scene.haptic.field.traverse(t, &env.shell, &poses, q, out),
                }
                bd_spheres(
                    &env.shell,
                    &env.pose,
                    q,
                    t.visited_nodes(),
                    &mut frame.lines,
                );
            }
        }
    }
}
