//! The fast grid distance (the default [`super::SdfMethod::BandAndPropagate`]):
//!
//! 1. **Narrow band.** Every grid node within a triangle's bounding box expanded by the
//!    band width b (and within b of its plane) gets the exact distance to that triangle;
//!    each node keeps the smallest and the triangle's id. A node within b of the surface
//!    lies in the expanded box of its closest triangle, so every node whose recorded
//!    distance is <= b is exact. The grid is split into z-slabs, processed in parallel,
//!    each with the triangles whose expanded z-range meets it: no two threads write the
//!    same node, so no atomics are needed.
//! 2. **Closest-triangle propagation** (Bridson, "Fluid Simulation for Computer
//!    Graphics", 4.3; Tsai 2002): sweeps along +x, -x, +y, -y, +z, -z, twice; a node whose
//!    neighbour along the sweep carries a different triangle evaluates the exact
//!    distance to that triangle and keeps the smaller. Equal ids are skipped, which makes
//!    the sweeps cheap. The result is the exact distance to *some* triangle, hence never
//!    below the true distance, and exact whenever the true closest triangle reaches the
//!    node through a chain of neighbours (the common case).
//! 3. **Sign.** Band nodes take the sign of the angle-weighted pseudonormal of the
//!    closest feature of their (exact) closest triangle; the other nodes take it by a
//!    flood fill through non-band nodes (see [`flood_sign`] for why that is valid).
//!
//! Working storage is one [`Slot`] (8 bytes) per node, reused by every stage.

use nalgebra::{Point3, Vector3};
use rayon::prelude::*;

use super::stage;
use crate::progress::Progress;
use crate::proximity::triangle::{closest_point, Feature};

/// No triangle has reached the node yet.
pub(crate) const NO_TRIANGLE: u32 = u32::MAX;
/// Sign stage: the node's sign is not known yet.
const UNKNOWN: u32 = 0;
/// Sign stage: the node's value carries its sign.
const KNOWN: u32 = 1;

/// z-planes per slab of the band pass.
const SLAB: usize = 4;

/// Working state of one node. Distance stages: `v` is the squared distance to triangle
/// `tag` (or infinity and [`NO_TRIANGLE`]). Sign stage: `v` is the distance and `tag`
/// says whether its sign is known.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Slot {
    pub v: f32,
    pub tag: u32,
}

/// Bytes of working storage per grid node.
pub(crate) const SLOT_BYTES: u64 = std::mem::size_of::<Slot>() as u64;

/// A regular grid of nodes: node (i, j, k) is at origin + h (i, j, k).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Grid {
    pub origin: Point3<f64>,
    pub h: f64,
    /// Nodes per axis.
    pub nodes: [usize; 3],
}

impl Grid {
    pub fn len(&self) -> usize {
        self.nodes[0] * self.nodes[1] * self.nodes[2]
    }

    #[inline]
    pub fn point(&self, i: usize, j: usize, k: usize) -> Point3<f64> {
        Point3::new(
            self.origin.x + i as f64 * self.h,
            self.origin.y + j as f64 * self.h,
            self.origin.z + k as f64 * self.h,
        )
    }
}

/// A triangle's corners.
pub(crate) type Tri = [Point3<f64>; 3];

/// The triangles' corners, copied so the inner loops read them contiguously.
pub(crate) fn corners(vertices: &[Point3<f64>], triangles: &[[usize; 3]]) -> Vec<Tri> {
    triangles
        .iter()
        .map(|t| [vertices[t[0]], vertices[t[1]], vertices[t[2]]])
        .collect()
}

#[inline]
fn dist2(p: &Point3<f64>, t: &Tri) -> f64 {
    (closest_point(p, &t[0], &t[1], &t[2]).0 - p).norm_squared()
}

