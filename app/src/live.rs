//! Opening a live force-feedback device for `run`, `record` and `devices --test`: the
//! `--device` names, the safety settings, and fitting the scene to the device.
//!
//! Vendor devices (`openhaptics`, `forcedimension`, `haply`) are wrapped in the safety layer with
//! the defaults of [`haptics_devices::SafetySettings`] (0.5 s ramp, 5 ms stall watchdog,
//! velocity brake) and an enable (deadman) button, stylus button 0 unless `--deadman`
//! says otherwise (a Haply Inverse3's buttons are its Verse Grip's: without a grip there is
//! none, and `--deadman off` must say so). The scene is then fitted to the device's capabilities
//! ([`haptics::haptic::device_fit`]): workspace scale, coupling stiffness, saturation and
//! force limits; the changes are printed, and written into recordings so that a replay
//! uses the same values.

use anyhow::{bail, Context};
use haptics::haptic::device_fit::DeviceFit;
use haptics::scene::Scene;
use haptics_devices::{
    safety::SafeDevice, vendor::dhd::ForceDimensionDevice, vendor::haply::HaplyDevice,
    vendor::openhaptics::OpenHapticsDevice, vendor::Vendor, Device, DeviceInfo, SafetySettings,
};

/// A vendor device behind the safety layer.
pub type VendorDevice = SafeDevice<Box<dyn Device + Send>>;

/// The `--deadman` setting: the enable button's index, or none (`off`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadman(pub Option<u32>);

/// Parses `--deadman`: a button index 0..=31, or `off`. The vendor devices' settings
/// ([`vendor_safety`]) must accept it: the clutch's button is refused, since holding the
/// enable button would then also hold the clutch, and the held object would stop
/// following the hand.
pub fn parse_deadman(s: &str) -> Result<Deadman, String> {
    match s.trim() {
        "off" | "none" => Ok(Deadman(None)),
        t => match t.parse::<u32>() {
            Ok(b) if b < 32 => {
                vendor_safety(Some(b)).validate()?;
                Ok(Deadman(Some(b)))
            }
            _ => Err(format!("'{s}' is not a button index 0..=31 or 'off'")),
        },
    }
}

/// The safety settings of a vendor device with enable button `deadman`.
pub fn vendor_safety(deadman: Option<u32>) -> SafetySettings {
    SafetySettings {
        enable_button: deadman,
        ..SafetySettings::default()
    }
}

/// Fails unless `vendor`'s library loads and reports a device, without keeping the device
/// open: for commands that do other work (loading a scene) before they drive the device,
/// so that a missing library or device fails first and the device's clock starts with
/// the loop.
pub fn require_vendor(vendor: Vendor) -> anyhow::Result<()> {
    match haptics_devices::vendor::probe(vendor) {
        haptics_devices::vendor::Probe::Unavailable(e) => Err(e.into()),
        haptics_devices::vendor::Probe::Found { devices, note, .. } if devices.is_empty() => {
            bail!(
                "{vendor}: no device found{}",
                note.map(|n| format!(" ({n})")).unwrap_or_default()
            )
        }
        haptics_devices::vendor::Probe::Found { .. } => Ok(()),
    }
}

/// Opens `vendor`'s first device behind the safety layer; returns it and a name for
/// messages ("sigma.7 (Force Dimension (DHD))").
pub fn open_vendor(vendor: Vendor, deadman: Option<u32>) -> anyhow::Result<(VendorDevice, String)> {
    let device: Box<dyn Device + Send> = match vendor {
        Vendor::OpenHaptics => Box::new(OpenHapticsDevice::open()?),
        Vendor::ForceDimension => Box::new(ForceDimensionDevice::open()?),
        Vendor::Haply => {
            let d = HaplyDevice::open()?;
            if let (None, Some(b)) = (d.grip(), deadman) {
                bail!(
                    "{}: no Verse Grip is paired, so there is no button {b} to hold as the enable button; pair one, or pass --deadman off to run without an enable button",
                    d.info().name
                );
            }
            Box::new(d)
        }
    };
    let name = format!("{} ({vendor})", device.info().name);
    let safe = SafeDevice::new(device, vendor_safety(deadman))
        .with_context(|| format!("the safety settings for {name}"))?;
    Ok((safe, name))
}

