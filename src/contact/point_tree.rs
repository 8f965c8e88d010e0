//! The nested point tree (thesis 3.9) with point-based BD-tree radii (3.10, after James
//! and Pai's Bounded Deformation Tree).
//!
//! A multi-resolution pointshell stores its points sorted by repulsion level: level `i`
//! occupies `points[level_offsets[i]..level_offsets[i + 1]]`. Tree depth `i` holds one
//! node per point of `L_i` = levels `0..=i`; a node at depth `i + 1` is a child of the
//! node at depth `i` whose point is nearest to it (a point of `L_i` is its own copy's
//! parent, at distance zero). The deepest depth therefore holds every point once, and a
//! point first appears at the depth of its level; deeper copies re-use its distance.
//!
//! Each node bounds its subtree by a sphere centred on its own (deformed) point, with the
//! radius (docs/equations.md, "BD-tree radius")
//!
//! ```text
//! R(q) = R0 + sum_j a_j |q_j|,   R0 = max_k |P_k - P_c|,   a_j = max_k |(U_k - U_c) e_j|
//! ```
//!
//! over the subtree's points `k`: `|p_k(q) - p_c(q)| <= |P_k - P_c| + sum_j |(U_k - U_c)
//! e_j| |q_j|` by the triangle inequality, so the sphere holds the subtree for every `q`.
//! Radii are stored in f32, rounded up, so the bound survives the rounding.

use nalgebra::{Point3, Vector3};

use crate::contact::ShellModes;
use crate::geometry::pointshell::PointGrid;
use crate::mesh::Aabb;

/// Why a pointshell cannot be organized into a tree.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PointTreeError {
    /// The pointshell has no points.
    #[error("the pointshell has no points")]
    Empty,
    /// The level offsets do not partition the points into non-empty levels.
    #[error("level offsets must start at 0, increase strictly and end at the point count {points}; got {offsets:?}")]
    BadLevels {
        /// The level offsets given.
        offsets: Vec<usize>,
        /// Number of points.
        points: usize,
    },
    /// More levels than a `u8` level index can hold.
    #[error("{levels} levels requested; at most 255 are supported")]
    TooManyLevels {
        /// Number of levels given.
        levels: usize,
    },
    /// The normals and points differ in number.
    #[error("{normals} normals for {points} points")]
    NormalCount {
        /// Number of normals given.
        normals: usize,
        /// Number of points given.
        points: usize,
    },
    /// A point has a non-finite coordinate or a normal that is not of unit length.
    #[error("point {index} is not finite or its normal is not a unit vector")]
    BadPoint {
        /// 0-based index of the point, in input order.
        index: usize,
    },
    /// The per-point modes and the pointshell differ in point count.
    #[error("the per-point modes are for {modes} points, the pointshell has {points}")]
    ModeCount {
        /// Number of points the modes cover.
        modes: usize,
        /// Number of points in the pointshell.
        points: usize,
    },
}

/// A nested point tree with BD-tree radius coefficients.
#[derive(Debug, Clone)]
pub struct NestedPointTree {
    /// Node range of every depth: depth `i` is `depth_offsets[i]..depth_offsets[i + 1]`.
    pub depth_offsets: Vec<usize>,
    /// The pointshell point of every node.
    pub node_point: Vec<u32>,
    /// Children of every node: `node_children[n].0..node_children[n].1` (node indices).
    pub node_children: Vec<(u32, u32)>,
    /// Parent of every node (`u32::MAX` for roots).
    pub node_parent: Vec<u32>,
    /// `R0` of every node.
    pub radius0: Vec<f32>,
    /// `a_j` of every node, `r` per node (empty for rigid pointshells).
    pub radius_coefficients: Vec<f32>,
    /// Reduced dimension (0 for rigid pointshells).
    pub r: usize,
}

