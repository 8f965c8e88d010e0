//! Voxelization of a triangle surface into a hexahedral (voxel) simulation mesh, and the
//! conforming split of hexes into tetrahedra.
//!
//! What it computes: the set of cubic voxels of a regular grid that intersect the surface,
//! optionally together with the voxels enclosed by them, as a [`VolumeMesh`] of hexes that
//! share their vertices with their neighbours (Vega's node order, positive Jacobian).
//!
//! Method (Barbic 2007, thesis section 2.5.2, "voxelization"; Vega's voxel meshes):
//! 1. The bounding box of the surface is made into a cube (side = its largest extent),
//!    enlarged by `box_enlarge` about its centre, and split into `resolution^3` voxels.
//! 2. Every triangle is tested against the voxels in its own bounding box with the exact
//!    triangle/box overlap test of Akenine-Moller ("Fast 3D triangle-box overlap
//!    testing", 2001): the separating axis theorem with the 3 box normals, the triangle
//!    normal, and the 9 cross products of box axes and triangle edges. Boxes are closed
//!    (touching counts as overlap). The triangle loop runs in parallel, each overlap
//!    setting a bit of a shared atomic bitset; OR is order independent, so the result is
//!    deterministic.
//! 3. Optionally, the voxels not in the shell are flood filled (6-connected, breadth
//!    first with an explicit queue) from the boundary of the grid; what the fill does not
//!    reach is the interior and is kept too. For a surface with holes (a polygon soup)
//!    the fill leaks through holes larger than a voxel, as in Vega.
//! 4. Kept voxels are numbered in lexicographic order of their `[i, j, k]` grid
//!    coordinates, and vertices in lexicographic order of their grid coordinates (the
//!    order of Vega's voxel `.veg` files: `k` fastest).
//!
//! [`hex_to_tets`] splits every hex into six positively oriented tets along its
//! `v0`-`v6` diagonal (Kuhn / Freudenthal subdivision), which gives a conforming tet mesh
//! for a voxel grid because neighbouring voxels pick the same diagonal on a shared face.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};

use nalgebra::{Point3, Vector3};
use rayon::prelude::*;

use crate::progress::Progress;

use super::volume::{ElementKind, Material, VolumeMesh, HEX_CORNERS};
use crate::mesh::SurfaceMesh;

/// The voxelizer refuses work whose estimated memory exceeds this many bytes (8 GiB).
pub const MAX_VOXELIZE_BYTES: u64 = 8 << 30;

/// Parameters of [`voxelize`].
#[derive(Debug, Clone, PartialEq)]
pub struct VoxelizeOptions {
    /// Number of voxels along each side of the (cubic) grid.
    pub resolution: usize,
    /// Factor by which the cube around the surface is enlarged about its centre (>= 1).
    pub box_enlarge: f64,
    /// Keep the voxels enclosed by the surface, not only those that intersect it.
    pub fill_interior: bool,
    /// The material of every voxel.
    pub material: Material,
}

impl Default for VoxelizeOptions {
    /// Resolution 32, enlargement 1.2, filled, and Vega's default voxel material
    /// (density 1000 kg/m^3, E = 1e6 Pa, nu = 0.45).
    fn default() -> Self {
        VoxelizeOptions {
            resolution: 32,
            box_enlarge: 1.2,
            fill_interior: true,
            material: Material::new("default", 1000.0, 1e6, 0.45),
        }
    }
}

/// The result of [`voxelize`].
#[derive(Debug, Clone, PartialEq)]
pub struct Voxelization {
    /// Hex mesh of the kept voxels, in lexicographic order of `voxel_coords`.
    pub mesh: VolumeMesh,
    /// The corner of the grid with the smallest coordinates.
    pub grid_origin: Point3<f64>,
    /// Edge length of a voxel.
    pub voxel_size: f64,
    /// Voxels along each side of the grid.
    pub resolution: usize,
    /// Grid coordinates `[i, j, k]` of every element: it spans
    /// `grid_origin + voxel_size * ([i, j, k] .. [i+1, j+1, k+1])`.
    pub voxel_coords: Vec<[usize; 3]>,
}

impl Voxelization {
    /// Number of kept voxels (hex elements).
    pub fn num_voxels(&self) -> usize {
        self.voxel_coords.len()
    }
}

