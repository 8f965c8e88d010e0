//! The settings of contact between a pointshell and a distance field: the penalty
//! stiffness and its L/l scaling (thesis 3.5), the node budgets of the traversal's graceful
//! degradation (3.10.1) and of the continuous sweep's candidate search, temporal coherence
//! (3.10.2) and friction. Shared by the traversal ([`super::Traversal`]) and [`super::continuous`].

/// The default node budget of the sweep's candidate search (and of the scene key
/// `[contact] sweep_budget`, [`ContactParams::sweep_budget`]).
pub const DEFAULT_NODE_BUDGET: usize = 4000;

/// Contact parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContactParams {
    /// Penalty stiffness `k_C` (N/m).
    pub stiffness: f64,
    /// `L`: with `l > L` points in contact, forces are scaled by `L / l` (thesis 3.5).
    pub max_unscaled_contacts: usize,
    /// Warm node budget `V_W`.
    pub warm_budget: usize,
    /// Cold budget as a fraction of the warm one (0.8 in the thesis).
    pub cold_fraction: f64,
    /// Skip nodes that provably cannot touch yet.
    pub temporal_coherence: bool,
    /// Continuous contact ([`super::continuous`]): how far the held object may go into
    /// what it touches (scene units); 0 turns the sweep off (discrete contact only).
    pub max_penetration: f64,
    /// Coulomb friction; `None` is frictionless.
    pub friction: Option<super::model::Friction>,
    /// Node budget of the continuous sweep's candidate search
    /// ([`super::continuous::SweepParams::node_budget`]): levels completed or not
    /// started, as in the traversal. Where the sweep stops at a coarse level, fine points
    /// between its samples can go past the penetration limit.
    pub sweep_budget: usize,
}

impl ContactParams {
    /// Defaults against a deformed distance field (thesis 3.12): the rigid field's, less
    /// temporal coherence (the blend has no Lipschitz bound). The full node budget: with
    /// the proxy-free culling bound a culled node costs about one rigid lookup, and the
    /// two-deformable benchmark's whole cycle at the full budget is within 500 us p99.9
    /// on the 2-vCPU machine (docs/contact.md).
    pub fn deformed_field() -> Self {
        ContactParams {
            temporal_coherence: false,
            ..ContactParams::default()
        }
    }
}

impl Default for ContactParams {
    /// The default warm budget, 4000 nodes, keeps the worst-case traversal of the
    /// benchmark configurations (a deformable r = 20 pointshell pressed deep into a rigid
    /// field) under 500 us on this 2-core machine (docs/performance.md).
    fn default() -> Self {
        ContactParams {
            stiffness: 1000.0,
            max_unscaled_contacts: 10,
            warm_budget: 4000,
            cold_fraction: 0.8,
            temporal_coherence: true,
            max_penetration: 1e-3,
            friction: None,
            sweep_budget: DEFAULT_NODE_BUDGET,
        }
    }
}
