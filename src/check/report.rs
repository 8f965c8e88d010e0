//! The path check's report as JSON: the document `haptics check --report` writes and the
//! Python package's `CheckReport.to_dict()` returns (one writer, so they agree).

use serde_json::{json, Value};

use super::{PathPos, Report};

/// What a check's JSON report says beyond the [`Report`].
#[derive(Debug, Clone, Copy, Default)]
pub struct ReportContext<'a> {
    /// The problem's name.
    pub name: &'a str,
    /// Seconds spent loading the meshes and building their trees.
    pub load_s: f64,
    /// The required minimum clearance, when one was given.
    pub min_clearance: Option<f64>,
    /// Whether the check passed (free, and at least the required clearance).
    pub passed: bool,
    /// Open (boundary) edges of the robot's and the world's meshes.
    pub open_edges: (usize, usize),
}

/// A path position as `{"segment": .., "t": ..}`.
pub fn pos(p: &PathPos) -> Value {
    json!({"segment": p.segment, "t": num(p.t)})
}

/// A number, or null when not finite (JSON has no infinity).
pub fn num(v: f64) -> Value {
    if v.is_finite() {
        json!(v)
    } else {
        Value::Null
    }
}

/// The report as a JSON value.
pub(crate) fn report_value(r: &Report, c: &ReportContext) -> Value {
    let contacts: Vec<Value> = r
        .contacts
        .iter()
        .map(|c| {
            json!({
                "from": pos(&c.from),
                "to": pos(&c.to),
                "objects": c.objects,
                "depth": num(c.depth),
                "deepest_at": pos(&c.deepest_at),
            })
        })
        .collect();
    let deepest = r.deepest.as_ref().map(|d| {
        json!({
            "at": pos(&d.at),
            "depth": num(d.depth),
            "direction": [num(d.direction.x), num(d.direction.y), num(d.direction.z)],
            "budget_spent": d.cut_short,
            "kind": "translational penetration depth, an upper bound: the least separating translation over the directions searched",
        })
    });
    json!({
        "problem": c.name,
        "verdict": if r.collision_free { "collision-free" } else { "collides" },
        "passed": c.passed,
        "min_clearance": num(if r.max_penetration > 0.0 { -r.max_penetration } else { r.min_clearance }),
        "min_clearance_at": pos(&r.min_clearance_at),
        "max_penetration": num(r.max_penetration),
        "deepest": deepest,
        "first_collision": r.first_collision.as_ref().map(pos),
        "contacts": contacts,
        "required_min_clearance": c.min_clearance.map(num),
        "tolerance": num(r.tolerance),
        "units": "the problem's length unit (metres after a COLLADA <unit>)",
        "robot": {"radius": num(r.robot_radius), "bounding_box_diagonal": num(r.robot_diagonal)},
        "states": r.states,
        "evaluations": r.evaluations,
        "sweeps": r.sweeps,
        "incomplete": r.incomplete,
        "timings": {"load_s": num(c.load_s), "check_s": num(r.seconds)},
        "open_edges": {"robot": c.open_edges.0, "world": c.open_edges.1},
    })
}

/// The report as pretty-printed JSON text, ending in a newline.
pub fn report_json(r: &Report, c: &ReportContext) -> String {
    let mut text = serde_json::to_string_pretty(&report_value(r, c)).unwrap_or_default();
    text.push('\n');
    text
}