/// Why [`voxelize`] refused a surface or its options.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VoxelizeError {
    /// [`VoxelizeOptions::resolution`] is 0.
    #[error("voxelization resolution must be at least 1")]
    ZeroResolution,
    /// [`VoxelizeOptions::box_enlarge`] (the value held) is below 1, NaN or infinite.
    #[error("box enlargement factor must be finite and at least 1, got {0}")]
    InvalidBoxEnlarge(f64),
    /// The estimated memory of the grid work plus the output mesh exceeds
    /// [`MAX_VOXELIZE_BYTES`].
    #[error(
        "voxelizing at resolution {resolution} needs about {:.2} GiB, above the limit of {:.2} GiB; lower the resolution",
        gib(*.bytes),
        gib(*.limit)
    )]
    TooLarge {
        /// The requested resolution.
        resolution: usize,
        /// The estimated memory (bytes).
        bytes: u64,
        /// The limit, [`MAX_VOXELIZE_BYTES`] (bytes).
        limit: u64,
    },
    /// The surface has no triangles.
    #[error("the surface has no triangles")]
    EmptySurface,
    /// A surface vertex has a NaN or infinite coordinate.
    #[error("surface vertex {vertex} (0-based) is not finite: {position:?}")]
    NonFiniteVertex {
        /// 0-based index of the first such vertex.
        vertex: usize,
        /// Its coordinates.
        position: [f64; 3],
    },
    /// A triangle names a vertex the surface does not have.
    #[error("triangle {triangle} (0-based) refers to vertex {index}, but the surface has {count} vertices")]
    IndexOutOfRange {
        /// 0-based index of the first such triangle.
        triangle: usize,
        /// The 0-based vertex index it holds.
        index: usize,
        /// Number of vertices of the surface.
        count: usize,
    },
    /// The largest extent of the surface's bounding box is zero (all vertices coincide)
    /// or overflows.
    #[error("the surface's largest extent is {0}: it must be positive and finite")]
    BadExtent(f64),
}

fn gib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

/// Voxelizes `surface`; see the module documentation for the method.
///
/// `progress` gets a stage `"voxelizing triangles"` whose total is the number of triangles
/// (advanced as they are processed), then `"filling interior"` (without fill: skipped)
/// and `"building hex mesh"` (totals unknown), and is finished at the end. Pass
/// [`NoProgress`](crate::progress::NoProgress) for none.
pub fn voxelize(
    surface: &SurfaceMesh,
    opts: &VoxelizeOptions,
    progress: &dyn Progress,
) -> Result<Voxelization, VoxelizeError> {
    let res = opts.resolution;
    check_input(surface, opts)?;

    // Memory of the grid work, before allocating anything.
    let grid_bytes = grid_bytes(res, opts.fill_interior);
    if grid_bytes > MAX_VOXELIZE_BYTES as u128 {
        return Err(too_large(res, grid_bytes));
    }
    let grid_bytes = grid_bytes as u64;

    let (grid_origin, voxel_size) = grid_frame(surface, opts)?;

    // 1. Shell: voxels that intersect a triangle.
    progress.stage("voxelizing triangles", surface.triangles.len() as u64);
    let mut kept = mark_shell(surface, res, grid_origin, voxel_size, progress);

    // 2. Interior: whatever a fill from the grid boundary does not reach.
    if opts.fill_interior {
        progress.stage("filling interior", 0);
        keep_interior(&mut kept, res);
    }

    // 3. Number voxels and vertices; check the memory of the output before building it.
    progress.stage("building hex mesh", 0);
    let n_vox: usize = kept.iter().map(|w| w.count_ones() as usize).sum();
    let numbering = VertexNumbering::new(&kept, res);
    let out_bytes = output_bytes(n_vox, numbering.count);
    if grid_bytes as u128 + out_bytes > MAX_VOXELIZE_BYTES as u128 {
        return Err(too_large(res, grid_bytes as u128 + out_bytes));
    }
    let vertices = numbering.positions(grid_origin, voxel_size);
    let (voxel_coords, connectivity) = numbering.hexes(&kept, res, n_vox);
    progress.finish();

    Ok(Voxelization {
        mesh: VolumeMesh {
            vertices,
            kind: ElementKind::Hex,
            connectivity,
            materials: vec![opts.material.clone()],
            element_material: vec![0; n_vox],
        },
        grid_origin,
        voxel_size,
        resolution: res,
        voxel_coords,
    })
}

/// Refuses a zero resolution, a bad enlargement factor, and an empty surface or one with
/// a non-finite vertex or an out-of-range vertex index.
fn check_input(surface: &SurfaceMesh, opts: &VoxelizeOptions) -> Result<(), VoxelizeError> {
    if opts.resolution == 0 {
        return Err(VoxelizeError::ZeroResolution);
    }
    if !(opts.box_enlarge.is_finite() && opts.box_enlarge >= 1.0) {
        return Err(VoxelizeError::InvalidBoxEnlarge(opts.box_enlarge));
    }
    if surface.triangles.is_empty() {
        return Err(VoxelizeError::EmptySurface);
    }
    if let Some((vertex, p)) = surface
        .vertices
        .iter()
        .enumerate()
        .find(|(_, p)| !p.coords.iter().all(|c| c.is_finite()))
    {
        return Err(VoxelizeError::NonFiniteVertex {
            vertex,
            position: [p.x, p.y, p.z],
        });
    }
    let count = surface.vertices.len();
    for (triangle, t) in surface.triangles.iter().enumerate() {
        if let Some(&index) = t.iter().find(|&&v| v >= count) {
            return Err(VoxelizeError::IndexOutOfRange {
                triangle,
                index,
                count,
            });
        }
    }
    Ok(())
}