/// The node indices in [0, n) whose coordinate origin + h i lies in [lo, hi].
fn axis_range(lo: f64, hi: f64, origin: f64, h: f64, n: usize) -> Option<(usize, usize)> {
    let a = ((lo - origin) / h).ceil();
    let b = ((hi - origin) / h).floor();
    let top = n.checked_sub(1)? as f64;
    if a.is_nan() || b.is_nan() || a > b || b < 0.0 || a > top {
        return None;
    }
    Some((a.max(0.0) as usize, b.min(top) as usize))
}

/// The node range of `tri`'s bounding box expanded by `width`, per axis.
fn expanded_ranges(grid: &Grid, tri: &Tri, width: f64) -> Option<[(usize, usize); 3]> {
    let mut out = [(0, 0); 3];
    for (a, r) in out.iter_mut().enumerate() {
        let lo = tri[0][a].min(tri[1][a]).min(tri[2][a]) - width;
        let hi = tri[0][a].max(tri[1][a]).max(tri[2][a]) + width;
        *r = axis_range(lo, hi, grid.origin[a], grid.h, grid.nodes[a])?;
    }
    Some(out)
}

/// Nodes i0..=i1 of the row (j, k) whose distance to the plane of `tri` (unit normal
/// `n`, zero for a degenerate triangle) is at most `width`: a node within `width` of the
/// triangle is within `width` of its plane, so nothing in the band is skipped.
#[allow(clippy::too_many_arguments)]
fn row_interval(
    grid: &Grid,
    tri: &Tri,
    n: &Vector3<f64>,
    width: f64,
    (i0, i1): (usize, usize),
    j: usize,
    k: usize,
) -> Option<(usize, usize)> {
    let c0 = n.dot(&(grid.point(i0, j, k) - tri[0]));
    let slope = n.x * grid.h;
    if slope == 0.0 {
        return (c0.abs() <= width).then_some((i0, i1));
    }
    let (s1, s2) = ((-width - c0) / slope, (width - c0) / slope);
    let (a, b) = (s1.min(s2).ceil(), s1.max(s2).floor());
    let span = (i1 - i0) as f64;
    if a.is_nan() || b.is_nan() || a > b || b < 0.0 || a > span {
        return None;
    }
    Some((i0 + a.max(0.0) as usize, i0 + b.min(span) as usize))
}

/// Writes triangle `t`'s squared distance into the nodes of its expanded box that lie in
/// z-planes [k_first, k_first + chunk planes), where it beats the stored one.
fn splat(grid: &Grid, tri: &Tri, t: u32, width: f64, k_first: usize, chunk: &mut [Slot]) {
    let Some([ri, rj, rk]) = expanded_ranges(grid, tri, width) else {
        return;
    };
    let [nx, ny, _] = grid.nodes;
    let planes = chunk.len() / (nx * ny);
    let k_lo = rk.0.max(k_first);
    let k_hi = rk.1.min(k_first + planes - 1);
    let normal = (tri[1] - tri[0]).cross(&(tri[2] - tri[0]));
    let len = normal.norm();
    let unit = if len > 0.0 {
        normal / len
    } else {
        Vector3::zeros()
    };
    // Slack for rounding in the plane test: the pruning must never drop a band node.
    let slack = width * (1.0 + 1e-9) + 1e-12 * grid.h;
    for k in k_lo..=k_hi {
        for j in rj.0..=rj.1 {
            let Some((lo, hi)) = row_interval(grid, tri, &unit, slack, ri, j, k) else {
                continue;
            };
            let row = &mut chunk[((k - k_first) * ny + j) * nx..][..nx];
            for (i, s) in row.iter_mut().enumerate().take(hi + 1).skip(lo) {
                let d2 = dist2(&grid.point(i, j, k), tri) as f32;
                if d2 < s.v {
                    *s = Slot { v: d2, tag: t };
                }
            }
        }
    }
}

