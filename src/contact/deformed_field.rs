//! The approximate signed distance field of a reduced deformable object (thesis 3.12),
//! for contact between two deformable objects.
//!
//! About 40 proxy points `P_i` on the object (farthest-point samples of its surface)
//! carry their displacement rows `U_i` and deformation-gradient modes, so that after a
//! step `p_i = P_i + U_i q` and `F_i = I + sum_j F_{i,j} q_j`. A query point `x` (body
//! frame) takes its `k = 5` nearest deformed proxies, pulls itself back into the rest
//! configuration through each one's local affine map, and blends the rest field there:
//!
//! ```text
//! X_i = P_i + F_i^-1 (x - p_i),     d_i = SDF_rest(X_i)
//! w'_i = (1/|x - p_i| - 1/d_max) / (1/d_min - 1/d_max),  w_i = w'_i / sum w',   d = sum w_i d_i
//! ```
//!
//! with `d_min`, `d_max` the nearest and the k-th nearest proxy distances. The k-th
//! proxy has weight zero, so the field is continuous when the nearest set changes
//! (tested). An object split into several domains (parts that move independently, for
//! example the two ends of a long object) takes the minimum over the domains.
//!
//! Forces on the deformable distance-field object are spread to the proxies with the same
//! weights: `sum_i w_i U_i^T f`.
//!
//! **Proxy cache.** Finding the k nearest of the domain's proxies was the largest cost of
//! a lookup (a scan of all of them per query). The traversal queries the same pointshell
//! points cycle after cycle, and both they and the proxies move little in a millisecond,
//! so a [`ProxyCache`] per point keeps the k nearest found last time, with half the gap
//! `g = d_{k+1} - d_k` between the k-th and the next proxy distance then. Every distance
//! from the point to a proxy changes by at most `|x - x_0| + D`, where `D` is the largest
//! proxy motion accumulated since (summed over [`DeformedDistanceField::update`]s), so
//! while `|x - x_0| + D < g / 2` (less a rounding margin) the same k proxies are still the
//! k nearest and the scan is skipped. The cached answer is bit-identical to the scan's
//! (the k proxies are re-sorted by distance, ties by index, as the scan orders them;
//! tested).
//!
//! **Culling with one lookup.** A traversal only needs to know whether a node's point is
//! farther than the node's radius. Since the weights sum to one and the rest field is
//! `L`-Lipschitz, `d = sum w_i d_i >= d_1 - L sum_i w_i |X_i - X_1|` (`X_1` the nearest
//! proxy's pull-back): one lookup and the other pull-backs (a matrix-vector product each)
//! bound `d` from below, and when that bound already exceeds the radius the other k - 2
//! lookups are skipped ([`DistanceQuery::distance_above_cached`]).
//!
//! **Culling without the proxies.** Before that, a bound that needs neither the
//! neighbours nor their pull-backs: each pull-back is within
//! `|X_i - x| <= |p_i - P_i| + ||F_i^-1 - I|| |x - p_i|` of the query point itself, and
//! every weighted proxy is nearer than the k-th, so
//! `d >= SDF_rest(x) - L (U + G d_k)`, with `U` and `G` the largest proxy displacement and
//! inverse-gradient deviation (Frobenius norm) over the field, refreshed by each update.
//! The k-th distance needs no scan: the cache's k proxies were `d_k(x_0)` away at most when
//! it was filled, so `d_k(x) <= d_k(x_0) + |x - x_0| + D` whether or not they are still
//! the nearest. For a slightly deformed object that is one rest lookup at `x`, and it
//! answers most culling queries of a traversal (those far from the surface).

use std::sync::atomic::{AtomicU32, Ordering};

use nalgebra::{DMatrix, Matrix3, Point3, Vector3};

use super::distance::{DistanceQuery, Lookup, ProxyCache, MAX_CACHED_NEIGHBOURS};
use super::shell_modes::for_each_embedded;
use crate::contact::ShellModesError;
use crate::geometry::farthest::farthest_point_order;
use crate::geometry::pointshell::PointshellError;
use crate::geometry::SignedDistanceField;
use crate::mesh::volume::VolumeMesh;

/// Largest supported `k`.
pub const MAX_NEIGHBOURS: usize = 16;

