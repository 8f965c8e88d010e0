//! `haptics plan` the way a user runs it: an OMPL.app-style problem
//! (`assets/check/slot`: a 0.2 m cube and a wall with a 0.3 m slot), the path it writes
//! (which `haptics check` must pass), the report, a seed that reproduces its path byte for
//! byte, and the exit status of problems that are bad (2) or have no solution (1).

#[path = "common/cli.rs"]
mod cli;

use std::path::Path;

use cli::{haptics, stderr, stdout};
use haptics::mesh::shapes::{box_surface, union};
use nalgebra::{Point3, Vector3};

const CFG: &str = "assets/check/slot/slot.cfg";

fn plan(out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "plan",
        CFG,
        "--out",
        out.to_str().unwrap(),
        "--quiet",
        // Corners on either side of the wall: the straight motion crosses it, so the
        // trees must find the slot.
        "--start=-1,1,0",
        "--goal=1,-1,0",
    ];
    args.extend_from_slice(extra);
    haptics(&args)
}

#[test]
fn a_planned_path_passes_the_check_and_its_seed_reproduces_it() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, c) = (
        dir.path().join("a.path"),
        dir.path().join("b.path"),
        dir.path().join("c.path"),
    );
    let report = dir.path().join("r.json");
    let o = plan(&a, &["--seed", "5", "--report", report.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("SOLVED"), "{}", stdout(&o));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(r["solved"], true);
    assert_eq!(r["collision_free"], true);
    assert!(r["min_clearance"].as_f64().unwrap() > 0.0);
    assert!(r["states"].as_u64().unwrap() >= 2);
    // The trees' metric weighs turns at a quarter of the robot's radius by default.
    assert_eq!(r["rotation_weight"].as_f64(), Some(0.25));
    // Start first, goal last, as OMPL.app writes them.
    let path = haptics::check::ompl::read_path(&a).unwrap();
    assert!((path[0].position - Vector3::new(-1.0, 1.0, 0.0)).norm() < 1e-12);
    assert!((path.last().unwrap().position - Vector3::new(1.0, -1.0, 0.0)).norm() < 1e-12);
    // The path check (continuous) agrees.
    let o = haptics(&["check", CFG, "--path", a.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    // The same seed, single-threaded: the same bytes.
    let o = plan(&b, &["--seed", "5"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    // Another seed explores differently.
    let o = plan(&c, &["--seed", "6"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_ne!(std::fs::read(&a).unwrap(), std::fs::read(&c).unwrap());
}

#[test]
fn bad_problems_exit_2_and_say_which_state_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.path");
    let out = out.to_str().unwrap();
    let o = haptics(&["plan", CFG, "--out", out, "--start=-3,0,0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("the start state is outside the bounds"),
        "{}",
        stderr(&o)
    );
    // The goal inside the wall (0.1 thick; the cube is 0.2).
    let o = haptics(&["plan", CFG, "--out", out, "--goal=0,1,0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("the goal state is in collision"),
        "{}",
        stderr(&o)
    );
    let o = haptics(&["plan", CFG, "--out", out, "--goal=1,2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("expected 3 numbers"), "{}", stderr(&o));
    let o = haptics(&["plan", CFG, "--out", out, "--rotation-weight=0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--rotation-weight"), "{}", stderr(&o));
    let o = haptics(&["plan", "nowhere.cfg", "--out", out]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("nowhere.cfg"), "{}", stderr(&o));
    assert!(
        !Path::new(out).exists(),
        "no path is written for a bad problem"
    );
}

/// A closed hollow box (walls 0.4 thick: outer half-size 1.2, inner 0.8) and a 0.2 cube.
fn closed_box_problem(dir: &Path, goal: [f64; 3]) -> std::path::PathBuf {
    let outer = box_surface(Point3::origin(), Vector3::repeat(1.2), 1);
    let inner = box_surface(Point3::origin(), Vector3::repeat(0.8), 1);
    haptics::mesh::write_obj(&dir.join("world.obj"), &union(&[outer, inner])).unwrap();
    let robot = box_surface(Point3::origin(), Vector3::repeat(0.1), 1);
    haptics::mesh::write_obj(&dir.join("robot.obj"), &robot).unwrap();
    let cfg = dir.join("box.cfg");
    let text = format!(
        "[problem]\nname=box\nrobot=robot.obj\nworld=world.obj\n\
         start.x=0\nstart.y=0\nstart.z=0\nstart.theta=0\nstart.axis.x=1\nstart.axis.y=0\nstart.axis.z=0\n\
         goal.x={}\ngoal.y={}\ngoal.z={}\ngoal.theta=0\ngoal.axis.x=1\ngoal.axis.y=0\ngoal.axis.z=0\n\
         volume.min.x=-2\nvolume.min.y=-2\nvolume.min.z=-2\nvolume.max.x=2\nvolume.max.y=2\nvolume.max.z=2\n\
         [benchmark]\ntime_limit=1.5\n",
        goal[0], goal[1], goal[2]
    );
    std::fs::write(&cfg, text).unwrap();
    cfg
}

#[test]
fn a_closed_box_is_not_solved_in_time_and_a_goal_inside_a_wall_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.path");
    let report = dir.path().join("r.json");
    // The start inside the cavity, the goal outside: no path exists.
    let cfg = closed_box_problem(dir.path(), [1.6, 0.0, 0.0]);
    // A plan of it with the report, and `extra` options: the output and the report.
    let plan = |extra: &[&str]| {
        let mut args = vec![
            "plan",
            cfg.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--report",
            report.to_str().unwrap(),
            "--quiet",
        ];
        args.extend_from_slice(extra);
        let o = haptics(&args);
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        (o, r)
    };
    let (o, r) = plan(&[]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("NOT SOLVED within 1.5 s"),
        "{}",
        stdout(&o)
    );
    // With the default clearance, the summary suggests a smaller one.
    assert!(
        stdout(&o).contains("a narrow passage may need --relax-clearance or a smaller --clearance"),
        "{}",
        stdout(&o)
    );
    assert_eq!(r["solved"], false);
    // The search stops at the .cfg's time limit (a little over: the last iteration ends).
    let seconds = r["seconds"].as_f64().unwrap();
    assert!((1.5..3.0).contains(&seconds), "{seconds} s");
    assert!(!out.exists());
    // Relaxed, the search halves its clearance every 5,000 samples (the box's closed
    // cavity draws them by the tens of thousands in 1.5 s): the summary and the report
    // say from what and to what, and there is no hint.
    let (o, r) = plan(&["--relax-clearance"]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let (last, initial) = (
        r["clearance"].as_f64().unwrap(),
        r["initial_clearance"].as_f64().unwrap(),
    );
    let halvings = (r["samples"].as_u64().unwrap() / 5_000).min(8) as i32;
    assert!(halvings > 0, "{r}");
    assert_eq!(last, initial / 2f64.powi(halvings), "{r}");
    let summary = stdout(&o);
    assert!(
        summary.contains(&format!("(relaxed from {initial:.4})")),
        "{summary}"
    );
    assert!(!summary.contains("hint"), "{summary}");
    // The goal in the middle of a wall: enclosed by the world's closed surface.
    let cfg = closed_box_problem(dir.path(), [1.0, 0.0, 0.0]);
    let o = haptics(&[
        "plan",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("the goal state is inside an obstacle"),
        "{}",
        stderr(&o)
    );
}