/// The grid's origin and voxel size: the surface's bounding cube, enlarged about its
/// centre and split into `resolution^3` voxels.
fn grid_frame(
    surface: &SurfaceMesh,
    opts: &VoxelizeOptions,
) -> Result<(Point3<f64>, f64), VoxelizeError> {
    let bb = surface.bounding_box();
    let extent = bb.extent().max();
    let side = extent * opts.box_enlarge;
    if side.is_nan() || side <= 0.0 || side.is_infinite() {
        return Err(VoxelizeError::BadExtent(extent));
    }
    let voxel_size = side / opts.resolution as f64;
    let grid_origin = bb.center() - Vector3::repeat(0.5 * side);
    Ok((grid_origin, voxel_size))
}

/// The bitset of the voxels that intersect a triangle, the triangles tested in parallel
/// (`progress` advanced as they are).
fn mark_shell(
    surface: &SurfaceMesh,
    res: usize,
    grid_origin: Point3<f64>,
    voxel_size: f64,
    progress: &dyn Progress,
) -> Vec<u64> {
    let words = (res * res * res).div_ceil(64);
    let shell: Vec<AtomicU64> = (0..words).map(|_| AtomicU64::new(0)).collect();
    let to_grid = |p: &Point3<f64>| (p - grid_origin) / voxel_size;
    const CHUNK: usize = 512;
    let n_tri = surface.triangles.len();
    (0..n_tri.div_ceil(CHUNK))
        .into_par_iter()
        .for_each(|chunk| {
            let range = chunk * CHUNK..((chunk + 1) * CHUNK).min(n_tri);
            let len = range.len() as u64;
            for t in range {
                let [a, b, c] = surface.triangle(t);
                let v = [to_grid(&a), to_grid(&b), to_grid(&c)];
                mark_triangle(&v, res, &shell);
            }
            progress.advance(len);
        });
    shell.into_iter().map(AtomicU64::into_inner).collect()
}

/// Turns the shell bitset `kept` into shell plus interior: every cell a fill from the
/// grid boundary does not reach.
fn keep_interior(kept: &mut [u64], res: usize) {
    let n_cells = res * res * res;
    let outside = flood_fill_outside(kept, res);
    for (k, o) in kept.iter_mut().zip(&outside) {
        *k = !o;
    }
    // Clear the padding bits past the last cell.
    let tail = n_cells % 64;
    if let (true, Some(last)) = (tail != 0, kept.last_mut()) {
        *last &= (1u64 << tail) - 1;
    }
}

/// The grid vertices of the kept voxels, numbered in lexicographic order of their grid
/// coordinates.
struct VertexNumbering {
    /// Vertices along each side of the grid (resolution + 1).
    r1: usize,
    /// One bit per grid vertex: whether a kept voxel has it as a corner.
    bits: Vec<u64>,
    /// Per word of `bits`, the number of set bits before it.
    rank: Vec<usize>,
    /// Number of numbered vertices.
    count: usize,
}

impl VertexNumbering {
    /// The numbering of the corners of the voxels in `kept` (a `res^3` bitset).
    fn new(kept: &[u64], res: usize) -> Self {
        let r1 = res + 1;
        let mut vbits = vec![0u64; (r1 * r1 * r1).div_ceil(64)];
        for_each_set_bit(kept, |lin| {
            let [i, j, k] = decode(lin, res);
            for c in HEX_CORNERS {
                let v = ((i + c[0] as usize) * r1 + j + c[1] as usize) * r1 + k + c[2] as usize;
                vbits[v / 64] |= 1 << (v % 64);
            }
        });
        let mut rank = Vec::with_capacity(vbits.len());
        let mut n_vert = 0usize;
        for w in &vbits {
            rank.push(n_vert);
            n_vert += w.count_ones() as usize;
        }
        VertexNumbering {
            r1,
            bits: vbits,
            rank,
            count: n_vert,
        }
    }

    /// The number of the grid vertex with linear index `v`.
    fn id(&self, v: usize) -> usize {
        self.rank[v / 64] + (self.bits[v / 64] & ((1u64 << (v % 64)) - 1)).count_ones() as usize
    }

    /// The position of every numbered vertex, in order.
    fn positions(&self, grid_origin: Point3<f64>, voxel_size: f64) -> Vec<Point3<f64>> {
        let mut vertices = Vec::with_capacity(self.count);
        for_each_set_bit(&self.bits, |v| {
            let [i, j, k] = decode(v, self.r1);
            vertices.push(Point3::new(
                grid_origin.x + i as f64 * voxel_size,
                grid_origin.y + j as f64 * voxel_size,
                grid_origin.z + k as f64 * voxel_size,
            ));
        });
        vertices
    }