impl NestedPointTree {
    /// Builds the tree over points sorted by level (see the module documentation).
    /// `modes` supplies `U_s` for the radius coefficients (none for rigid pointshells).
    pub fn build(
        points: &[Point3<f64>],
        level_offsets: &[usize],
        modes: Option<&ShellModes>,
    ) -> Result<Self, PointTreeError> {
        check_levels(level_offsets, points.len())?;
        let levels = level_offsets.len() - 1;
        let mut depth_offsets = vec![0usize];
        let mut node_point: Vec<u32> = (0..level_offsets[1] as u32).collect();
        let mut node_parent: Vec<u32> = vec![u32::MAX; level_offsets[1]];
        depth_offsets.push(node_point.len());
        let mut node_children = Vec::new();
        // Node index of every point of L_i at the current depth i.
        let mut node_of: Vec<u32> = (0..level_offsets[1] as u32).collect();
        for depth in 1..levels {
            let prev_count = level_offsets[depth];
            let grid = nearest_grid(&points[..prev_count]);
            let base = depth_offsets[depth - 1];
            // (parent node, point) for every point of L_{depth}.
            let mut entries: Vec<(u32, u32)> = (0..level_offsets[depth + 1])
                .map(|p| {
                    let parent_point = if p < prev_count {
                        p
                    } else {
                        let (g, _) = grid.nearest(&points[p], None).expect("L_i is not empty");
                        grid.index(g)
                    };
                    (node_of[parent_point], p as u32)
                })
                .collect();
            entries.sort_unstable();
            let start = node_point.len();
            for (parent, p) in &entries {
                node_point.push(*p);
                node_parent.push(*parent);
            }
            // Children ranges of the previous depth.
            let mut ranges = vec![(0u32, 0u32); prev_count];
            for (k, (parent, _)) in entries.iter().enumerate() {
                let local = (*parent as usize) - base;
                let id = (start + k) as u32;
                if ranges[local].1 == 0 {
                    ranges[local] = (id, id + 1);
                } else {
                    ranges[local].1 = id + 1;
                }
            }
            node_children.extend(ranges);
            node_of = vec![0; entries.len()];
            for (k, (_, p)) in entries.iter().enumerate() {
                node_of[*p as usize] = (start + k) as u32;
            }
            depth_offsets.push(node_point.len());
        }
        // The deepest nodes are leaves.
        let leaves = node_point.len() - node_children.len();
        node_children.extend(std::iter::repeat_n((0u32, 0u32), leaves));

        let r = modes.map_or(0, |m| m.r);
        let (radius0, radius_coefficients) =
            bd_radii(points, &node_point, &node_parent, &depth_offsets, modes);
        Ok(NestedPointTree {
            depth_offsets,
            node_point,
            node_children,
            node_parent,
            radius0,
            radius_coefficients,
            r,
        })
    }

    /// Number of depths (= pointshell levels).
    pub fn depths(&self) -> usize {
        self.depth_offsets.len() - 1
    }

    /// Total number of nodes.
    pub fn num_nodes(&self) -> usize {
        self.node_point.len()
    }

    /// `R(q)` of node `n`, given `|q|` component-wise.
    #[inline]
    pub fn radius(&self, n: usize, q_abs: &[f64]) -> f64 {
        let mut r = self.radius0[n] as f64;
        if self.r > 0 {
            let a = &self.radius_coefficients[n * self.r..(n + 1) * self.r];
            for (aj, qj) in a.iter().zip(q_abs) {
                r += *aj as f64 * qj;
            }
        }
        r
    }