/// Relative rounding margin of the cache test: distances computed in double precision
/// are exact to far better than this.
const CACHE_MARGIN: f64 = 1e-9;

/// Source of field identities, so that a cache filled against one field is never read
/// against another (or a clone that has deformed differently since).
static NEXT_FIELD_ID: AtomicU32 = AtomicU32::new(1);

fn next_field_id() -> u32 {
    // Skip 0 (an empty cache) when the counter wraps.
    loop {
        let id = NEXT_FIELD_ID.fetch_add(1, Ordering::Relaxed);
        if id != 0 {
            return id;
        }
    }
}

/// Why a deformed distance field could not be built.
#[derive(Debug, thiserror::Error)]
pub enum DeformedFieldError {
    /// The neighbour count is outside `2..=MAX_NEIGHBOURS`.
    #[error("neighbour count k = {k} must be between 2 and {MAX_NEIGHBOURS}")]
    BadK {
        /// The neighbour count given.
        k: usize,
    },
    /// A domain has fewer candidate proxy sites than neighbours per query.
    #[error("domain {domain} has {sites} candidate sites; it needs at least k = {k}")]
    TooFewSites {
        /// 0-based index of the domain.
        domain: usize,
        /// Its number of candidate sites.
        sites: usize,
        /// The neighbour count.
        k: usize,
    },
    /// The list of domains is empty.
    #[error("no domains given")]
    NoDomains,
    /// Computing the proxies' displacement and gradient modes failed (for example a
    /// proxy outside the mesh).
    #[error("proxy modes: {0}")]
    Modes(#[from] ShellModesError),
    /// Farthest-point sampling of the proxy sites failed.
    #[error("proxy sites: {0}")]
    Sites(#[from] PointshellError),
}

#[derive(Debug, Clone)]
struct Proxy {
    rest: Point3<f64>,
    /// Columns `U_i e_j`.
    u: Vec<Vector3<f64>>,
    /// `F_{i,j}`.
    grad: Vec<Matrix3<f64>>,
}

/// A deformed distance field; call [`DeformedDistanceField::update`] with the object's
/// reduced coordinates once per cycle before querying it.
#[derive(Debug)]
pub struct DeformedDistanceField {
    rest: SignedDistanceField,
    proxies: Vec<Proxy>,
    /// Proxy ranges of the domains.
    domains: Vec<(usize, usize)>,
    k: usize,
    r: usize,
    positions: Vec<Point3<f64>>,
    inverse_gradients: Vec<Matrix3<f64>>,
    /// Identity for [`ProxyCache`]s (fresh for every instance and clone).
    id: u32,
    /// Sum over updates of the largest proxy motion (the cache's `D`).
    drift: f64,
    /// The largest proxy displacement `|p_i - P_i|` (module docs, `U`).
    max_displacement: f64,
    /// The largest `||F_i^-1 - I||` (Frobenius; module docs, `G`).
    max_inverse_strain: f64,
}

impl Clone for DeformedDistanceField {
    fn clone(&self) -> Self {
        DeformedDistanceField {
            rest: self.rest.clone(),
            proxies: self.proxies.clone(),
            domains: self.domains.clone(),
            k: self.k,
            r: self.r,
            positions: self.positions.clone(),
            inverse_gradients: self.inverse_gradients.clone(),
            id: next_field_id(),
            drift: self.drift,
            max_displacement: self.max_displacement,
            max_inverse_strain: self.max_inverse_strain,
        }
    }
}

impl DeformedDistanceField {
    /// Builds the field from the rest field, the simulation mesh and basis, and candidate
    /// proxy sites per domain (usually the surface vertices of each part), taking
    /// `proxies_per_domain` farthest-point samples of each.
    pub fn new(
        rest: SignedDistanceField,
        mesh: &VolumeMesh,
        basis: &DMatrix<f64>,
        domains: &[Vec<Point3<f64>>],
        proxies_per_domain: usize,
        k: usize,
    ) -> Result<Self, DeformedFieldError> {
        if !(2..=MAX_NEIGHBOURS).contains(&k) {
            return Err(DeformedFieldError::BadK { k });
        }
        if domains.is_empty() {
            return Err(DeformedFieldError::NoDomains);
        }
        let mut sites = Vec::new();
        let mut ranges = Vec::new();
        for (d, cand) in domains.iter().enumerate() {
            if cand.len() < k {
                return Err(DeformedFieldError::TooFewSites {
                    domain: d,
                    sites: cand.len(),
                    k,
                });
            }
            let chosen = farthest_points(cand, proxies_per_domain.max(k))?;
            let start = sites.len();
            sites.extend(chosen.iter().map(|&i| cand[i]));
            ranges.push((start, sites.len()));
        }
        let mut proxies = Vec::with_capacity(sites.len());
        // Proxies are surface points; allow them a little outside the voxel mesh.
        let tolerance = mesh.bounding_box().extent().norm() * 0.05;
        for_each_embedded(&sites, mesh, basis, tolerance, |s, u, g| {
            proxies.push(Proxy {
                rest: sites[s],
                u: u.to_vec(),
                grad: g.to_vec(),
            });
        })?;
        let n = proxies.len();
        let mut field = DeformedDistanceField {
            rest,
            proxies,
            domains: ranges,
            k,
            r: basis.ncols(),
            positions: vec![Point3::origin(); n],
            inverse_gradients: vec![Matrix3::identity(); n],
            id: next_field_id(),
            drift: 0.0,
            max_displacement: 0.0,
            max_inverse_strain: 0.0,
        };
        field.update(&vec![0.0; field.r]);
        field.drift = 0.0;
        Ok(field)
    }

    /// Number of proxies.
    pub fn num_proxies(&self) -> usize {
        self.proxies.len()
    }

    /// The rest field.
    pub fn rest_field(&self) -> &SignedDistanceField {
        &self.rest
    }

    /// Deforms the proxies to reduced coordinates `q` (allocation-free). A proxy whose
    /// deformation gradient is not invertible (an inverted element) pulls back with the
    /// identity.
    pub fn update(&mut self, q: &[f64]) {
        let mut moved = 0.0f64;
        let (mut displacement, mut strain) = (0.0f64, 0.0f64);
        for (i, p) in self.proxies.iter().enumerate() {
            let mut x = p.rest;
            let mut f = Matrix3::identity();
            for (j, &qj) in q.iter().enumerate().take(self.r) {
                x += p.u[j] * qj;
                f += p.grad[j] * qj;
            }
            moved = moved.max((x - self.positions[i]).norm());
            self.positions[i] = x;
            self.inverse_gradients[i] = if f.determinant() > 1e-6 {
                f.try_inverse().unwrap_or_else(Matrix3::identity)
            } else {
                Matrix3::identity()
            };
            // NaN-propagating maxima: a non-finite state disables the bound.
            displacement = nan_max(displacement, (x - p.rest).norm());
            strain = nan_max(
                strain,
                (self.inverse_gradients[i] - Matrix3::identity()).norm(),
            );
        }
        self.max_displacement = displacement;
        self.max_inverse_strain = strain;
        // A non-finite motion makes every later cache test fail (NaN or infinite drift).
        self.drift += moved * (1.0 + CACHE_MARGIN);
    }

    /// The k nearest deformed proxies of domain `(a, b)`, nearest first (ties by index),
    /// their normalized weights, and the squared distance of the next nearest (infinity
    /// if the domain has only k).
    fn scan(&self, x: &Point3<f64>, (a, b): (usize, usize)) -> (Neighbours, f64) {
        let k = self.k;
        let mut idx = [0usize; MAX_NEIGHBOURS + 1];
        // Squared distances while selecting; square roots only for the k kept. One more
        // than k is kept for the cache's gap.
        let mut dist = [f64::INFINITY; MAX_NEIGHBOURS + 1];
        let keep = k + 1;
        let mut count = 0;
        for i in a..b {
            let d = (self.positions[i] - x).norm_squared();
            if count < keep || d < dist[count - 1] {
                // Insertion into the sorted list of the k + 1 nearest.
                let mut j = count.min(keep - 1);
                if count < keep {
                    count += 1;
                }
                while j > 0 && dist[j - 1] > d {
                    dist[j] = dist[j - 1];
                    idx[j] = idx[j - 1];
                    j -= 1;
                }
                dist[j] = d;
                idx[j] = i;
            }
        }
        let next = if count > k { dist[k] } else { f64::INFINITY };
        let count = count.min(k);
        let mut ids = [0usize; MAX_NEIGHBOURS];
        let mut d = [0.0; MAX_NEIGHBOURS];
        ids[..count].copy_from_slice(&idx[..count]);
        d[..count].copy_from_slice(&dist[..count]);
        (weights(ids, d, count), next)
    }

    /// The k nearest proxies of domain `dom` at `x`, from `cache` if it is still valid
    /// there, else by a scan that refills it.
    fn cached_neighbours(
        &self,
        x: &Point3<f64>,
        dom: (usize, usize),
        cache: &mut ProxyCache,
    ) -> Neighbours {
        let count = cache.count as usize;
        if cache.field == self.id && count > 0 {
            let anchor = Point3::from(cache.anchor);
            let moved = (x - anchor).norm() + (self.drift - cache.drift);
            if moved < cache.slack {
                let mut ids = [0usize; MAX_NEIGHBOURS];
                let mut d = [0.0; MAX_NEIGHBOURS];
                for j in 0..count {
                    let i = cache.proxies[j] as usize;
                    let dj = (self.positions[i] - x).norm_squared();
                    // Insertion sort by (distance, index), the scan's order.
                    let mut m = j;
                    while m > 0 && (d[m - 1] > dj || (d[m - 1] == dj && ids[m - 1] > i)) {
                        d[m] = d[m - 1];
                        ids[m] = ids[m - 1];
                        m -= 1;
                    }
                    d[m] = dj;
                    ids[m] = i;
                }
                return weights(ids, d, count);
            }
        }
        let (nb, next) = self.scan(x, dom);
        *cache = self.fill_cache(x, &nb, next);
        nb
    }

    /// A cache holding `nb` (found at `x`, with the next nearest squared distance
    /// `next`); empty if the set cannot be trusted to survive any motion.
    fn fill_cache(&self, x: &Point3<f64>, nb: &Neighbours, next: f64) -> ProxyCache {
        let (ids, _, count) = nb;
        let count = *count;
        if count > MAX_CACHED_NEIGHBOURS || ids[..count].iter().any(|&i| i > u16::MAX as usize) {
            return ProxyCache::default();
        }
        let kth = (self.positions[ids[count - 1]] - x).norm();
        let next = next.sqrt();
        let slack = if next.is_finite() {
            0.5 * (next - kth) - CACHE_MARGIN * (next + x.coords.norm())
        } else {
            // The domain has only k proxies: they are always the k nearest.
            f64::INFINITY
        };
        // A NaN slack (a non-finite point or proxy) fails this test too.
        let usable = slack > 0.0 && x.coords.iter().all(|c| c.is_finite());
        if !usable {
            return ProxyCache::default();
        }
        let mut proxies = [0u16; MAX_CACHED_NEIGHBOURS];
        for (p, &i) in proxies.iter_mut().zip(&ids[..count]) {
            *p = i as u16;
        }
        ProxyCache {
            field: self.id,
            count: count as u8,
            proxies,
            anchor: [x.x, x.y, x.z],
            slack,
            drift: self.drift,
            kth,
        }
    }

    /// A lower bound of the distance at `x` from the rest field at `x` alone, if `cache`
    /// was filled by this field (module docs: culling without the proxies), less a
    /// rounding margin; NaN where the field or the point is not finite. Valid wherever
    /// `x` and the proxies have moved since the cache was filled; it loosens with that
    /// motion and with the object's deformation.
    pub fn proxy_free_bound(&self, x: &Point3<f64>, cache: &ProxyCache) -> Option<f64> {
        if cache.field != self.id || cache.count == 0 {
            return None;
        }
        let anchor = Point3::from(cache.anchor);
        let kth = cache.kth + (x - anchor).norm() + (self.drift - cache.drift);
        let d0 = self.rest.lookup(x);
        let l = self.rest.lipschitz_bound();
        let spread = l * (self.max_displacement + self.max_inverse_strain * kth);
        let margin = 1e-9 * (d0.abs() + spread + kth + self.rest.spacing);
        Some(d0 - spread - margin)
    }

    /// The pull-back of `x` through proxy `i`'s local affine map.
    #[inline]
    fn pull_back(&self, i: usize, x: &Point3<f64>) -> Point3<f64> {
        self.proxies[i].rest + self.inverse_gradients[i] * (x - self.positions[i])
    }

    /// The pull-backs of `x` through the neighbours that carry weight.
    fn pull_backs(&self, x: &Point3<f64>, nb: &Neighbours) -> [Point3<f64>; MAX_NEIGHBOURS] {
        let (idx, w, count) = nb;
        let mut backs = [Point3::origin(); MAX_NEIGHBOURS];
        for j in 0..*count {
            if w[j] != 0.0 {
                backs[j] = self.pull_back(idx[j], x);
            }
        }
        backs
    }

    /// The blend `sum_j w_j SDF_rest(X_j)` of the lookups at the pull-backs `backs`, the
    /// nearest proxy's (which always carries weight) given as `first`.
    fn blend_lookups(&self, nb: &Neighbours, backs: &[Point3<f64>], first: f64) -> f64 {
        let (_, w, count) = nb;
        let mut d = 0.0;
        for j in 0..*count {
            if w[j] == 0.0 {
                continue;
            }
            let dj = if j == 0 {
                first
            } else {
                self.rest.lookup(&backs[j])
            };
            d += w[j] * dj;
        }
        d
    }

    /// The blended pull-back distance of one domain's neighbours.
    fn blend(&self, x: &Point3<f64>, nb: &Neighbours) -> f64 {
        let backs = self.pull_backs(x, nb);
        self.blend_lookups(nb, &backs, self.rest.lookup(&backs[0]))
    }

    /// The distance at `x` if it is at most `above` (bit for bit [`Self::blend`]), else a
    /// lower bound of it above `above` from the nearest proxy's lookup alone (module
    /// docs), less a rounding margin.
    fn blend_above(&self, x: &Point3<f64>, nb: &Neighbours, above: f64) -> Lookup {
        let (_, w, count) = nb;
        let backs = self.pull_backs(x, nb);
        let d1 = self.rest.lookup(&backs[0]);
        let mut spread = 0.0;
        for j in 1..*count {
            if w[j] != 0.0 {
                spread += w[j] * (backs[j] - backs[0]).norm();
            }
        }
        let l = self.rest.lipschitz_bound();
        // The weights sum to one up to rounding, and the lookups and pull-backs round.
        let margin = 1e-9 * (d1.abs() + l * spread + self.rest.spacing);
        let bound = d1 - l * spread - margin;
        if bound > above {
            return Lookup::Above(bound);
        }
        Lookup::Exact(nan_as_far(self.blend_lookups(nb, &backs, d1)))
    }

    /// Spreads the body-frame force `f` over the neighbours' proxies with their weights.
    fn spread(&self, nb: &Neighbours, f: &Vector3<f64>, out: &mut [f64]) {
        let (idx, w, count) = nb;
        for j in 0..*count {
            let proxy = &self.proxies[idx[j]];
            for (o, u) in out.iter_mut().zip(&proxy.u) {
                *o += w[j] * u.dot(f);
            }
        }
    }

    /// The smallest domain distance at `x` (NaN domains ignored; infinity if all are
    /// NaN) and the neighbours of the domain that gives it.
    fn nearest_domain(&self, x: &Point3<f64>) -> (f64, Neighbours) {
        let mut best: Option<(f64, Neighbours)> = None;
        for &dom in &self.domains {
            let nb = self.scan(x, dom).0;
            let d = self.blend(x, &nb);
            match &best {
                Some((b, _)) if !(d < *b || b.is_nan()) => {}
                _ => best = Some((d, nb)),
            }
        }
        let (d, nb) = best.expect("a deformed field has at least one domain");
        (nan_as_far(d), nb)
    }
}

/// The k nearest proxies of a domain, their normalized weights, and how many there are.
type Neighbours = ([usize; MAX_NEIGHBOURS], [f64; MAX_NEIGHBOURS], usize);

/// A blend that is NaN (a degenerate pull-back) reads as infinitely far: it neither
/// culls nor touches.
fn nan_as_far(d: f64) -> f64 {
    if d.is_nan() {
        f64::INFINITY
    } else {
        d
    }
}

/// The larger of `a` and `b`, NaN if either is.
fn nan_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

/// The blending weights (module docs) of `count` proxies `idx` at squared distances
/// `dist2`, sorted nearest first.
fn weights(idx: [usize; MAX_NEIGHBOURS], dist2: [f64; MAX_NEIGHBOURS], count: usize) -> Neighbours {
    let mut dist = dist2;
    for d in dist.iter_mut().take(count) {
        *d = d.sqrt();
    }
    let mut w = [0.0; MAX_NEIGHBOURS];
    let (dmin, dmax) = (dist[0], dist[count - 1]);
    if dmin <= 1e-12 * (1.0 + dmax) {
        w[0] = 1.0;
    } else if dmax - dmin <= 1e-12 * dmax {
        w[..count].fill(1.0 / count as f64);
    } else {
        let (inv_min, inv_max) = (1.0 / dmin, 1.0 / dmax);
        let mut sum = 0.0;
        for j in 0..count {
            w[j] = (1.0 / dist[j] - inv_max) / (inv_min - inv_max);
            sum += w[j];
        }
        for wj in w.iter_mut().take(count) {
            *wj /= sum;
        }
    }
    (idx, w, count)
}

impl DistanceQuery for DeformedDistanceField {
    fn distance(&self, p: &Point3<f64>) -> f64 {
        self.nearest_domain(p).0
    }

    fn reduced_dim(&self) -> usize {
        self.r
    }

    fn add_reduced_force(&self, p: &Point3<f64>, f: &Vector3<f64>, out: &mut [f64]) {
        // The domain that answers the query takes the force, with its blending weights.
        // With one domain only its neighbours are needed: no pull-backs, no lookups (a
        // contact point would otherwise pay for its distance twice).
        let nb = match self.domains.as_slice() {
            [only] => self.scan(p, *only).0,
            _ => self.nearest_domain(p).1,
        };
        self.spread(&nb, f, out);
    }

    fn uses_proxy_cache(&self) -> bool {
        self.domains.len() == 1 && self.k <= MAX_CACHED_NEIGHBOURS
    }

    fn distance_cached(&self, p: &Point3<f64>, cache: &mut ProxyCache) -> f64 {
        match self.domains.as_slice() {
            [only] => {
                let nb = self.cached_neighbours(p, *only, cache);
                nan_as_far(self.blend(p, &nb))
            }
            _ => self.distance(p),
        }
    }

    fn distance_above_cached(&self, p: &Point3<f64>, above: f64, cache: &mut ProxyCache) -> Lookup {
        let [only] = self.domains.as_slice() else {
            return Lookup::Exact(self.distance(p));
        };
        // A NaN bound fails the test and falls through to the exact path.
        if let Some(bound) = self.proxy_free_bound(p, cache) {
            if bound > above {
                return Lookup::Above(bound);
            }
        }
        let nb = self.cached_neighbours(p, *only, cache);
        self.blend_above(p, &nb, above)
    }

    fn add_reduced_force_cached(
        &self,
        p: &Point3<f64>,
        f: &Vector3<f64>,
        out: &mut [f64],
        cache: &mut ProxyCache,
    ) {
        match self.domains.as_slice() {
            [only] => {
                let nb = self.cached_neighbours(p, *only, cache);
                self.spread(&nb, f, out);
            }
            _ => self.add_reduced_force(p, f, out),
        }
    }
}

/// The first `count` points of the farthest-point ordering of `points`, started from
/// the point nearest their centroid.
fn farthest_points(points: &[Point3<f64>], count: usize) -> Result<Vec<usize>, DeformedFieldError> {
    let centroid = points.iter().map(|p| p.coords).sum::<Vector3<f64>>() / points.len() as f64;
    let first = (0..points.len())
        .min_by(|&a, &b| {
            (points[a].coords - centroid)
                .norm_squared()
                .total_cmp(&(points[b].coords - centroid).norm_squared())
        })
        .unwrap_or(0);
    let mut order = farthest_point_order(points, first)?.order;
    order.truncate(count.min(points.len()));
    Ok(order)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn farthest_points_spread_out() {
        let pts: Vec<Point3<f64>> = (0..11).map(|i| Point3::new(i as f64, 0.0, 0.0)).collect();
        let c = farthest_points(&pts, 3).unwrap();
        assert_eq!(c[0], 5);
        assert!(c[1] == 0 || c[1] == 10);
        assert!(c[2] == 0 || c[2] == 10);
        assert_ne!(c[1], c[2]);
    }
}
