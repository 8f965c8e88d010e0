//! The planner's report as JSON: the document `haptics plan --report` writes and the
//! Python package's `PlanResult.report` holds (one writer, so they agree).

use serde_json::{json, Value};

use super::Plan;
use crate::check::Report;

/// What a plan's JSON report says beyond the [`Plan`].
#[derive(Debug, Clone, Copy)]
pub struct PlanContext<'a> {
    /// The problem's name.
    pub name: &'a str,
    /// The search's time limit (s).
    pub time_limit: f64,
    /// Wall time of planning with simplification and the final check (s).
    pub total_s: f64,
    /// The random seed of thread 0.
    pub seed: u64,
    /// Parallel restarts.
    pub threads: usize,
    /// Whether a rough path guided the samples.
    pub guided: bool,
}

/// The report as a JSON value; `check` is the path check of the planned path.
pub(crate) fn plan_value(r: &Plan, check: Option<&Report>, c: &PlanContext) -> Value {
    json!({
        "problem": c.name,
        "solved": r.solved,
        "seconds": r.solve_seconds,
        "simplify_seconds": r.simplify_seconds,
        "total_seconds": c.total_s,
        "time_limit": c.time_limit,
        "seed": c.seed,
        "threads": c.threads,
        "winning_thread": r.thread,
        "states": r.states,
        "samples": r.samples,
        "distance_queries": r.work.queries,
        "motions_checked": r.work.motions,
        "motions_refused": r.work.refused,
        "sweeps": r.work.sweeps,
        "clearance": r.clearance,
        "initial_clearance": r.initial_clearance,
        "range": r.range,
        "max_range": r.max_range,
        "rotation_weight": r.rotation_weight,
        "path_states": r.path.len(),
        "path_length": r.solved.then_some(r.length),
        "raw_path_states": r.raw_states,
        "raw_path_length": r.solved.then_some(r.raw_length),
        "min_clearance": check.map(|c| c.min_clearance),
        "collision_free": check.map(|c| c.collision_free),
        "guided": c.guided,
        "corridor": r.corridor.map(|c| json!({
            "found": c.found,
            "guided": c.guided,
            "length": c.found.then_some(c.length),
            "width": c.found.then_some(c.width),
            "cell_side": c.side,
            "expanded": c.expanded,
            "point_queries": c.queries,
            "seconds": c.seconds,
        })),
    })
}

/// The report as pretty-printed JSON text, ending in a newline.
pub fn plan_json(r: &Plan, check: Option<&Report>, c: &PlanContext) -> String {
    serde_json::to_string_pretty(&plan_value(r, check, c)).unwrap_or_default() + "\n"
}