    /// Every point in the subtree of node `n` (its own included), in depth order.
    pub fn subtree_points(&self, n: usize) -> Vec<u32> {
        let mut out = Vec::new();
        let mut stack = vec![n as u32];
        while let Some(m) = stack.pop() {
            out.push(self.node_point[m as usize]);
            let (a, b) = self.node_children[m as usize];
            stack.extend(a..b);
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

fn check_levels(level_offsets: &[usize], points: usize) -> Result<(), PointTreeError> {
    if points == 0 {
        return Err(PointTreeError::Empty);
    }
    let ok = level_offsets.len() >= 2
        && level_offsets[0] == 0
        && level_offsets.windows(2).all(|w| w[0] < w[1])
        && level_offsets.last() == Some(&points);
    if !ok {
        return Err(PointTreeError::BadLevels {
            offsets: level_offsets.to_vec(),
            points,
        });
    }
    if level_offsets.len() - 1 > 255 {
        return Err(PointTreeError::TooManyLevels {
            levels: level_offsets.len() - 1,
        });
    }
    Ok(())
}

/// `R0` and `a_j` of every node: every deepest-level point walks up its ancestor chain
/// and widens each ancestor's sphere to hold it (O(points x depths x r)).
fn bd_radii(
    points: &[Point3<f64>],
    node_point: &[u32],
    node_parent: &[u32],
    depth_offsets: &[usize],
    modes: Option<&ShellModes>,
) -> (Vec<f32>, Vec<f32>) {
    let n = node_point.len();
    let r = modes.map_or(0, |m| m.r);
    let mut r0 = vec![0f64; n];
    let mut a = vec![0f64; n * r];
    let deepest = depth_offsets[depth_offsets.len() - 2]..depth_offsets[depth_offsets.len() - 1];
    for leaf in deepest {
        let k = node_point[leaf] as usize;
        let mut c = node_parent[leaf];
        while c != u32::MAX {
            let cu = c as usize;
            let pc = node_point[cu] as usize;
            r0[cu] = r0[cu].max((points[k] - points[pc]).norm());
            if let Some(m) = modes {
                let (uk, uc) = (m.u_row(k), m.u_row(pc));
                for j in 0..r {
                    let d = Vector3::from_fn(|i, _| (uk[i * r + j] - uc[i * r + j]) as f64);
                    a[cu * r + j] = a[cu * r + j].max(d.norm());
                }
            }
            c = node_parent[cu];
        }
    }
    (
        r0.into_iter().map(round_up).collect(),
        a.into_iter().map(round_up).collect(),
    )
}

/// The smallest f32 not below `x` (radii must stay conservative after rounding).
fn round_up(x: f64) -> f32 {
    let f = x as f32;
    if (f as f64) < x {
        f.next_up()
    } else {
        f
    }
}

/// A grid for nearest-point queries over `points`: cells of about the spacing of points
/// spread over a surface the size of their bounding box (about two points per cell).
fn nearest_grid(points: &[Point3<f64>]) -> PointGrid {
    let b = Aabb::from_points(points.iter());
    let e = b.extent();
    let area = 2.0 * (e.x * e.y + e.y * e.z + e.z * e.x);
    PointGrid::new(points, (2.0 * area / points.len() as f64).sqrt())
}

/// Reorders the points of every level along a Morton (Z-order) curve, so that nodes the
/// traversal visits one after another (siblings, sorted by parent) are near each other in
/// space and in memory: their modes rows and distance-field cells share cache lines.
/// Levels keep their ranges, so the tree semantics are unchanged.
fn morton_order_levels(
    points: Vec<Point3<f64>>,
    normals: Vec<Vector3<f64>>,
    modes: Option<ShellModes>,
    level_offsets: &[usize],
) -> (Vec<Point3<f64>>, Vec<Vector3<f64>>, Option<ShellModes>) {
    let b = Aabb::from_points(points.iter());
    let scale = 1023.0 / b.extent().max().max(1e-300);
    let key = |p: &Point3<f64>| {
        let c = (p - b.min) * scale;
        morton3(c.x as u32, c.y as u32, c.z as u32)
    };
    let mut order: Vec<usize> = (0..points.len()).collect();
    for w in level_offsets.windows(2) {
        order[w[0]..w[1]].sort_by_key(|&i| (key(&points[i]), i));
    }
    let new_points = order.iter().map(|&i| points[i]).collect();
    let new_normals = order.iter().map(|&i| normals[i]).collect();
    let new_modes = modes.map(|m| {
        let row = 3 * m.r;
        let mut u = Vec::with_capacity(m.u.len());
        let mut dn = Vec::with_capacity(m.dn.len());
        for &i in &order {
            u.extend_from_slice(&m.u[i * row..(i + 1) * row]);
            dn.extend_from_slice(&m.dn[i * row..(i + 1) * row]);
        }
        ShellModes { r: m.r, u, dn }
    });
    (new_points, new_normals, new_modes)
}

/// Interleaves the low 10 bits of x, y and z.
fn morton3(x: u32, y: u32, z: u32) -> u32 {
    let spread = |mut v: u32| {
        v &= 0x3ff;
        v = (v | (v << 16)) & 0x030000ff;
        v = (v | (v << 8)) & 0x0300f00f;
        v = (v | (v << 4)) & 0x030c30c3;
        (v | (v << 2)) & 0x09249249
    };
    spread(x) | (spread(y) << 1) | (spread(z) << 2)
}

/// A pointshell ready for contact: points sorted by level, inward normals, the nested
/// tree, and (for deformable objects) the per-point modes.
#[derive(Debug, Clone)]
pub struct ContactShell {
    /// Rest positions `P_s` (body frame).
    pub points: Vec<Point3<f64>>,
    /// Unit inward normals `N_s` (body frame).
    pub normals: Vec<Vector3<f64>>,
    /// Level ranges of `points`.
    pub level_offsets: Vec<usize>,
    /// Level of every point.
    pub point_level: Vec<u8>,
    /// The nested point tree over `points`, with BD-tree radii.
    pub tree: NestedPointTree,
    /// `U_s` and `dN_s` (none for rigid pointshells).
    pub modes: Option<ShellModes>,
    /// Largest `|P_s|`: with the modes, bounds how far a point moves under rotation.
    pub reach: f64,
    /// Largest Frobenius norm of any `U_s`.
    pub max_mode_norm: f64,
    /// Largest Euclidean norm of any node's `a` coefficients.
    pub max_radius_growth: f64,
}

impl ContactShell {
    /// Checks the input and builds the tree. Points are reordered along a space-filling
    /// curve within each level (for memory locality); `points`, `normals` and `modes` of
    /// the result are in that order.
    pub fn new(
        points: Vec<Point3<f64>>,
        normals: Vec<Vector3<f64>>,
        level_offsets: Vec<usize>,
        modes: Option<ShellModes>,
    ) -> Result<Self, PointTreeError> {
        check_levels(&level_offsets, points.len())?;
        if normals.len() != points.len() {
            return Err(PointTreeError::NormalCount {
                normals: normals.len(),
                points: points.len(),
            });
        }
        if let Some(index) = points.iter().zip(&normals).position(|(p, n)| {
            let unit = (n.norm() - 1.0).abs() < 1e-6; // false for NaN too
            !p.coords.iter().all(|c| c.is_finite()) || !unit
        }) {
            return Err(PointTreeError::BadPoint { index });
        }
        if let Some(m) = &modes {
            if m.num_points() != points.len() {
                return Err(PointTreeError::ModeCount {
                    modes: m.num_points(),
                    points: points.len(),
                });
            }
        }
        let (points, normals, modes) = morton_order_levels(points, normals, modes, &level_offsets);
        let tree = NestedPointTree::build(&points, &level_offsets, modes.as_ref())?;
        let mut point_level = vec![0u8; points.len()];
        for (l, w) in level_offsets.windows(2).enumerate() {
            point_level[w[0]..w[1]].fill(l as u8);
        }
        let reach = points.iter().map(|p| p.coords.norm()).fold(0.0, f64::max);
        let max_mode_norm = modes.as_ref().map_or(0.0, |m| {
            (0..m.num_points())
                .map(|s| {
                    m.u_row(s)
                        .iter()
                        .map(|&x| (x as f64) * (x as f64))
                        .sum::<f64>()
                        .sqrt()
                })
                .fold(0.0, f64::max)
        });
        let r = tree.r;
        let max_radius_growth = if r == 0 {
            0.0
        } else {
            tree.radius_coefficients
                .chunks_exact(r)
                .map(|a| {
                    a.iter()
                        .map(|&x| (x as f64) * (x as f64))
                        .sum::<f64>()
                        .sqrt()
                })
                .fold(0.0, f64::max)
        };
        Ok(ContactShell {
            points,
            normals,
            level_offsets,
            point_level,
            tree,
            modes,
            reach,
            max_mode_norm,
            max_radius_growth,
        })
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.points.len()
    }

    /// Whether the shell has no points (never true for a built shell).
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// Reduced dimension of the modes (0 for rigid shells).
    pub fn r(&self) -> usize {
        self.tree.r
    }

    /// Deformed body-frame position `P_s + U_s q`.
    #[inline]
    pub fn position(&self, s: usize, q: &[f64]) -> Point3<f64> {
        match &self.modes {
            Some(m) => self.points[s] + m.displacement(s, q),
            None => self.points[s],
        }
    }

    /// Deformed body-frame inward normal `normalize(N_s + dN_s q)`.
    #[inline]
    pub fn normal(&self, s: usize, q: &[f64]) -> Vector3<f64> {
        match &self.modes {
            Some(m) => {
                let n = self.normals[s] + m.normal_correction(s, q);
                let len = n.norm();
                if len > 1e-12 {
                    n / len
                } else {
                    self.normals[s]
                }
            }
            None => self.normals[s],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use haptics_devices::rng::SplitMix64;

    fn sphere_points(n: usize, seed: u64) -> Vec<Point3<f64>> {
        let mut rng = SplitMix64::new(seed);
        let mut rnd = || rng.next_f64();
        (0..n)
            .map(|_| {
                let z = 2.0 * rnd() - 1.0;
                let t = 2.0 * std::f64::consts::PI * rnd();
                let rho = (1.0 - z * z).sqrt();
                Point3::new(rho * t.cos(), rho * t.sin(), z)
            })
            .collect()
    }

    #[test]
    fn tree_structure_levels_and_parents() {
        let pts = sphere_points(10 + 40 + 160, 5);
        let offsets = vec![0, 10, 50, 210];
        let tree = NestedPointTree::build(&pts, &offsets, None).unwrap();
        assert_eq!(tree.depths(), 3);
        assert_eq!(tree.depth_offsets, vec![0, 10, 60, 270]);
        // The deepest depth holds every point exactly once.
        let mut deepest: Vec<u32> = tree.node_point[60..270].to_vec();
        deepest.sort_unstable();
        assert_eq!(deepest, (0..210).collect::<Vec<u32>>());
        // Each node's parent is the nearest point of the previous level.
        for n in 10..270 {
            let p = tree.node_point[n] as usize;
            let parent = tree.node_parent[n] as usize;
            let depth = if n < 60 { 1 } else { 2 };
            let prev = offsets[depth];
            let pp = tree.node_point[parent] as usize;
            if p < prev {
                assert_eq!(pp, p, "a point of L_i is its own copy's parent");
            } else {
                let best = (0..prev)
                    .map(|k| (pts[k] - pts[p]).norm())
                    .fold(f64::INFINITY, f64::min);
                assert!(((pts[pp] - pts[p]).norm() - best).abs() < 1e-15);
            }
            let (a, b) = tree.node_children[parent];
            assert!((a as usize..b as usize).contains(&n));
        }
        // Every subtree point lies inside its rigid sphere.
        for n in 0..60 {
            let c = tree.node_point[n] as usize;
            for k in tree.subtree_points(n) {
                assert!((pts[k as usize] - pts[c]).norm() <= tree.radius0[n] as f64);
            }
        }
        assert!(tree.radius0[60..].iter().all(|&r| r == 0.0));
    }

    #[test]
    fn bad_levels_are_rejected() {
        let pts = sphere_points(20, 1);
        for offsets in [vec![0, 20, 20], vec![1, 20], vec![0, 10], vec![0]] {
            assert!(matches!(
                NestedPointTree::build(&pts, &offsets, None),
                Err(PointTreeError::BadLevels { .. })
            ));
        }
        assert_eq!(
            NestedPointTree::build(&[], &[0], None).unwrap_err(),
            PointTreeError::Empty
        );
    }

    #[test]
    fn morton_interleaves_bits() {
        assert_eq!(morton3(1, 0, 0), 1);
        assert_eq!(morton3(0, 1, 0), 2);
        assert_eq!(morton3(0, 0, 1), 4);
        assert_eq!(morton3(3, 0, 0), 0b001001);
        assert_eq!(morton3(1023, 1023, 1023), (1 << 30) - 1);
    }

    #[test]
    fn round_up_is_conservative() {
        for x in [0.1f64, 1.0 / 3.0, 1e-7, 12345.678901] {
            assert!(round_up(x) as f64 >= x);
            assert!((round_up(x) as f64 - x) <= x * 2e-7);
        }
    }
}