    /// The grid coordinates and hex connectivity of the `n_vox` voxels in `kept`, in
    /// lexicographic order.
    fn hexes(&self, kept: &[u64], res: usize, n_vox: usize) -> (Vec<[usize; 3]>, Vec<usize>) {
        let r1 = self.r1;
        let mut voxel_coords = Vec::with_capacity(n_vox);
        let mut connectivity = Vec::with_capacity(8 * n_vox);
        for_each_set_bit(kept, |lin| {
            let [i, j, k] = decode(lin, res);
            voxel_coords.push([i, j, k]);
            for c in HEX_CORNERS {
                let v = ((i + c[0] as usize) * r1 + j + c[1] as usize) * r1 + k + c[2] as usize;
                connectivity.push(self.id(v));
            }
        });
        (voxel_coords, connectivity)
    }
}

fn too_large(resolution: usize, bytes: u128) -> VoxelizeError {
    VoxelizeError::TooLarge {
        resolution,
        bytes: bytes.min(u64::MAX as u128) as u64,
        limit: MAX_VOXELIZE_BYTES,
    }
}

/// Estimated bytes of the grid work: the shell bitset, the outside bitset and the fill
/// queue (its frontier is about the area of the grid boundary), and the vertex bitset
/// with its rank table.
fn grid_bytes(res: usize, fill: bool) -> u128 {
    // Any resolution above 2^30 is far beyond the limit; capping keeps u128 exact.
    let r = res.min(1 << 30) as u128;
    let cells = r * r * r;
    let verts = (r + 1) * (r + 1) * (r + 1);
    let mut bytes = cells / 8 + 8;
    if fill {
        bytes += cells / 8 + 8 + 8 * 8 * 6 * r * r;
    }
    bytes + verts / 8 + 8 + verts / 64 * 8 + 8
}

/// Bytes of the output mesh: per voxel 8 connectivity entries, its coordinates and its
/// material index; per vertex a point.
fn output_bytes(n_vox: usize, n_vert: usize) -> u128 {
    let w = std::mem::size_of::<usize>() as u128;
    n_vox as u128 * (8 * w + 3 * w + w) + n_vert as u128 * 24
}

/// Grid coordinates of linear index `lin` in a `n^3` grid with `k` fastest.
fn decode(lin: usize, n: usize) -> [usize; 3] {
    [lin / (n * n), (lin / n) % n, lin % n]
}

fn for_each_set_bit(bits: &[u64], mut f: impl FnMut(usize)) {
    for (w, &word) in bits.iter().enumerate() {
        let mut word = word;
        while word != 0 {
            let b = word.trailing_zeros() as usize;
            f(w * 64 + b);
            word &= word - 1;
        }
    }
}

/// Sets the bits of the voxels that triangle `v` (in grid coordinates, voxel `[i,j,k]`
/// spanning `[i, i+1] x [j, j+1] x [k, k+1]`) overlaps.
fn mark_triangle(v: &[Vector3<f64>; 3], res: usize, bits: &[AtomicU64]) {
    // A margin so that voxels that only touch the triangle (a vertex on a grid plane) are
    // tested too; the exact test decides.
    const EPS: f64 = 1e-9;
    let mut lo = [0usize; 3];
    let mut hi = [0usize; 3];
    for k in 0..3 {
        let mn = v[0][k].min(v[1][k]).min(v[2][k]);
        let mx = v[0][k].max(v[1][k]).max(v[2][k]);
        let l = (mn - EPS).floor();
        let h = (mx + EPS).floor();
        if h < 0.0 || l > (res - 1) as f64 {
            return;
        }
        lo[k] = l.max(0.0) as usize;
        hi[k] = h.min((res - 1) as f64) as usize;
    }
    let half = Vector3::repeat(0.5);
    for i in lo[0]..=hi[0] {
        for j in lo[1]..=hi[1] {
            for k in lo[2]..=hi[2] {
                let c = Vector3::new(i as f64 + 0.5, j as f64 + 0.5, k as f64 + 0.5);
                let t = [v[0] - c, v[1] - c, v[2] - c];
                if overlap_centered(&t, &half) {
                    let lin = (i * res + j) * res + k;
                    bits[lin / 64].fetch_or(1 << (lin % 64), Ordering::Relaxed);
                }
            }
        }
    }
}

