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

use nalgebra::{DMatrix, Matrix3, Point3, Vector3};

use super::distance::DistanceQuery;
use super::shell_modes::{for_each_embedded, ShellModesError};
use crate::geometry::farthest::farthest_point_order;
use crate::geometry::pointshell::PointshellError;
use crate::geometry::SignedDistanceField;
use crate::mesh::VolumeMesh;

/// Largest supported `k`.
pub const MAX_NEIGHBOURS: usize = 16;

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
#[derive(Debug, Clone)]
pub struct DeformedDistanceField {
    rest: SignedDistanceField,
    proxies: Vec<Proxy>,
    /// Proxy ranges of the domains.
    domains: Vec<(usize, usize)>,
    k: usize,
    r: usize,
    positions: Vec<Point3<f64>>,
    inverse_gradients: Vec<Matrix3<f64>>,
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
        };
        field.update(&vec![0.0; field.r]);
        Ok(field)
    }

    /// Number of proxies.
    pub fn num_proxies(&self) -> usize {
        self.proxies.len()
    }

    /// Rest positions of the proxies.
    pub fn proxy_rest_positions(&self) -> impl Iterator<Item = &Point3<f64>> {
        self.proxies.iter().map(|p| &p.rest)
    }

    /// The rest field.
    pub fn rest_field(&self) -> &SignedDistanceField {
        &self.rest
    }

    /// Deforms the proxies to reduced coordinates `q` (allocation-free). A proxy whose
    /// deformation gradient is not invertible (an inverted element) pulls back with the
    /// identity.
    pub fn update(&mut self, q: &[f64]) {
        for (i, p) in self.proxies.iter().enumerate() {
            let mut x = p.rest;
            let mut f = Matrix3::identity();
            for (j, &qj) in q.iter().enumerate().take(self.r) {
                x += p.u[j] * qj;
                f += p.grad[j] * qj;
            }
            self.positions[i] = x;
            self.inverse_gradients[i] = if f.determinant() > 1e-6 {
                f.try_inverse().unwrap_or_else(Matrix3::identity)
            } else {
                Matrix3::identity()
            };
        }
    }

    /// The k nearest deformed proxies of domain `(a, b)` and their normalized weights.
    fn neighbours(&self, x: &Point3<f64>, (a, b): (usize, usize)) -> Neighbours {
        let k = self.k;
        let mut idx = [0usize; MAX_NEIGHBOURS];
        // Squared distances while selecting; square roots only for the k kept.
        let mut dist = [f64::INFINITY; MAX_NEIGHBOURS];
        let mut count = 0;
        for i in a..b {
            let d = (self.positions[i] - x).norm_squared();
            if count < k || d < dist[count - 1] {
                // Insertion into the sorted list of the k nearest.
                let mut j = count.min(k - 1);
                if count < k {
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

    /// The blended pull-back distance of one domain's neighbours.
    fn blend(&self, x: &Point3<f64>, nb: &Neighbours) -> f64 {
        let (idx, w, count) = nb;
        let mut d = 0.0;
        for j in 0..*count {
            if w[j] == 0.0 {
                continue;
            }
            let i = idx[j];
            let back = self.proxies[i].rest + self.inverse_gradients[i] * (x - self.positions[i]);
            d += w[j] * self.rest.lookup(&back);
        }
        d
    }

    /// The smallest domain distance at `x` (NaN domains ignored; infinity if all are
    /// NaN) and the neighbours of the domain that gives it.
    fn nearest_domain(&self, x: &Point3<f64>) -> (f64, Neighbours) {
        let mut best: Option<(f64, Neighbours)> = None;
        for &dom in &self.domains {
            let nb = self.neighbours(x, dom);
            let d = self.blend(x, &nb);
            match &best {
                Some((b, _)) if !(d < *b || b.is_nan()) => {}
                _ => best = Some((d, nb)),
            }
        }
        let (d, nb) = best.expect("a deformed field has at least one domain");
        (if d.is_nan() { f64::INFINITY } else { d }, nb)
    }
}

/// The k nearest proxies of a domain, their normalized weights, and how many there are.
type Neighbours = ([usize; MAX_NEIGHBOURS], [f64; MAX_NEIGHBOURS], usize);

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
        let (idx, w, count) = match self.domains.as_slice() {
            [only] => self.neighbours(p, *only),
            _ => self.nearest_domain(p).1,
        };
        for j in 0..count {
            let proxy = &self.proxies[idx[j]];
            for (o, u) in out.iter_mut().zip(&proxy.u) {
                *o += w[j] * u.dot(f);
            }
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
