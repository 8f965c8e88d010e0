//! `haptics devices`: the vendor SDK devices (OpenHaptics, Force Dimension) and the
//! connected HID devices with the profile that drives each, the known profiles;
//! `--check FILE` validates a profile file; `--test DEVICE` runs the self-test.
//!
//! The device layer lives in the `haptics-devices` crate; this module only prints.

use std::path::PathBuf;

use anyhow::bail;
use clap::Args;
use haptics_devices::hid::{self, backend::ListedDevice, profile::Profile};
use haptics_devices::self_test::{self, SelfTestConfig, SelfTestReport};
use haptics_devices::vendor::{self, Probe};
use haptics_devices::{
    safety::SafeDevice, simulated::SimConfig, simulated::SimulatedDevice, vendor::Vendor, Device,
};

use super::range;

/// The arguments of `haptics devices` (the long help is [`LONG_ABOUT`]).
#[derive(Debug, Clone, Args)]
pub struct DevicesArgs {
    /// Validate a profile file and print what it describes (errors name the line).
    #[arg(long, value_name = "FILE")]
    pub check: Option<PathBuf>,
    /// Self-test a device: a soft spring to the centre of its workspace (at most a tenth
    /// of its stable stiffness, through the safety layer), then a report of the achieved
    /// rate, jitter, position range and largest force. DEVICE: openhaptics,
    /// forcedimension, haply, hid:PROFILE or simulated.
    #[arg(long, value_name = "DEVICE")]
    pub test: Option<String>,
    /// Length of the self-test, s (0.1 to 600).
    #[arg(long, default_value_t = 5.0, value_parser = range::real(0.1, 600.0))]
    pub duration: f64,
    /// Spring stiffness of the self-test, N/m (capped at a tenth of the device's stable
    /// stiffness).
    #[arg(long, default_value_t = 100.0, value_parser = range::positive(1e5))]
    pub stiffness: f64,
    /// The enable (deadman) button of a vendor device during the self-test: force only
    /// while it is held (0..=31, or `off`).
    #[arg(long, default_value = "0", value_parser = crate::live::parse_deadman)]
    pub deadman: crate::live::Deadman,
}

/// The long help of `haptics devices`.
pub const LONG_ABOUT: &str = "\
List force-feedback devices: those of the vendor SDKs found at run time (3D Systems
OpenHaptics: Touch, Touch X, PHANTOM Premium; Force Dimension: omega, sigma, delta), a
Haply Inverse3 through Haply's Inverse Service, the connected HID devices with the profile
that matches each, and the known device profiles.

Vendor libraries are looked up in HAPTICS_OPENHAPTICS_LIB / HAPTICS_DHD_LIB (the library
file), else as libHD.so / libdhd.so through the dynamic loader (LD_LIBRARY_PATH); a
library that is not found is reported with where it was looked for. The Inverse Service
is reached at ws://localhost:10001, or at HAPTICS_HAPLY_SERVICE (host:port or a ws:// URL);
it must be running (the Haply Hub starts it).

