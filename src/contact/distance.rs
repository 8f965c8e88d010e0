//! Distance fields a pointshell is queried against: the signed grid field of a rigid
//! object (thesis 3.11), an analytic half-space (floors, and the exact reference for
//! gradient tests), and, in [`super::deformed_field`], the approximate field of a reduced
//! deformable object (3.12).
//!
//! Convention (thesis 3.5): negative inside the distance-field object. Every field must be
//! a lower bound of the true distance wherever it is not exact (so culling with it is
//! conservative), and must be deterministic.

use nalgebra::{Point3, Unit, Vector3};

use crate::geometry::{MeshDistance, SignedDistanceField};

/// Largest `k` a [`ProxyCache`] holds (larger `k` always scans).
pub const MAX_CACHED_NEIGHBOURS: usize = 8;

/// The k nearest proxies last found for one query point, and how far the point and the
/// proxies may move before they can change ([`super::deformed_field`] module docs). [`Default`] is empty.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProxyCache {
    /// Identity of the field that filled it; 0: empty.
    pub(super) field: u32,
    pub(super) count: u8,
    pub(super) proxies: [u16; MAX_CACHED_NEIGHBOURS],
    /// The query point when filled.
    pub(super) anchor: [f64; 3],
    /// How far the point and the proxies may move together: half the gap, less margins.
    pub(super) slack: f64,
    /// The field's accumulated proxy drift when filled.
    pub(super) drift: f64,
    /// The distance to the k-th nearest proxy when filled.
    pub(super) kth: f64,
}

impl ProxyCache {
    /// The query point the cache was filled at (`None` if empty): it changes exactly when
    /// a query had to scan the proxies.
    pub fn anchor(&self) -> Option<Point3<f64>> {
        (self.field != 0 && self.count > 0).then(|| Point3::from(self.anchor))
    }
}

/// A signed distance, queried in the distance-field object's body frame.
pub trait DistanceQuery {
    /// Signed distance at `p` (negative inside).
    fn distance(&self, p: &Point3<f64>) -> f64;

    /// A Lipschitz constant of [`DistanceQuery::distance`], if one is known: temporal
    /// coherence needs it to bound how fast a distance can drop. `None` disables
    /// temporal coherence against this field.
    fn lipschitz(&self) -> Option<f64> {
        None
    }

    /// Dimension of the field object's reduced coordinates (0 for rigid objects).
    fn reduced_dim(&self) -> usize {
        0
    }

    /// Adds the reduced force of the body-frame force `f` applied at body-frame point `p`
    /// of a deformable field object to `out` (nothing for rigid objects).
    fn add_reduced_force(&self, _p: &Point3<f64>, _f: &Vector3<f64>, _out: &mut [f64]) {}

    /// Whether [`DistanceQuery::distance_cached`] gains from a [`ProxyCache`] per query
    /// point (a traversal allocates them only then).
    fn uses_proxy_cache(&self) -> bool {
        false
    }

    /// [`DistanceQuery::distance`], bit for bit, for a query point that keeps `cache`
    /// between calls (a pointshell point from cycle to cycle): a field may answer faster
    /// from it while the point has moved little.
    fn distance_cached(&self, p: &Point3<f64>, _cache: &mut ProxyCache) -> f64 {
        self.distance(p)
    }

    /// [`DistanceQuery::distance_cached`], or, where the field can show more cheaply that
    /// the distance exceeds `above`, a lower bound of it that does. A traversal that only
    /// needs to know whether a node is farther than its radius asks this (the deformed
    /// field answers with one pull-back lookup instead of k - 1).
    fn distance_above_cached(
        &self,
        p: &Point3<f64>,
        _above: f64,
        cache: &mut ProxyCache,
    ) -> Lookup {
        Lookup::Exact(self.distance_cached(p, cache))
    }

    /// [`DistanceQuery::add_reduced_force`], bit for bit, with the point's cache.
    fn add_reduced_force_cached(
        &self,
        p: &Point3<f64>,
        f: &Vector3<f64>,
        out: &mut [f64],
        _cache: &mut ProxyCache,
    ) {
        self.add_reduced_force(p, f, out)
    }
}

/// `field`'s distance at `y` for query point `s`, through `s`'s cache where `caches`
/// holds one per point (empty: no caches), else the plain distance: the same answer.
#[inline]
pub(crate) fn cached_distance<D: DistanceQuery>(
    field: &D,
    caches: &mut [ProxyCache],
    s: usize,
    y: &Point3<f64>,
) -> f64 {
    match caches.get_mut(s) {
        Some(cache) => field.distance_cached(y, cache),
        None => field.distance(y),
    }
}