/// Fits `scene` to `info` and prints what changed (nothing for input-only devices).
pub fn fit_and_report(scene: &mut Scene, info: &DeviceInfo) -> Option<DeviceFit> {
    let fit = haptics::haptic::device_fit::fit_scene(scene, info)?;
    println!(
        "device {}: {}-DOF in, {}-DOF out, max {} N{}, stable stiffness {} N/m{}",
        info.name,
        info.dof_sensed,
        info.dof_actuated,
        info.max_force_n,
        if info.dof_actuated >= 6 {
            format!(", {} N·m", info.max_torque_nm)
        } else {
            " (torque shown, not sent)".to_string()
        },
        info.max_stiffness_n_per_m,
        if info.max_angular_stiffness_nm_per_rad > 0.0 {
            format!(", {} N·m/rad", info.max_angular_stiffness_nm_per_rad)
        } else {
            String::new()
        }
    );
    for c in &fit.changes {
        println!("  {} {} -> {} ({})", c.key, c.from, c.to, c.why);
    }
    Some(fit)
}

/// The comment lines a recording carries so that `replay` uses the fitted values:
/// `# device: NAME` and one `# fitted: KEY=VALUE` per fitted setting.
pub fn recording_header(device: &str, fit: Option<&DeviceFit>, scene: &Scene) -> String {
    let mut s = format!("# device: {device}\n");
    if let Some(f) = fit {
        s.push_str(&format!(
            "# fitted: workspace_scale={}\n",
            f.workspace_scale
        ));
        let c = &scene.coupling;
        for (k, v) in [
            ("coupling.stiffness", c.stiffness),
            (
                "coupling.saturation_force",
                c.saturation_force.unwrap_or(0.0),
            ),
            ("coupling.device_max_force", c.device_max_force),
            ("coupling.device_max_torque", c.device_max_torque),
        ] {
            s.push_str(&format!("# fitted: {k}={v}\n"));
        }
    }
    s
}

/// The `# fitted: KEY=VALUE` lines of a recording, applied to `scene` (before any
/// `--set`). Errors name the file and line.
pub fn apply_recorded_fit(
    text: &str,
    path: &std::path::Path,
    scene: &mut Scene,
) -> anyhow::Result<usize> {
    let mut n = 0;
    for (i, line) in text.lines().enumerate() {
        let Some(rest) = line.trim().strip_prefix("# fitted:") else {
            continue;
        };
        let rest = rest.trim();
        let at = || format!("{}:{}", path.display(), i + 1);
        let (key, value) = rest
            .split_once('=')
            .with_context(|| format!("{}: expected '# fitted: KEY=VALUE', found '{line}'", at()))?;
        let v: f64 = value
            .trim()
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite())
            .with_context(|| format!("{}: '{}' is not a finite number", at(), value.trim()))?;
        if key.trim() == "workspace_scale" {
            if !(1e-6..=1e6).contains(&v) {
                bail!("{}: workspace_scale {v} is outside 1e-6..=1e6", at());
            }
            scene.workspace_scale = v;
        } else {
            let p = haptics::scene::params::Param::from_key(key.trim())
                .map_err(|e| anyhow::anyhow!("{}: {e}", at()))?;
            scene.set(p, v);
        }
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadman_values() {
        assert_eq!(parse_deadman("0"), Ok(Deadman(Some(0))));
        assert_eq!(parse_deadman("31"), Ok(Deadman(Some(31))));
        assert_eq!(parse_deadman("off"), Ok(Deadman(None)));
        for bad in ["32", "-1", "x", ""] {
            assert!(parse_deadman(bad).is_err(), "{bad}");
        }
        // The clutch's button (bit 1) cannot also be the enable button.
        assert_eq!(SafetySettings::default().clutch_button, Some(1));
        let e = parse_deadman("1").unwrap_err();
        assert!(e.contains("is the clutch"), "{e}");
    }
}
