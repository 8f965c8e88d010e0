//! Published specifications of the force-feedback devices the vendor layer drives: the
//! largest force, torque and gripper force each model may be sent, the largest linear and
//! angular stiffness and damping it renders stably, and its workspace radius.
//!
//! The figures are CHAI3D's per-model specifications (CHAI3D 3.3.0,
//! `src/devices/CDeltaDevices.cpp` and `src/devices/CPhantomDevices.cpp`, the
//! `m_specifications` set for each model in `cDeltaDevice::open()` and the
//! `cPhantomDevice` constructor; BSD-3-Clause, Copyright (c) 2003-2024, CHAI3D; the Delta
//! file's authors include Force Dimension). They are the fallback where a vendor library
//! reports no limit (Force Dimension's SDK answers a negative `dhdGetMaxForce` until
//! `dhdSetMaxForce` is called), and an upper bound where it does: the lower of the two wins
//! ([`lower_of`]).
//!
//! Force Dimension models are looked up by `dhdGetSystemType` (the `DHD_DEVICE_*` values of
//! the SDK's `dhdc.h`); OpenHaptics models by the `HD_DEVICE_MODEL_TYPE` string, as CHAI3D
//! does.
//!
//! Haply's Inverse Service reports no force, stiffness or workspace limit (its device
//! configuration has none, nor its HTTP API), CHAI3D has no Haply model, and Haply's
//! documentation publishes no rated figures; [`haply`](fn@haply) therefore holds conservative
//! figures from what Haply and its integrators document (cited at the table).

/// One model's published figures (SI units; 0 where the model has no such axis).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelSpec {
    /// The model's name, as CHAI3D gives it.
    pub name: &'static str,
    /// Largest force, N (`m_maxLinearForce`).
    pub max_force_n: f64,
    /// Largest torque, N·m (`m_maxAngularTorque`; 0: a passive or absent wrist).
    pub max_torque_nm: f64,
    /// Largest gripper force, N (`m_maxGripperForce`; 0: no force on the gripper).
    pub max_gripper_force_n: f64,
    /// Largest stable linear stiffness, N/m (`m_maxLinearStiffness`).
    pub max_linear_stiffness_n_per_m: f64,
    /// Largest stable angular stiffness, N·m/rad (`m_maxAngularStiffness`).
    pub max_angular_stiffness_nm_per_rad: f64,
    /// Largest stable linear damping, N/(m/s) (`m_maxLinearDamping`).
    pub max_linear_damping_n_s_per_m: f64,
    /// Largest stable angular damping, N·m/(rad/s) (`m_maxAngularDamping`).
    pub max_angular_damping_nm_s_per_rad: f64,
    /// Workspace radius, m (`m_workspaceRadius`).
    pub workspace_radius_m: f64,
}

/// The table's rows: (name, F, T, F gripper, K linear, K angular, B linear, B angular, R).
const fn spec(name: &'static str, [f, t, fg, k, ka, b, ba, r]: [f64; 8]) -> ModelSpec {
    ModelSpec {
        name,
        max_force_n: f,
        max_torque_nm: t,
        max_gripper_force_n: fg,
        max_linear_stiffness_n_per_m: k,
        max_angular_stiffness_nm_per_rad: ka,
        max_linear_damping_n_s_per_m: b,
        max_angular_damping_nm_s_per_rad: ba,
        workspace_radius_m: r,
    }
}

//                                       F     T     Fg   K lin   K ang B lin B ang  R
const DELTA3: ModelSpec = spec("delta.3", [20.0, 0.0, 0.0, 5000.0, 0.0, 30.0, 0.0, 0.15]);
const OMEGA3: ModelSpec = spec("omega.3", [12.0, 0.0, 0.0, 5000.0, 0.0, 30.0, 0.0, 0.075]);
const OMEGA6: ModelSpec = spec("omega.6", [12.0, 0.0, 0.0, 5000.0, 0.0, 30.0, 0.0, 0.075]);
const OMEGA7: ModelSpec = spec("omega.7", [12.0, 0.0, 8.0, 5000.0, 0.0, 30.0, 0.0, 0.075]);
const SIGMA7: ModelSpec = spec("sigma.7", [12.0, 0.2, 8.0, 4000.0, 1.0, 30.0, 0.070, 0.075]);
const LAMBDA7: ModelSpec = spec(
    "lambda.7",
    [12.0, 0.2, 8.0, 8000.0, 1.0, 30.0, 0.070, 0.1125],
);
const FALCON: ModelSpec = spec(
    "Novint Falcon",
    [8.0, 0.0, 0.0, 3000.0, 0.0, 20.0, 0.0, 0.04],
);
/// A Force Dimension model the table does not name. CHAI3D's own default is the
/// omega.3's 12 N; a device we cannot name gets less, 5 N, until its library reports its
/// limit.
const UNKNOWN_DHD: ModelSpec = spec(
    "unknown Force Dimension device",
    [5.0, 0.0, 0.0, 1000.0, 0.0, 10.0, 0.0, 0.075],
);

