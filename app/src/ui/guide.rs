//! Guide paths for the planner: the held object's poses, recorded while the user drags it
//! through a scene with force feedback (the walls are felt, so the object stays outside
//! them), exported as an OMPL `.path` for `haptics plan --guide` (docs/plan.md).

use std::path::Path;

use haptics::check::ompl::format_path;
use haptics::proximity::rigid::State;
use nalgebra::Isometry3;

/// A guide being recorded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GuideRecorder {
    states: Vec<State>,
}

impl GuideRecorder {
    /// Adds the object's body pose of a frame, unless it has not moved since the last
    /// one kept (more than `min_move` in position or `min_turn` radians): the render
    /// thread sees the same pose many times while the hand rests.
    pub fn push(&mut self, pose: &Isometry3<f64>, min_move: f64, min_turn: f64) {
        let state = State::new(pose.translation.vector, pose.rotation);
        let moved = self.states.last().is_none_or(|last| {
            (state.position - last.position).norm() > min_move
                || state.orientation.angle_to(&last.orientation) > min_turn
        });
        if moved {
            self.states.push(state);
        }
    }

    /// The poses kept so far.
    pub fn len(&self) -> usize {
        self.states.len()
    }

    /// Whether none were kept.
    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }

    /// Writes the guide as an OMPL `.path` (atomically), creating its folder.
    pub fn export(&self, path: &Path) -> anyhow::Result<()> {
        use anyhow::Context as _;
        if self.states.len() < 2 {
            anyhow::bail!(
                "the guide has {} pose(s): drag the object before exporting",
                self.states.len()
            );
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        haptics::io::write_bytes_atomic(path, format_path(&self.states).as_bytes())
            .with_context(|| format!("writing {}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::{Translation3, UnitQuaternion, Vector3};

    #[test]
    fn a_resting_hand_adds_nothing_and_the_export_reads_back() {
        let mut g = GuideRecorder::default();
        let at = |x: f64, turn: f64| {
            Isometry3::from_parts(
                Translation3::new(x, 0.0, 0.0),
                UnitQuaternion::from_axis_angle(&Vector3::z_axis(), turn),
            )
        };
        g.push(&at(0.0, 0.0), 1e-3, 1e-3);
        g.push(&at(0.0005, 0.0), 1e-3, 1e-3);
        assert_eq!(g.len(), 1, "a sub-threshold move is not kept");
        g.push(&at(0.0, 0.01), 1e-3, 1e-3);
        g.push(&at(0.5, 0.01), 1e-3, 1e-3);
        assert_eq!(g.len(), 3);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sub/guide.path");
        g.export(&file).unwrap();
        let back = haptics::check::ompl::read_path(&file).unwrap();
        assert_eq!(back.len(), 3);
        assert!((back[2].position.x - 0.5).abs() < 1e-12);
        assert!((back[1].orientation.angle() - 0.01).abs() < 1e-9);
        let e = GuideRecorder::default().export(&file).unwrap_err();
        assert!(format!("{e:#}").contains("drag the object"));
    }
}