/// Stage 1: the narrow band of half-width `width` (model units). Reported as the stage
/// [`stage::BAND`], counting finished slabs.
pub(crate) fn band(grid: &Grid, tris: &[Tri], width: f64, progress: &dyn Progress) -> Vec<Slot> {
    let [nx, ny, nz] = grid.nodes;
    let plane = nx * ny;
    let slabs = nz.div_ceil(SLAB);
    let mut buckets: Vec<Vec<u32>> = vec![Vec::new(); slabs];
    for (t, tri) in tris.iter().enumerate() {
        if let Some([_, _, (k0, k1)]) = expanded_ranges(grid, tri, width) {
            for bucket in &mut buckets[k0 / SLAB..=k1 / SLAB] {
                bucket.push(t as u32);
            }
        }
    }
    let mut slots = vec![
        Slot {
            v: f32::INFINITY,
            tag: NO_TRIANGLE,
        };
        grid.len()
    ];
    progress.stage(stage::BAND, slabs as u64);
    slots
        .par_chunks_mut(SLAB * plane)
        .zip(buckets.par_iter())
        .enumerate()
        .for_each(|(s, (chunk, bucket))| {
            for &t in bucket {
                splat(grid, &tris[t as usize], t, width, s * SLAB, chunk);
            }
            progress.advance(1);
        });
    progress.finish();
    slots
}

/// Runs `relax(from, to, i, j, k)` along every grid line parallel to `axis`, visiting
/// nodes in increasing (`forward`) or decreasing order so a value can travel the whole
/// line in one sweep; (i, j, k) is the node of `to`. Lines run in parallel. Returns how
/// many calls returned true.
fn sweep<F>(data: &mut [Slot], n: [usize; 3], axis: usize, forward: bool, relax: &F) -> u64
where
    F: Fn(&Slot, &mut Slot, usize, usize, usize) -> bool + Sync,
{
    let [nx, ny, _] = n;
    let plane = nx * ny;
    match axis {
        0 => data
            .par_chunks_mut(nx)
            .enumerate()
            .map(|(r, row)| {
                let (j, k) = (r % ny, r / ny);
                let mut changed = 0;
                for step in 1..nx {
                    let (from, to) = if forward {
                        (step - 1, step)
                    } else {
                        (nx - step, nx - step - 1)
                    };
                    let src = row[from];
                    changed += relax(&src, &mut row[to], to, j, k) as u64;
                }
                changed
            })
            .sum(),
        1 => data
            .par_chunks_mut(plane)
            .enumerate()
            .map(|(k, pl)| {
                let mut changed = 0;
                for step in 1..ny {
                    let (from, to) = if forward {
                        (step - 1, step)
                    } else {
                        (ny - step, ny - step - 1)
                    };
                    let (src, dst) = two_rows(pl, nx, from, to);
                    for (i, (s, d)) in src.iter().zip(dst.iter_mut()).enumerate() {
                        changed += relax(s, d, i, to, k) as u64;
                    }
                }
                changed
            })
            .sum(),
        _ => {
            let nz = data.len() / plane;
            let mut changed = 0;
            for step in 1..nz {
                let (from, to) = if forward {
                    (step - 1, step)
                } else {
                    (nz - step, nz - step - 1)
                };
                let (src, dst) = two_rows(data, plane, from, to);
                changed += dst
                    .par_chunks_mut(nx)
                    .zip(src.par_chunks(nx))
                    .enumerate()
                    .map(|(j, (d, s))| {
                        let mut c = 0;
                        for (i, (s, d)) in s.iter().zip(d.iter_mut()).enumerate() {
                            c += relax(s, d, i, j, to) as u64;
                        }
                        c
                    })
                    .sum::<u64>();
            }
            changed
        }
    }
}

/// Rows `from` (shared) and `to` (mutable) of length `len` of `data`; from != to.
fn two_rows(data: &mut [Slot], len: usize, from: usize, to: usize) -> (&[Slot], &mut [Slot]) {
    if from < to {
        let (a, b) = data.split_at_mut(to * len);
        (&a[from * len..][..len], &mut b[..len])
    } else {
        let (a, b) = data.split_at_mut(from * len);
        (&b[..len], &mut a[to * len..][..len])
    }
}