A HID device is usable when a profile matches it (vendor and product id, and HID usage
for devices with several interfaces). Profiles are TOML files in the devices crate
(devices/profiles/*.toml, format in devices/README.md): the 3Dconnexion SpaceMouse family
(6-DOF input used as rate control) and a generic raw-HID force-feedback layout.

With no devices attached it says so and exits successfully. On Linux, a device needs a
udev rule for its /dev/hidraw* or USB node (devices/udev/, see devices/README.md).

Examples:
  haptics devices
  haptics devices --test openhaptics
  haptics devices --test haply
  HAPTICS_DHD_LIB=/opt/sdk-3.17/lib/release/lin-x86_64-gcc/libdhd.so haptics devices --test forcedimension";

pub fn run(args: &DevicesArgs) -> anyhow::Result<()> {
    if let Some(path) = &args.check {
        let p = Profile::load(path)?;
        println!("{}: OK", path.display());
        print!("{}", describe_profile(&p));
        return Ok(());
    }
    if let Some(d) = &args.test {
        return run_self_test(d, args);
    }
    println!("Vendor SDK devices:");
    for v in Vendor::ALL {
        for line in describe_probe(v, &vendor::probe(v)) {
            println!("  {line}");
        }
    }
    println!();
    let profiles = hid::profile::builtin_profiles()?;
    println!("Known device profiles:");
    let width = profiles.iter().map(|p| p.name.len()).max().unwrap_or(0);
    for p in &profiles {
        println!("  {:width$}  {}", p.name, summary(p));
    }
    println!();
    match hid::backend::list_devices() {
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

/// The lines about one vendor: its library and devices, or why it is unavailable.
pub fn describe_probe(v: Vendor, p: &Probe) -> Vec<String> {
    match p {
        Probe::Unavailable(e) => vec![format!("{v}: not available: {e}")],
        Probe::Found {
            source,
            devices,
            note,
        } => {
            let mut lines = vec![format!(
                "{v}: {} {}{}",
                if v.is_service() { "service" } else { "library" },
                source.file.display(),
                if source.from_env {
                    format!(" (from {})", v.env_var())
                } else {
                    String::new()
                }
            )];
            if devices.is_empty() {
                lines.push(format!(
                    "  no device found{}",
                    note.as_ref().map_or(String::new(), |n| format!(": {n}"))
                ));
            }
            for d in devices {
                lines.push(format!(
                    "  {}: {}-DOF in, {}-DOF force feedback, max {} N  (--device {})",
                    d.model,
                    d.dof_sensed,
                    d.dof_actuated,
                    d.max_force_n,
                    v.device_name()
                ));
            }
            lines
        }
    }
}

/// `--test DEVICE`: open, self-test, report. Exits with an error when the device failed.
fn run_self_test(name: &str, args: &DevicesArgs) -> anyhow::Result<()> {
    let config = SelfTestConfig {
        duration_s: args.duration,
        stiffness_n_per_m: args.stiffness,
        ..SelfTestConfig::default()
    };
    let (report, label) = if let Some(v) = Vendor::from_device_name(name) {
        let (mut dev, label) = crate::live::open_vendor(v, args.deadman.0)?;
        println!("{label}: self-test for {} s", config.duration_s);
        if let Some(b) = args.deadman.0 {
            println!("hold button {b} to enable force; the stylus is pulled gently to the centre");
        }
        (self_test::run(&mut dev, &config), label)
    } else if let Some(p) = name.strip_prefix("hid:") {
        let profile = hid::profile::builtin_profile(p)?;
        let settings = profile.safety.clone();
        let mut dev = SafeDevice::new(hid::backend::HidDevice::open(profile)?, settings)?;
        let label = format!("HID device ({p})");
        (self_test::run(&mut dev, &config), label)
    } else if name == "simulated" {
        let sim = SimulatedDevice::new(
            SimConfig::default(),
            haptics_devices::simulated::TargetSource::Fixed(
                haptics_devices::simulated::HandTarget::new(haptics_devices::Pose::from_position(
                    nalgebra::Vector3::new(0.02, 0.0, 0.0),
                )),
            ),
        )?;
        let mut dev = SafeDevice::new(sim, haptics_devices::SafetySettings::default())?;
        let label = format!("{} (simulated)", dev.info().name);
        (self_test::run(&mut dev, &config), label)
    } else {
        bail!("unknown device '{name}': expected openhaptics, forcedimension, haply, hid:PROFILE or simulated");
    };
    print!("{}", describe_report(&label, &report));
    if let Some(e) = &report.fault {
        bail!("{label} failed during the self-test: {e}; force output was switched off");
    }
    Ok(())
}

/// The self-test report for people.
pub fn describe_report(label: &str, r: &SelfTestReport) -> String {
    let ext = r.position_max - r.position_min;
    format!(
        "self-test of {label}\n\
         loop rate        {:.1} Hz over {:.2} s ({} cycles)\n\
         period           mean {:.1} µs, jitter sd {:.1} µs, p99 |error| {:.1} µs\n\
         position range   x {:.1}..{:.1} mm, y {:.1}..{:.1} mm, z {:.1}..{:.1} mm (extent {:.1} x {:.1} x {:.1} mm)\n\
         max force sent   {:.3} N (spring {:.0} N/m)\n\
         start ramp       {}\n\
         errors           {}\n",
        r.rate_hz,
        r.elapsed_s,
        r.cycles,
        r.period_mean_us,
        r.jitter_sd_us,
        r.jitter_p99_us,
        r.position_min.x * 1e3,
        r.position_max.x * 1e3,
        r.position_min.y * 1e3,
        r.position_max.y * 1e3,
        r.position_min.z * 1e3,
        r.position_max.z * 1e3,
        ext.x * 1e3,
        ext.y * 1e3,
        ext.z * 1e3,
        r.max_force_n,
        r.stiffness_n_per_m,
        if r.ramp_completed {
            "completed".to_string()
        } else {
            format!(
                "not completed ({} stalls, {} velocity cuts re-armed it)",
                r.stalls, r.velocity_cuts
            )
        },
        r.errors
    )
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
        let p = hid::profile::builtin_profile("generic-ffb").unwrap();
        assert_eq!(
            summary(&p),
            "6-DOF in, 6-DOF force feedback, max 8 N, position; vendor 1209, products 0001"
        );
        assert!(describe_profile(&p).contains("output report: id 2 (14 bytes, 6 fields)"));
    }
}