/// Marks the cells reachable from the boundary of the grid through cells not in `shell`
/// (6-connected), breadth first.
fn flood_fill_outside(shell: &[u64], res: usize) -> Vec<u64> {
    let get = |bits: &[u64], lin: usize| bits[lin / 64] >> (lin % 64) & 1 == 1;
    let mut outside = vec![0u64; shell.len()];
    let mut queue: VecDeque<usize> = VecDeque::new();
    let visit = |outside: &mut Vec<u64>, queue: &mut VecDeque<usize>, lin: usize| {
        if !get(shell, lin) && !get(outside, lin) {
            outside[lin / 64] |= 1 << (lin % 64);
            queue.push_back(lin);
        }
    };
    let last = res - 1;
    for i in 0..res {
        for j in 0..res {
            for k in 0..res {
                if i == 0 || i == last || j == 0 || j == last || k == 0 || k == last {
                    visit(&mut outside, &mut queue, (i * res + j) * res + k);
                } else if k == 1 {
                    // Skip the interior of this row: jump to its last cell.
                    visit(&mut outside, &mut queue, (i * res + j) * res + last);
                    break;
                }
            }
        }
    }
    let (s1, s2) = (res, res * res);
    while let Some(lin) = queue.pop_front() {
        let [i, j, k] = decode(lin, res);
        if i > 0 {
            visit(&mut outside, &mut queue, lin - s2);
        }
        if i < last {
            visit(&mut outside, &mut queue, lin + s2);
        }
        if j > 0 {
            visit(&mut outside, &mut queue, lin - s1);
        }
        if j < last {
            visit(&mut outside, &mut queue, lin + s1);
        }
        if k > 0 {
            visit(&mut outside, &mut queue, lin - 1);
        }
        if k < last {
            visit(&mut outside, &mut queue, lin + 1);
        }
    }
    outside
}

/// Exact triangle/box overlap by clipping the triangle with the six closed half-spaces
/// of the box (Sutherland-Hodgman): they overlap when something is left. Slower than
/// [`triangle_box_overlap`]; an independent reference for testing it.
pub fn triangle_box_overlap_by_clipping(
    triangle: &[Point3<f64>; 3],
    box_center: &Point3<f64>,
    box_half_size: &Vector3<f64>,
) -> bool {
    let mut poly: Vec<Vector3<f64>> = triangle.iter().map(|p| p - box_center).collect();
    for k in 0..3 {
        for s in [1.0, -1.0] {
            // Keep s * x_k <= h_k.
            let d = |p: &Vector3<f64>| s * p[k] - box_half_size[k];
            let mut out = Vec::new();
            for i in 0..poly.len() {
                let (p, q) = (poly[i], poly[(i + 1) % poly.len()]);
                let (dp, dq) = (d(&p), d(&q));
                if dp <= 0.0 {
                    out.push(p);
                }
                if (dp < 0.0 && dq > 0.0) || (dp > 0.0 && dq < 0.0) {
                    out.push(p + (q - p) * (dp / (dp - dq)));
                }
            }
            poly = out;
            if poly.is_empty() {
                return false;
            }
        }
    }
    true
}

/// Exact overlap test of a triangle and a closed axis-aligned box (Akenine-Moller's
/// separating axis test). Touching counts as overlap. Degenerate triangles (segments,
/// points) are handled: the remaining axes still separate them exactly.
pub fn triangle_box_overlap(
    triangle: &[Point3<f64>; 3],
    box_center: &Point3<f64>,
    box_half_size: &Vector3<f64>,
) -> bool {
    let t = [
        triangle[0] - box_center,
        triangle[1] - box_center,
        triangle[2] - box_center,
    ];
    overlap_centered(&t, box_half_size)
}

/// [`triangle_box_overlap`] for a triangle already translated so that the box centre is
/// the origin.
fn overlap_centered(v: &[Vector3<f64>; 3], h: &Vector3<f64>) -> bool {
    // The three box normals: the bounding boxes must overlap.
    for k in 0..3 {
        let mn = v[0][k].min(v[1][k]).min(v[2][k]);
        let mx = v[0][k].max(v[1][k]).max(v[2][k]);
        if mn > h[k] || mx < -h[k] {
            return false;
        }
    }
    // The triangle normal.
    let e = [v[1] - v[0], v[2] - v[1], v[0] - v[2]];
    let n = e[0].cross(&e[1]);
    let r = h.x * n.x.abs() + h.y * n.y.abs() + h.z * n.z.abs();
    if n.dot(&v[0]).abs() > r {
        return false;
    }
    // The nine cross products (unit axis) x (edge).
    for ei in &e {
        for k in 0..3 {
            let a = match k {
                0 => Vector3::new(0.0, -ei.z, ei.y),
                1 => Vector3::new(ei.z, 0.0, -ei.x),
                _ => Vector3::new(-ei.y, ei.x, 0.0),
            };
            let p0 = a.dot(&v[0]);
            let p1 = a.dot(&v[1]);
            let p2 = a.dot(&v[2]);
            let r = h.x * a.x.abs() + h.y * a.y.abs() + h.z * a.z.abs();
            if p0.min(p1).min(p2) > r || p0.max(p1).max(p2) < -r {
                return false;
            }
        }
    }
    true
}