/// Stage 2: closest-triangle propagation, two rounds of sweeps along +-x, +-y, +-z.
/// Band nodes (squared distance <= width^2) are already exact and are skipped.
/// Reported as the stage [`stage::PROPAGATE`], counting sweeps.
pub(crate) fn propagate(
    grid: &Grid,
    tris: &[Tri],
    slots: &mut [Slot],
    width: f64,
    progress: &dyn Progress,
) {
    let band2 = (width * width) as f32;
    let relax = |src: &Slot, dst: &mut Slot, i: usize, j: usize, k: usize| {
        if src.tag == NO_TRIANGLE || src.tag == dst.tag || dst.v <= band2 {
            return false;
        }
        let d2 = dist2(&grid.point(i, j, k), &tris[src.tag as usize]) as f32;
        if d2 < dst.v {
            *dst = Slot {
                v: d2,
                tag: src.tag,
            };
            true
        } else {
            false
        }
    };
    const ROUNDS: u64 = 2;
    progress.stage(stage::PROPAGATE, ROUNDS * 6);
    for _ in 0..ROUNDS {
        for axis in 0..3 {
            for forward in [true, false] {
                sweep(slots, grid.nodes, axis, forward, &relax);
                progress.advance(1);
            }
        }
    }
    progress.finish();
}

/// The triangles around each vertex (compressed rows), for [`descend`].
pub(crate) struct Fans {
    start: Vec<u32>,
    list: Vec<u32>,
    triangles: Vec<[u32; 3]>,
}

impl Fans {
    pub fn new(triangles: &[[usize; 3]], vertices: usize) -> Self {
        let mut start = vec![0u32; vertices + 1];
        for t in triangles {
            for &v in t {
                start[v + 1] += 1;
            }
        }
        for v in 0..vertices {
            start[v + 1] += start[v];
        }
        let mut fill = start.clone();
        let mut list = vec![0u32; 3 * triangles.len()];
        for (ti, t) in triangles.iter().enumerate() {
            for &v in t {
                list[fill[v] as usize] = ti as u32;
                fill[v] += 1;
            }
        }
        Fans {
            start,
            list,
            triangles: triangles.iter().map(|t| t.map(|v| v as u32)).collect(),
        }
    }

    fn fan(&self, v: u32) -> &[u32] {
        &self.list[self.start[v as usize] as usize..self.start[v as usize + 1] as usize]
    }
}

/// Local descent over the mesh from triangle `t`: while the closest point of p on the
/// current triangle lies on an edge or a vertex, a triangle around that feature's
/// vertices may be closer; move to the closest such triangle until none is strictly
/// closer. Propagation leaves a node with a triangle near its true closest one (the
/// closest triangle of a neighbour); this finishes the job where the true one lies
/// between the grid's rays (fine triangles far from the node). Returns the triangle, the
/// closest point and its feature.
fn descend(
    p: &Point3<f64>,
    mut t: usize,
    tris: &[Tri],
    fans: &Fans,
) -> (usize, Point3<f64>, Feature) {
    let (mut q, mut f) = closest_point(p, &tris[t][0], &tris[t][1], &tris[t][2]);
    let mut d2 = (q - p).norm_squared();
    // Each step strictly decreases the distance, so it ends; the bound only guards
    // against pathological meshes.
    for _ in 0..64 {
        let tv = fans.triangles[t];
        let (a, b) = match f {
            Feature::Face => break,
            Feature::Vertex(a) => (tv[a as usize], tv[a as usize]),
            Feature::Edge(a, b) => (tv[a as usize], tv[b as usize]),
        };
        let mut best: Option<(usize, Point3<f64>, Feature, f64)> = None;
        let mut best_d2 = d2;
        let candidates = fans
            .fan(a)
            .iter()
            .chain(if a == b { &[][..] } else { fans.fan(b) });
        for &u in candidates {
            let u = u as usize;
            if u == t {
                continue;
            }
            let (qu, fu) = closest_point(p, &tris[u][0], &tris[u][1], &tris[u][2]);
            let du = (qu - p).norm_squared();
            if du < best_d2 {
                best_d2 = du;
                best = Some((u, qu, fu, du));
            }
        }
        match best {
            Some((u, qu, fu, du)) => (t, q, f, d2) = (u, qu, fu, du),
            None => break,
        }
    }
    (t, q, f)
}