/// [`cached_distance`], or, where a cached field can show more cheaply that the distance
/// exceeds `above`, a lower bound that does ([`DistanceQuery::distance_above_cached`]).
#[inline]
pub(crate) fn cached_distance_above<D: DistanceQuery>(
    field: &D,
    caches: &mut [ProxyCache],
    s: usize,
    y: &Point3<f64>,
    above: f64,
) -> Lookup {
    match caches.get_mut(s) {
        Some(cache) => field.distance_above_cached(y, above, cache),
        None => Lookup::Exact(field.distance(y)),
    }
}

/// The answer of [`DistanceQuery::distance_above_cached`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Lookup {
    /// The distance, bit for bit as [`DistanceQuery::distance`] gives it.
    Exact(f64),
    /// A lower bound of the distance, greater than the threshold asked about.
    Above(f64),
}

impl DistanceQuery for SignedDistanceField {
    #[inline]
    fn distance(&self, p: &Point3<f64>) -> f64 {
        self.lookup(p)
    }

    fn lipschitz(&self) -> Option<f64> {
        Some(self.lipschitz_bound())
    }
}

/// The exact signed distance of a closed mesh ([`MeshDistance`]), for held objects whose
/// grid is too coarse for their thin parts ([`crate::geometry::thickness`]). Its grid is
/// kept beside it for tools and display. Queries are allocation-free; a point whose
/// distance cannot be computed (not finite) reads NaN, which neither culls nor touches.
#[derive(Debug, Clone)]
pub struct ExactField {
    /// The grid the scene asked for (too coarse for contact).
    pub grid: SignedDistanceField,
    /// The exact distance.
    pub mesh: MeshDistance,
}

impl DistanceQuery for ExactField {
    #[inline]
    fn distance(&self, p: &Point3<f64>) -> f64 {
        self.mesh.signed_distance(p)
    }

    fn lipschitz(&self) -> Option<f64> {
        // An exact distance is 1-Lipschitz; the slack covers rounding.
        Some(1.0 + 1e-9)
    }
}

/// The half-space `{x : n . x <= offset}`: signed distance `n . x - offset`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HalfSpace {
    /// Outward unit normal.
    pub normal: Unit<Vector3<f64>>,
    /// Distance of the boundary plane from the origin along `normal`.
    pub offset: f64,
}

impl HalfSpace {
    /// A floor: the half-space below `z = height`.
    pub fn floor(height: f64) -> Self {
        HalfSpace {
            normal: Vector3::z_axis(),
            offset: height,
        }
    }
}

impl DistanceQuery for HalfSpace {
    #[inline]
    fn distance(&self, p: &Point3<f64>) -> f64 {
        self.normal.dot(&p.coords) - self.offset
    }

    fn lipschitz(&self) -> Option<f64> {
        Some(1.0)
    }
}

impl<T: DistanceQuery + ?Sized> DistanceQuery for &T {
    #[inline]
    fn distance(&self, p: &Point3<f64>) -> f64 {
        (**self).distance(p)
    }

    fn lipschitz(&self) -> Option<f64> {
        (**self).lipschitz()
    }

    fn reduced_dim(&self) -> usize {
        (**self).reduced_dim()
    }

    fn add_reduced_force(&self, p: &Point3<f64>, f: &Vector3<f64>, out: &mut [f64]) {
        (**self).add_reduced_force(p, f, out)
    }

    fn uses_proxy_cache(&self) -> bool {
        (**self).uses_proxy_cache()
    }

    #[inline]
    fn distance_cached(&self, p: &Point3<f64>, cache: &mut ProxyCache) -> f64 {
        (**self).distance_cached(p, cache)
    }

    #[inline]
    fn distance_above_cached(&self, p: &Point3<f64>, above: f64, cache: &mut ProxyCache) -> Lookup {
        (**self).distance_above_cached(p, above, cache)
    }

    fn add_reduced_force_cached(
        &self,
        p: &Point3<f64>,
        f: &Vector3<f64>,
        out: &mut [f64],
        cache: &mut ProxyCache,
    ) {
        (**self).add_reduced_force_cached(p, f, out, cache)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_space_is_signed_distance() {
        let h = HalfSpace {
            normal: Unit::new_normalize(Vector3::new(1.0, 1.0, 0.0)),
            offset: 0.5,
        };
        let p = Point3::new(1.0, 1.0, 3.0);
        assert!((h.distance(&p) - (2f64.sqrt() - 0.5)).abs() < 1e-15);
        assert!(HalfSpace::floor(1.0).distance(&Point3::new(4.0, -2.0, 0.25)) == -0.75);
    }
}