const TOUCH: ModelSpec = spec("Touch", [3.3, 0.0, 0.0, 400.0, 0.0, 4.0, 0.0, 0.075]);
const OMNI: ModelSpec = spec("PHANTOM Omni", [3.3, 0.0, 0.0, 700.0, 0.0, 5.0, 0.0, 0.10]);
const DESKTOP: ModelSpec = spec(
    "PHANTOM Desktop",
    [7.9, 0.0, 0.0, 1000.0, 0.0, 5.0, 0.0, 0.10],
);
const PREMIUM_15_6DOF: ModelSpec = spec(
    "PHANTOM Premium 1.5 6DOF",
    [8.5, 0.188, 0.0, 800.0, 0.3, 5.0, 0.004, 0.12],
);
const PREMIUM_30_6DOF: ModelSpec = spec(
    "PHANTOM Premium 3.0 6DOF",
    [22.0, 0.188, 0.0, 1000.0, 0.3, 5.0, 0.004, 0.25],
);
/// CHAI3D's figures for a PHANTOM it does not name.
const OTHER_PHANTOM: ModelSpec = spec("PHANTOM", [6.0, 0.0, 0.0, 1000.0, 0.0, 8.0, 0.0, 0.10]);

/// Haply models, by the service's device type. Force: 2.0 N, the default force limit of
/// Isaac Lab's Haply device (`isaaclab/devices/haply/se3_haply.py`, `limit_force`, "safety
/// limit"), the only published figure of a driver for these devices. Stiffness: 800 N/m,
/// the top of the stiffness range of Haply's basic force-feedback tutorial (defaults 300
/// and 600 N/m); damping 3 N·s/m, the top of its damping range. Workspace radius: the sphere Haply's position-control tutorials keep the
/// cursor in around the centred origin of the `arm_front_centered` preset, 0.10 m on the
/// Inverse3 and Inverse3x, 0.04 m on the Minverse. No torque: the Inverse3 renders
/// Cartesian force only (its angular commands are joint torques).
//                                          F    T    Fg  K lin  K ang B lin B ang  R
const INVERSE3: ModelSpec = spec("Inverse3", [2.0, 0.0, 0.0, 800.0, 0.0, 3.0, 0.0, 0.10]);
const INVERSE3X: ModelSpec = spec("Inverse3x", [2.0, 0.0, 0.0, 800.0, 0.0, 3.0, 0.0, 0.10]);
const MINVERSE: ModelSpec = spec("Minverse", [2.0, 0.0, 0.0, 800.0, 0.0, 3.0, 0.0, 0.04]);

/// The figures of the Haply model whose service device type is `device_type`
/// (`inverse3`, `inverse3x`, `minverse`); the Inverse3's for any other.
pub fn haply(device_type: &str) -> &'static ModelSpec {
    match device_type {
        "inverse3x" => &INVERSE3X,
        "minverse" => &MINVERSE,
        _ => &INVERSE3,
    }
}

/// The figures of the Force Dimension model `system_type` (`dhdGetSystemType`).
pub fn force_dimension(system_type: i32) -> &'static ModelSpec {
    match system_type {
        // DHD_DEVICE_DELTA3 63.
        63 => &DELTA3,
        // DHD_DEVICE_OMEGA3 33.
        33 => &OMEGA3,
        // DHD_DEVICE_OMEGA6_RIGHT 34, _LEFT 36.
        34 | 36 => &OMEGA6,
        // DHD_DEVICE_OMEGA7_RIGHT 35, _LEFT 37.
        35 | 37 => &OMEGA7,
        // DHD_DEVICE_SIGMA7_RIGHT 104, _LEFT 105 (SIGMA331 in older headers).
        104 | 105 => &SIGMA7,
        // DHD_DEVICE_LAMBDA7_RIGHT 108, _LEFT 109.
        108 | 109 => &LAMBDA7,
        // DHD_DEVICE_FALCON 60.
        60 => &FALCON,
        _ => &UNKNOWN_DHD,
    }
}