/// Replaces each node's squared distance by the distance to its triangle, recomputed in
/// f64 (unsigned fields).
pub(crate) fn finish_unsigned(
    grid: &Grid,
    tris: &[Tri],
    fans: &Fans,
    slots: &[Slot],
    width: f64,
) -> Vec<f32> {
    let [nx, ny, _] = grid.nodes;
    let band2 = (width * width) as f32;
    slots
        .par_chunks(nx)
        .enumerate()
        .flat_map_iter(|(r, row)| {
            let (j, k) = (r % ny, r / ny);
            row.iter().enumerate().map(move |(i, s)| {
                if s.tag == NO_TRIANGLE {
                    return f32::INFINITY;
                }
                let p = grid.point(i, j, k);
                let q = if s.v <= band2 {
                    let t = &tris[s.tag as usize];
                    closest_point(&p, &t[0], &t[1], &t[2]).0
                } else {
                    descend(&p, s.tag as usize, tris, fans).1
                };
                (p - q).norm() as f32
            })
        })
        .collect()
}

/// Stage 3a: signed values on the band. Each node gets the f64 distance to its triangle
/// (after [`descend`] outside the band);
/// band nodes (distance <= width) get the sign of `pseudonormal(triangle, feature)` at
/// their closest point and are marked known, the others stay positive and unknown.
/// Returns the number of known nodes.
pub(crate) fn sign_band(
    grid: &Grid,
    tris: &[Tri],
    fans: &Fans,
    slots: &mut [Slot],
    width: f64,
    pseudonormal: &(dyn Fn(usize, Feature) -> Vector3<f64> + Sync),
) -> u64 {
    let [nx, ny, _] = grid.nodes;
    let band2 = (width * width) as f32;
    slots
        .par_chunks_mut(nx)
        .enumerate()
        .map(|(r, row)| {
            let (j, k) = (r % ny, r / ny);
            let mut known = 0;
            for (i, s) in row.iter_mut().enumerate() {
                if s.tag == NO_TRIANGLE {
                    // Unreachable once the band is non-empty (sweeps reach every node).
                    *s = Slot {
                        v: f32::INFINITY,
                        tag: UNKNOWN,
                    };
                    continue;
                }
                let p = grid.point(i, j, k);
                let (t, q, f) = if s.v <= band2 {
                    let t = s.tag as usize;
                    let (q, f) = closest_point(&p, &tris[t][0], &tris[t][1], &tris[t][2]);
                    (t, q, f)
                } else {
                    descend(&p, s.tag as usize, tris, fans)
                };
                let d = (p - q).norm();
                *s = if d <= width {
                    known += 1;
                    let n = pseudonormal(t, f);
                    Slot {
                        v: if (p - q).dot(&n) < 0.0 { -d } else { d } as f32,
                        tag: KNOWN,
                    }
                } else {
                    Slot {
                        v: d as f32,
                        tag: UNKNOWN,
                    }
                };
            }
            known
        })
        .sum()
}

