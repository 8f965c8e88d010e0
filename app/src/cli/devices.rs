//! `haptics devices`: the connected HID devices, the profile that drives each, and the
//! known profiles; `--check FILE` validates a profile file.
//!
//! The device layer lives in the `haptics-devices` crate; this module only prints.

use std::path::PathBuf;

use clap::Args;
use haptics_devices::hid::{self, ListedDevice, Profile};

/// The arguments of `haptics devices` (the long help is [`LONG_ABOUT`]).
#[derive(Debug, Clone, Args)]
pub struct DevicesArgs {
    /// Validate a profile file and print what it describes (errors name the line).
    #[arg(long, value_name = "FILE")]
    pub check: Option<PathBuf>,
}

/// The long help of `haptics devices`.
pub const LONG_ABOUT: &str = "\
List connected HID devices with the profile that matches each, and the known device profiles.

A device is usable when a profile matches it (vendor and product id, and HID usage for
devices with several interfaces). Profiles are TOML files in the devices crate
(devices/profiles/*.toml, format in devices/README.md): the 3Dconnexion SpaceMouse family
(6-DOF input used as rate control) and a generic raw-HID force-feedback layout.

With no devices attached it says so and exits successfully. On Linux, reading a device
needs access to its /dev/hidraw* node (a udev rule).";

pub fn run(args: &DevicesArgs) -> anyhow::Result<()> {
    if let Some(path) = &args.check {
        let p = Profile::load(path)?;
        println!("{}: OK", path.display());
        print!("{}", describe_profile(&p));
        return Ok(());
    }
    let profiles = hid::builtin_profiles()?;
    println!("Known device profiles:");
    let width = profiles.iter().map(|p| p.name.len()).max().unwrap_or(0);
    for p in &profiles {
        println!("  {:width$}  {}", p.name, summary(p));
    }
    println!();
    match hid::list_devices() {
        Ok(list) if list.is_empty() => println!("No HID devices found."),
        Ok(list) => {
            let matched = list.iter().filter(|d| d.profile.is_some()).count();
            println!(
                "Connected HID devices ({} found, {matched} with a profile):",
                list.len()
            );
            for d in &list {
                println!("  {}", describe_listed(d));
            }
        }
        Err(e) => println!("No HID devices found (enumeration unavailable: {e})."),
    }
    Ok(())
}

/// One line about what a profile drives.
pub fn summary(p: &Profile) -> String {
    let kind = if p.info.dof_actuated == 0 {
        format!("{}-DOF input only", p.info.dof_sensed)
    } else {
        format!(
            "{}-DOF in, {}-DOF force feedback, max {} N",
            p.info.dof_sensed, p.info.dof_actuated, p.info.max_force_n
        )
    };
    let mode = match p.mode {
        hid::profile::ControlMode::Position => "position",
        hid::profile::ControlMode::Rate => "rate control",
    };
    let ids = p
        .matching
        .product_ids
        .iter()
        .map(|id| format!("{:04x}", id))
        .collect::<Vec<_>>()
        .join(",");
    format!(
        "{kind}, {mode}; vendor {:04x}, products {ids}",
        p.matching.vendor_id
    )
}

/// The multi-line description printed by `--check`.
pub fn describe_profile(p: &Profile) -> String {
    let mut s = format!(
        "name: {}\ndescription: {}\ndevice: {}\n{}\ninput reports: {}\noutput report: {}\n",
        p.name,
        p.description,
        p.info.name,
        summary(p),
        p.inputs
            .iter()
            .map(|r| format!(
                "id {} ({} bytes, {} fields)",
                r.report_id,
                r.length,
                r.fields.len()
            ))
            .collect::<Vec<_>>()
            .join(", "),
        p.output.as_ref().map_or("none".to_string(), |o| format!(
            "id {} ({} bytes, {} fields)",
            o.report_id,
            o.length,
            o.fields.len()
        )),
    );
    s.push_str(&format!(
        "safety: ramp {} s, enable button {}, stall timeout {} s\n",
        p.safety.ramp_time_s,
        p.safety
            .enable_button
            .map_or("none".to_string(), |b| b.to_string()),
        p.safety.stall_timeout_s
    ));
    s
}

/// One line about a connected device.
pub fn describe_listed(d: &ListedDevice) -> String {
    let name = match (&d.manufacturer, &d.product) {
        (Some(m), Some(p)) => format!("{m} {p}"),
        (None, Some(p)) => p.clone(),
        (Some(m), None) => m.clone(),
        (None, None) => "(unnamed)".to_string(),
    };
    format!(
        "{:04x}:{:04x}  {name}  {}  usage {:04x}:{:04x}  profile: {}",
        d.vendor_id,
        d.product_id,
        d.path,
        d.usage_page,
        d.usage,
        d.profile.as_deref().unwrap_or("none")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_device_line() {
        let d = ListedDevice {
            vendor_id: 0x046d,
            product_id: 0xc626,
            path: "/dev/hidraw3".into(),
            manufacturer: Some("3Dconnexion".into()),
            product: Some("SpaceNavigator".into()),
            usage_page: 1,
            usage: 8,
            interface_number: 0,
            profile: Some("spacemouse-split".into()),
        };
        assert_eq!(
            describe_listed(&d),
            "046d:c626  3Dconnexion SpaceNavigator  /dev/hidraw3  usage 0001:0008  profile: spacemouse-split"
        );
    }

    #[test]
    fn profile_summaries() {
        let p = hid::builtin_profile("generic-ffb").unwrap();
        assert_eq!(
            summary(&p),
            "6-DOF in, 6-DOF force feedback, max 8 N, position; vendor 1209, products 0001"
        );
        assert!(describe_profile(&p).contains("output report: id 2 (14 bytes, 6 fields)"));
    }
}