/// The figures of the OpenHaptics model named `model` (`HD_DEVICE_MODEL_TYPE`), CHAI3D's
/// generic PHANTOM figures for any other name.
pub fn openhaptics(model: &str) -> &'static ModelSpec {
    match model {
        "Touch" => &TOUCH,
        "PHANTOM Omni" => &OMNI,
        "PHANTOM Desktop" => &DESKTOP,
        "PHANTOM Premium 1.5 6DOF" => &PREMIUM_15_6DOF,
        "PHANTOM Premium 3.0 6DOF" => &PREMIUM_30_6DOF,
        _ => &OTHER_PHANTOM,
    }
}

/// The limit to enforce: the library's `reported` figure where it gives a finite,
/// non-negative one, capped by the `published` figure; the published one otherwise.
/// A published 0 means "not rated" and leaves a reported figure alone.
pub fn lower_of(reported: Option<f64>, published: f64) -> f64 {
    match reported.filter(|v| v.is_finite() && *v >= 0.0) {
        Some(v) if published > 0.0 => v.min(published),
        Some(v) => v,
        None => published,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CHAI3D 3.3.0's sigma.7 (system types 104 and 105): 12 N, 0.2 N·m, 8 N on the
    /// gripper, 4000 N/m and 1 N·m/rad.
    #[test]
    fn the_sigma7_has_chai3ds_figures() {
        for t in [104, 105] {
            let s = force_dimension(t);
            assert_eq!(s.name, "sigma.7");
            assert_eq!(
                (s.max_force_n, s.max_torque_nm, s.max_gripper_force_n),
                (12.0, 0.2, 8.0)
            );
            assert_eq!(
                (
                    s.max_linear_stiffness_n_per_m,
                    s.max_angular_stiffness_nm_per_rad
                ),
                (4000.0, 1.0)
            );
        }
        assert_eq!(force_dimension(60).name, "Novint Falcon");
        assert_eq!(
            force_dimension(35).max_torque_nm,
            0.0,
            "the omega.7's wrist is passive"
        );
        assert!(force_dimension(9999).max_force_n <= OMEGA3.max_force_n);
    }

    #[test]
    fn openhaptics_models_by_name() {
        let p = openhaptics("PHANTOM Premium 1.5 6DOF");
        assert_eq!((p.max_force_n, p.max_torque_nm), (8.5, 0.188));
        assert_eq!(p.max_angular_stiffness_nm_per_rad, 0.3);
        assert_eq!(openhaptics("Touch").max_linear_stiffness_n_per_m, 400.0);
        assert_eq!(openhaptics("Phantom of the Opera").name, "PHANTOM");
    }

    #[test]
    fn haply_models_by_device_type() {
        assert_eq!(haply("minverse").workspace_radius_m, 0.04);
        assert_eq!(haply("inverse3x").name, "Inverse3x");
        assert_eq!(haply("something new").name, "Inverse3");
        for t in ["inverse3", "inverse3x", "minverse"] {
            assert_eq!((haply(t).max_force_n, haply(t).max_torque_nm), (2.0, 0.0));
        }
    }

    #[test]
    fn the_lower_of_reported_and_published_wins() {
        assert_eq!(lower_of(Some(15.0), 12.0), 12.0);
        assert_eq!(lower_of(Some(9.0), 12.0), 9.0);
        // No limit reported (the DHD SDK's -1 before dhdSetMaxForce), or not a number.
        assert_eq!(lower_of(Some(-1.0), 12.0), 12.0);
        assert_eq!(lower_of(Some(f64::NAN), 12.0), 12.0);
        assert_eq!(lower_of(None, 12.0), 12.0);
        // A figure the table does not rate leaves the library's alone.
        assert_eq!(lower_of(Some(0.15), 0.0), 0.15);
    }
}