/// Stage 3b: the sign of the nodes outside the band, flood-filled from the band through
/// non-band nodes by repeated sweeps until nothing changes.
///
/// Why this is valid: a non-band node q has |d(q)| > b >= h (the band width is at least
/// one cell). If the grid edge from q to a neighbour p crossed the surface at a point s,
/// then |d(q)| <= |q - s| <= h, a contradiction. So no grid edge touching a non-band
/// node crosses the surface, and every such node has the sign of each of its
/// neighbours; a flood fill through non-band nodes, seeded by the band's exact signs,
/// gives every node its true sign. Reported as the stage [`stage::SIGN`], counting
/// signed nodes.
pub(crate) fn flood_sign(grid: &Grid, slots: &mut [Slot], mut known: u64, progress: &dyn Progress) {
    let relax = |src: &Slot, dst: &mut Slot, _: usize, _: usize, _: usize| {
        if dst.tag == UNKNOWN && src.tag == KNOWN {
            dst.v = dst.v.copysign(src.v);
            dst.tag = KNOWN;
            true
        } else {
            false
        }
    };
    progress.stage(stage::SIGN, slots.len() as u64);
    progress.set(known);
    loop {
        let mut changed = 0;
        for axis in 0..3 {
            for forward in [true, false] {
                changed += sweep(slots, grid.nodes, axis, forward, &relax);
            }
        }
        known += changed;
        progress.set(known);
        if changed == 0 {
            break;
        }
    }
    progress.finish();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(n: usize) -> Grid {
        Grid {
            origin: Point3::new(-1.0, -1.0, -1.0),
            h: 2.0 / (n - 1) as f64,
            nodes: [n, n + 1, n + 2],
        }
    }

    #[test]
    fn axis_range_selects_the_nodes_inside_and_clamps() {
        assert_eq!(axis_range(0.5, 2.5, 0.0, 1.0, 10), Some((1, 2)));
        assert_eq!(axis_range(-5.0, 2.0, 0.0, 1.0, 10), Some((0, 2)));
        assert_eq!(axis_range(8.5, 50.0, 0.0, 1.0, 10), Some((9, 9)));
        assert_eq!(axis_range(0.2, 0.8, 0.0, 1.0, 10), None);
        assert_eq!(axis_range(-3.0, -1.0, 0.0, 1.0, 10), None);
        assert_eq!(axis_range(f64::NAN, 1.0, 0.0, 1.0, 10), None);
    }

    #[test]
    fn row_interval_keeps_every_node_near_the_plane() {
        let g = grid(21);
        let tri: Tri = [
            Point3::new(-0.3, -0.2, 0.1),
            Point3::new(0.5, 0.1, 0.4),
            Point3::new(0.0, 0.6, -0.3),
        ];
        let n = (tri[1] - tri[0]).cross(&(tri[2] - tri[0])).normalize();
        let w = 0.25;
        for k in 0..g.nodes[2] {
            for j in 0..g.nodes[1] {
                let r = row_interval(&g, &tri, &n, w, (2, 17), j, k);
                for i in 2..=17 {
                    let near = n.dot(&(g.point(i, j, k) - tri[0])).abs() <= w;
                    let kept = r.is_some_and(|(a, b)| a <= i && i <= b);
                    assert_eq!(near, kept, "node ({i}, {j}, {k})");
                }
            }
        }
    }

    #[test]
    fn sweeps_carry_a_value_along_each_axis_in_both_directions() {
        let g = grid(5);
        let [nx, ny, nz] = g.nodes;
        for axis in 0..3 {
            for forward in [true, false] {
                let mut d = vec![Slot { v: 0.0, tag: 0 }; g.len()];
                // Seed the first node of every line in sweep order.
                let first = if forward { 0 } else { g.nodes[axis] - 1 };
                for k in 0..nz {
                    for j in 0..ny {
                        for i in 0..nx {
                            if [i, j, k][axis] == first {
                                d[(k * ny + j) * nx + i].tag = 1;
                            }
                        }
                    }
                }
                let relax = |s: &Slot, t: &mut Slot, _: usize, _: usize, _: usize| {
                    let c = s.tag == 1 && t.tag == 0;
                    if c {
                        t.tag = 1;
                    }
                    c
                };
                let changed = sweep(&mut d, g.nodes, axis, forward, &relax);
                assert!(d.iter().all(|s| s.tag == 1), "axis {axis} {forward}");
                let seeds = g.len() / g.nodes[axis];
                assert_eq!(changed as usize, g.len() - seeds);
            }
        }
    }
}