/// The six tets of the Kuhn subdivision of the reference cube along the `v0`-`v6`
/// diagonal (one per ordering of the axes: `v0 -> e_a -> e_a + e_b -> v6`), as hex node
/// indices, ordered so that every tet is positive for a positive hex.
pub const HEX_TO_TETS: [[usize; 4]; 6] = [
    [0, 1, 2, 6], // x, y, z
    [0, 1, 6, 5], // x, z, y
    [0, 3, 6, 2], // y, x, z
    [0, 3, 7, 6], // y, z, x
    [0, 4, 5, 6], // z, x, y
    [0, 4, 6, 7], // z, y, x
];

/// Splits every hex into six tets ([`HEX_TO_TETS`]); vertices and materials are kept,
/// and tet `6e + m` belongs to hex `e`.
///
/// Each face of a hex is cut along the diagonal through its corner nearest `v0` or `v6`
/// (the Kuhn subdivision is invariant under translation by a grid step), so two hexes
/// that are neighbours in a grid with a common orientation (voxel meshes,
/// [`crate::mesh::box_hex_mesh`]) cut their shared face the same way and the tet
/// mesh is conforming. A tet mesh is returned unchanged.
pub fn hex_to_tets(mesh: &VolumeMesh) -> VolumeMesh {
    if mesh.kind == ElementKind::Tet {
        return mesh.clone();
    }
    let n = mesh.num_elements();
    let mut connectivity = Vec::with_capacity(24 * n);
    let mut element_material = Vec::with_capacity(6 * n);
    for (e, hex) in mesh.elements().enumerate() {
        for tet in HEX_TO_TETS {
            connectivity.extend(tet.iter().map(|&a| hex[a]));
            element_material.push(mesh.element_material[e]);
        }
    }
    VolumeMesh {
        vertices: mesh.vertices.clone(),
        kind: ElementKind::Tet,
        connectivity,
        materials: mesh.materials.clone(),
        element_material,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::volume::tet_signed_volume;
    use crate::progress::{NoProgress, Recorder};
    use haptics_devices::rng::SplitMix64;

    /// A uniform number in [a, b).
    fn uniform(rng: &mut SplitMix64, a: f64, b: f64) -> f64 {
        a + (b - a) * rng.next_f64()
    }

    /// A uniform point of the cube [a, b)^3.
    fn point(rng: &mut SplitMix64, a: f64, b: f64) -> Point3<f64> {
        Point3::new(uniform(rng, a, b), uniform(rng, a, b), uniform(rng, a, b))
    }

    #[test]
    fn sat_matches_clipping_on_random_triangles() {
        let mut rng = SplitMix64::new(12345);
        let (mut hits, mut misses, mut edge_only) = (0, 0, 0);
        for _ in 0..200_000 {
            let c = point(&mut rng, -0.5, 0.5);
            let h = Vector3::new(
                uniform(&mut rng, 0.1, 1.0),
                uniform(&mut rng, 0.1, 1.0),
                uniform(&mut rng, 0.1, 1.0),
            );
            // Small triangles near the box, so that many are near misses.
            let centre = c + Vector3::new(
                uniform(&mut rng, -1.5, 1.5) * h.x,
                uniform(&mut rng, -1.5, 1.5) * h.y,
                uniform(&mut rng, -1.5, 1.5) * h.z,
            );
            let s = uniform(&mut rng, 0.05, 1.5);
            let tri = [0, 1, 2].map(|_| centre + point(&mut rng, -s, s).coords);
            let sat = triangle_box_overlap(&tri, &c, &h);
            let clip = triangle_box_overlap_by_clipping(&tri, &c, &h);
            assert_eq!(sat, clip, "triangle {tri:?} box {c:?} +- {h:?}");
            if sat {
                hits += 1;
            } else {
                misses += 1;
                // Rejected although the bounding boxes overlap and the plane crosses the
                // box: only an edge axis separates them.
                let t = [tri[0] - c, tri[1] - c, tri[2] - c];
                let bb = (0..3).all(|k| {
                    let mn = t[0][k].min(t[1][k]).min(t[2][k]);
                    let mx = t[0][k].max(t[1][k]).max(t[2][k]);
                    mn <= h[k] && mx >= -h[k]
                });
                let n = (t[1] - t[0]).cross(&(t[2] - t[0]));
                let r = h.x * n.x.abs() + h.y * n.y.abs() + h.z * n.z.abs();
                if bb && n.dot(&t[0]).abs() <= r {
                    edge_only += 1;
                }
            }
        }
        assert!(
            hits > 20_000 && misses > 20_000,
            "{hits} hits, {misses} misses"
        );
        assert!(edge_only > 500, "only {edge_only} edge-axis rejections");
    }

    #[test]
    fn sat_degenerate_and_touching() {
        let c = Point3::origin();
        let h = Vector3::repeat(0.5);
        // A segment that passes beside the box edge x = y = 0.5, and one through it.
        let miss = [
            Point3::new(1.0, 0.1, 0.0),
            Point3::new(0.1, 1.0, 0.0),
            Point3::new(1.0, 0.1, 0.0),
        ];
        assert!(!triangle_box_overlap(&miss, &c, &h));
        let hit = [
            Point3::new(0.9, 0.0, 0.0),
            Point3::new(0.0, 0.9, 0.0),
            Point3::new(0.0, 0.9, 0.0),
        ];
        assert!(triangle_box_overlap(&hit, &c, &h));
        // A point on a face touches; just outside does not.
        let p = Point3::new(0.5, 0.2, -0.3);
        assert!(triangle_box_overlap(&[p, p, p], &c, &h));
        let q = Point3::new(0.5 + 1e-12, 0.2, -0.3);
        assert!(!triangle_box_overlap(&[q, q, q], &c, &h));
        // A triangle lying in a face plane touches the box.
        let f = [
            Point3::new(0.5, -2.0, -2.0),
            Point3::new(0.5, 2.0, -2.0),
            Point3::new(0.5, 0.0, 2.0),
        ];
        assert!(triangle_box_overlap(&f, &c, &h));
    }

    fn cube_surface(lo: Point3<f64>, hi: Point3<f64>) -> SurfaceMesh {
        let vertices = HEX_CORNERS
            .iter()
            .map(|c| {
                Point3::new(
                    if c[0] == 0.0 { lo.x } else { hi.x },
                    if c[1] == 0.0 { lo.y } else { hi.y },
                    if c[2] == 0.0 { lo.z } else { hi.z },
                )
            })
            .collect();
        let quads = [
            [0, 3, 2, 1],
            [4, 5, 6, 7],
            [0, 1, 5, 4],
            [3, 7, 6, 2],
            [0, 4, 7, 3],
            [1, 2, 6, 5],
        ];
        let triangles = quads
            .iter()
            .flat_map(|q| [[q[0], q[1], q[2]], [q[0], q[2], q[3]]])
            .collect();
        SurfaceMesh {
            vertices,
            triangles,
        }
    }

    #[test]
    fn cube_voxel_counts_fill_and_shell() {
        // Cube of side 1 in a grid of side 1.5 at resolution 9: the faces lie at grid
        // coordinates 1.5 and 7.5, in the middle of voxel layers 1 and 7.
        let s = cube_surface(Point3::new(0.0, 0.0, 0.0), Point3::new(1.0, 1.0, 1.0));
        let opts = VoxelizeOptions {
            resolution: 9,
            box_enlarge: 1.5,
            ..Default::default()
        };
        let v = voxelize(&s, &opts, &NoProgress).unwrap();
        assert!((v.voxel_size - 1.0 / 6.0).abs() < 1e-15);
        assert_eq!(v.num_voxels(), 7 * 7 * 7);
        assert_eq!(v.mesh.vertices.len(), 8 * 8 * 8);
        assert!(v.mesh.element_defects().is_empty());
        let vol = v.mesh.volume_stats().total_volume;
        assert!((vol - 343.0 / 216.0).abs() < 1e-12);
        let shell = voxelize(
            &s,
            &VoxelizeOptions {
                fill_interior: false,
                ..opts
            },
            &NoProgress,
        )
        .unwrap();
        assert_eq!(shell.num_voxels(), 7 * 7 * 7 - 5 * 5 * 5);
        // Lexicographic order, and hex corners where Vega puts them.
        assert!(shell.voxel_coords.windows(2).all(|w| w[0] < w[1]));
        for (e, c) in shell.voxel_coords.iter().enumerate() {
            let x0 = shell.mesh.vertices[shell.mesh.element(e)[0]];
            let x6 = shell.mesh.vertices[shell.mesh.element(e)[6]];
            let expect0 = shell.grid_origin
                + Vector3::new(c[0] as f64, c[1] as f64, c[2] as f64) * shell.voxel_size;
            assert!((x0 - expect0).norm() < 1e-14);
            assert!((x6 - x0 - Vector3::repeat(shell.voxel_size)).norm() < 1e-14);
        }
    }

    #[test]
    fn errors() {
        let s = cube_surface(Point3::origin(), Point3::new(1.0, 2.0, 3.0));
        let o = |resolution| VoxelizeOptions {
            resolution,
            ..Default::default()
        };
        assert_eq!(
            voxelize(&s, &o(0), &NoProgress),
            Err(VoxelizeError::ZeroResolution)
        );
        assert!(matches!(
            voxelize(&s, &o(5000), &NoProgress),
            Err(VoxelizeError::TooLarge { .. })
        ));
        assert!(matches!(
            voxelize(&s, &o(usize::MAX), &NoProgress),
            Err(VoxelizeError::TooLarge { .. })
        ));
        assert_eq!(
            voxelize(&SurfaceMesh::default(), &o(4), &NoProgress),
            Err(VoxelizeError::EmptySurface)
        );
        let mut bad = s.clone();
        bad.vertices[3].y = f64::NAN;
        assert!(matches!(
            voxelize(&bad, &o(4), &NoProgress),
            Err(VoxelizeError::NonFiniteVertex { vertex: 3, .. })
        ));
        let mut bad = s.clone();
        bad.triangles[2][1] = 99;
        assert!(matches!(
            voxelize(&bad, &o(4), &NoProgress),
            Err(VoxelizeError::IndexOutOfRange {
                triangle: 2,
                index: 99,
                ..
            })
        ));
        let point = SurfaceMesh {
            vertices: vec![Point3::new(1.0, 1.0, 1.0)],
            triangles: vec![[0, 0, 0]],
        };
        assert_eq!(
            voxelize(&point, &o(4), &NoProgress),
            Err(VoxelizeError::BadExtent(0.0))
        );
        let e = VoxelizeOptions {
            box_enlarge: 0.5,
            ..o(4)
        };
        assert_eq!(
            voxelize(&s, &e, &NoProgress),
            Err(VoxelizeError::InvalidBoxEnlarge(0.5))
        );
    }

    #[test]
    fn flat_surface_and_progress() {
        // A single triangle: no interior, the fill keeps just the shell.
        let s = SurfaceMesh {
            vertices: vec![
                Point3::new(0.0, 0.0, 0.0),
                Point3::new(1.0, 0.0, 0.0),
                Point3::new(0.0, 1.0, 0.0),
            ],
            triangles: vec![[0, 1, 2]],
        };
        let log = Recorder::default();
        let filled = voxelize(&s, &VoxelizeOptions::default(), &log).unwrap();
        let stages: Vec<_> = log
            .take()
            .into_iter()
            .map(|s| (s.name, s.total, s.done, s.finished))
            .collect();
        assert_eq!(
            stages,
            [
                ("voxelizing triangles".to_string(), 1, 1, false),
                ("filling interior".to_string(), 0, 0, false),
                ("building hex mesh".to_string(), 0, 0, true),
            ]
        );
        let shell = voxelize(
            &s,
            &VoxelizeOptions {
                fill_interior: false,
                ..Default::default()
            },
            &NoProgress,
        )
        .unwrap();
        assert_eq!(filled, shell);
        assert!(shell.num_voxels() > 0);
        assert!(shell.mesh.element_defects().is_empty());
    }

    #[test]
    fn kuhn_tets_are_positive_and_fill_the_cube() {
        let x: Vec<Point3<f64>> = HEX_CORNERS
            .iter()
            .map(|c| Point3::new(c[0], c[1], c[2]))
            .collect();
        let mut total = 0.0;
        for t in HEX_TO_TETS {
            let v = tet_signed_volume(&x[t[0]], &x[t[1]], &x[t[2]], &x[t[3]]);
            assert!((v - 1.0 / 6.0).abs() < 1e-15, "{t:?}: {v}");
            total += v;
        }
        assert!((total - 1.0).abs() < 1e-14);
    }

    #[test]
    fn hex_to_tets_of_voxels_is_conforming() {
        // An L-shaped set of voxels from a triangle soup: every interior tet face is
        // shared by exactly two tets, and the boundary is that of the hex mesh.
        let s = cube_surface(Point3::origin(), Point3::new(1.0, 0.6, 0.3));
        let v = voxelize(
            &s,
            &VoxelizeOptions {
                resolution: 7,
                ..Default::default()
            },
            &NoProgress,
        )
        .unwrap();
        let tets = hex_to_tets(&v.mesh);
        assert_eq!(tets.num_elements(), 6 * v.num_voxels());
        assert!(tets.element_defects().is_empty());
        let hv = v.mesh.volume_stats().total_volume;
        let tv = tets.volume_stats().total_volume;
        assert!((hv - tv).abs() < 1e-12 * hv);
        let mut faces: Vec<[usize; 3]> = tets
            .elements()
            .flat_map(|t| {
                [[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]].map(|f| {
                    let mut k = [t[f[0]], t[f[1]], t[f[2]]];
                    k.sort_unstable();
                    k
                })
            })
            .collect();
        faces.sort_unstable();
        let mut counts = std::collections::HashMap::new();
        for f in &faces {
            *counts.entry(*f).or_insert(0) += 1;
        }
        assert!(counts.values().all(|&c| c == 1 || c == 2));
        let boundary = counts.values().filter(|&&c| c == 1).count();
        assert_eq!(boundary, v.mesh.boundary_triangles().len());
        assert_eq!(tets.boundary_triangles().len(), boundary);
    }
}
