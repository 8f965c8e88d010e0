//! Vendor devices: 3D Systems OpenHaptics (HDAPI, `libHD.so`) and Force Dimension (DHD,
//! `libdhd.so`), loaded at run time, and Haply's Inverse3 through Haply's local Inverse
//! Service ([`haply`]: a WebSocket connection, no library).
//!
//! Why at run time: the SDKs are proprietary, installed by the user, and absent from CI
//! and most build machines. The renderer is built without them and finds them when asked
//! for (`--device openhaptics` / `--device forcedimension`), with `libloading`. Only the
//! few types, constants and functions used are declared, with their values from the
//! public headers (cited beside each), so no vendor header is needed either.
//!
//! Library search ([`find_library`]): the environment variable
//! (`HAPTICS_OPENHAPTICS_LIB` / `HAPTICS_DHD_LIB`) naming the library file, else the
//! default soname (`libHD.so` / `libdhd.so`) through the normal dynamic-loader search
//! (`LD_LIBRARY_PATH`, the loader cache, the system directories). A missing library is a
//! [`VendorError::LibraryNotFound`] naming the library and where it looked.
//!
//! Failures while running are [`VendorFault`]s, returned as [`crate::DeviceError::Vendor`]
//! without allocating (they surface inside the haptic cycle). They are fatal: the
//! [`crate::safety::SafeDevice`] layer zeroes the output and stops trying, and the application ends
//! the session with the fault's message, naming the device and the error.
//!
//! Modules: [`openhaptics`], [`dhd`], [`haply`], [`handoff`] (the lock-free exchange with
//! the vendor's servo or I/O thread), [`specs`] (published limits per model), [`fakes`]
//! (builds the stand-in libraries used by the tests) and [`fake_inverse`] (a stand-in
//! Inverse Service).

pub mod dhd;
pub mod fake_inverse;
pub mod fakes;
pub mod handoff;
pub mod haply;
pub mod openhaptics;
pub mod specs;

use std::fmt;
use std::path::PathBuf;

/// A vendor SDK.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Vendor {
    /// 3D Systems OpenHaptics (HDAPI): Touch, Touch X, PHANTOM Premium.
    OpenHaptics,
    /// Force Dimension DHD: omega, sigma, delta, lambda (and the Novint Falcon it
    /// supports).
    ForceDimension,
    /// Haply's Inverse Service: Inverse3, Inverse3x, Minverse, with a Verse Grip.
    Haply,
}

impl Vendor {
    /// Every vendor, in the order `haptics devices` lists them.
    pub const ALL: [Vendor; 3] = [Vendor::OpenHaptics, Vendor::ForceDimension, Vendor::Haply];

    /// The `--device` name (`openhaptics`, `forcedimension`, `haply`).
    pub fn device_name(self) -> &'static str {
        match self {
            Vendor::OpenHaptics => "openhaptics",
            Vendor::ForceDimension => "forcedimension",
            Vendor::Haply => "haply",
        }
    }

    /// The SDK's name for people.
    pub fn sdk(self) -> &'static str {
        match self {
            Vendor::OpenHaptics => "OpenHaptics (HDAPI)",
            Vendor::ForceDimension => "Force Dimension (DHD)",
            Vendor::Haply => "Haply Inverse Service",
        }
    }

    /// The environment variable that names the library file (the service's address for
    /// Haply).
    pub fn env_var(self) -> &'static str {
        match self {
            Vendor::OpenHaptics => "HAPTICS_OPENHAPTICS_LIB",
            Vendor::ForceDimension => "HAPTICS_DHD_LIB",
            Vendor::Haply => "HAPTICS_HAPLY_SERVICE",
        }
    }

    /// Where to look when the variable is unset: the soname, through the dynamic loader,
    /// or the service's default address.
    pub fn default_location(self) -> &'static str {
        match self {
            Vendor::OpenHaptics => "libHD.so",
            Vendor::ForceDimension => "libdhd.so",
            Vendor::Haply => haply::DEFAULT_ADDRESS,
        }
    }

    /// True for a vendor reached through a local service rather than a library.
    pub fn is_service(self) -> bool {
        self == Vendor::Haply
    }

    /// The vendor for a `--device` name.
    pub fn from_device_name(name: &str) -> Option<Vendor> {
        Vendor::ALL.into_iter().find(|v| v.device_name() == name)
    }
}

impl fmt::Display for Vendor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.sdk())
    }
}

/// A fault reported by a vendor library while running (no allocation: it is built inside
/// the haptic cycle). [`fmt::Display`] names the vendor, the code and its meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VendorFault {
    pub vendor: Vendor,
    /// The SDK's error code (HDAPI `HDerror`, DHD `dhdErrorGetLast`), or
    /// [`VendorFault::SERVO_STOPPED`].
    pub code: i32,
    /// HDAPI's internal (device-generated) code; 0 for DHD.
    pub internal: i32,
}

impl VendorFault {
    /// Our code for "the vendor's servo loop stopped calling back" (no SDK uses negative
    /// codes).
    pub const SERVO_STOPPED: i32 = -1;

    /// The symbolic name of the code, from the public headers.
    pub fn name(&self) -> &'static str {
        if self.code == Self::SERVO_STOPPED {
            return "servo loop stopped";
        }
        match self.vendor {
            Vendor::OpenHaptics => openhaptics::error_name(self.code as u32),
            Vendor::ForceDimension => dhd::error_name(self.code),
            Vendor::Haply => haply::fault_name(self.code),
        }
    }
}

impl fmt::Display for VendorFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.vendor, self.code) {
            (Vendor::Haply, Self::SERVO_STOPPED) => write!(
                f,
                "{}: the service stopped sending state (none for {} ms)",
                self.vendor,
                haply::SERVO_SILENCE.as_millis()
            ),
            (_, Self::SERVO_STOPPED) => write!(
                f,
                "{}: the servo loop stopped (no frame for {} ms)",
                self.vendor,
                openhaptics::SERVO_SILENCE.as_millis()
            ),
            (Vendor::OpenHaptics, c) => write!(
                f,
                "{}: error 0x{:04x} {} (internal code {})",
                self.vendor,
                c,
                self.name(),
                self.internal
            ),
            (Vendor::ForceDimension, c) => {
                write!(f, "{}: error {} {}", self.vendor, c, self.name())
            }
            (Vendor::Haply, _) => write!(f, "{}: {}", self.vendor, self.name()),
        }
    }
}

/// Why a vendor device could not be opened.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VendorError {
    /// The library could not be loaded.
    #[error("{vendor} library not found: {looked} ({detail}). Install the vendor's SDK or driver, or set {var} to the library file", var = vendor.env_var())]
    LibraryNotFound {
        vendor: Vendor,
        /// Where it looked, in words.
        looked: String,
        /// The loader's message.
        detail: String,
    },
    /// The library lacks a function this layer needs (an old or foreign library).
    #[error("{vendor} library {library} has no symbol {symbol}: is it the vendor's library, and recent enough?", library = .library.display())]
    MissingSymbol {
        vendor: Vendor,
        library: PathBuf,
        symbol: &'static str,
    },
    /// The library loaded but found no device, or the device refused to start.
    #[error("{vendor}: {detail}")]
    Device { vendor: Vendor, detail: String },
    /// The vendor's local service did not accept a connection.
    #[error("{vendor} not reachable at {address} ({detail}). Start the Haply Hub or the Inverse Service, or set {var} to its address", var = vendor.env_var())]
    ServiceUnreachable {
        vendor: Vendor,
        /// The address tried.
        address: String,
        /// The connection's error.
        detail: String,
    },
}

/// Where a library was found (the path or soname given to the loader) or a service is
/// reached (its address), and how it was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibrarySource {
    /// Passed to `dlopen`.
    pub file: PathBuf,
    /// True when it came from the environment variable.
    pub from_env: bool,
}

/// Where to look for `vendor`'s library (or service): the environment variable's value if
/// set (and not empty), else [`Vendor::default_location`].
pub fn library_source(vendor: Vendor) -> LibrarySource {
    match std::env::var_os(vendor.env_var()) {
        Some(p) if !p.is_empty() => LibrarySource {
            file: PathBuf::from(p),
            from_env: true,
        },
        _ => LibrarySource {
            file: PathBuf::from(vendor.default_location()),
            from_env: false,
        },
    }
}

/// Loads `vendor`'s library (see the module docs for the search order).
pub fn find_library(vendor: Vendor) -> Result<(libloading::Library, LibrarySource), VendorError> {
    let source = library_source(vendor);
    // SAFETY: loading runs the library's initializers. The vendor libraries (and the
    // fakes) have no initializers with preconditions on the caller.
    match unsafe { libloading::Library::new(&source.file) } {
        Ok(lib) => Ok((lib, source)),
        Err(e) => {
            let looked = if source.from_env {
                format!("{}={}", vendor.env_var(), source.file.display())
            } else {
                format!(
                    "{} is unset and the dynamic loader found no {} (LD_LIBRARY_PATH={}, the loader cache, /lib, /usr/lib)",
                    vendor.env_var(),
                    vendor.default_location(),
                    std::env::var("LD_LIBRARY_PATH").unwrap_or_else(|_| "unset".into())
                )
            };
            Err(VendorError::LibraryNotFound {
                vendor,
                looked,
                detail: e.to_string(),
            })
        }
    }
}

/// Copies a function pointer of type `T` out of `lib` (the caller keeps `lib` alive for
/// as long as the pointer is used).
///
/// # Safety
/// `T` must be the function's true signature.
unsafe fn symbol<T: Copy>(
    lib: &libloading::Library,
    vendor: Vendor,
    source: &LibrarySource,
    name: &'static str,
) -> Result<T, VendorError> {
    let mut bytes = Vec::with_capacity(name.len() + 1);
    bytes.extend_from_slice(name.as_bytes());
    bytes.push(0);
    lib.get::<T>(&bytes)
        .map(|s| *s)
        .map_err(|_| VendorError::MissingSymbol {
            vendor,
            library: source.file.clone(),
            symbol: name,
        })
}

/// A vendor device found by [`probe`].
#[derive(Debug, Clone, PartialEq)]
pub struct ProbedDevice {
    /// The model name the library reports.
    pub model: String,
    /// Input and output degrees of freedom.
    pub dof_sensed: u8,
    pub dof_actuated: u8,
    /// Nominal maximum force, N.
    pub max_force_n: f64,
}

/// What [`probe`] found for one vendor.
#[derive(Debug, Clone, PartialEq)]
pub enum Probe {
    /// The library loaded; these devices answered (possibly none, with why).
    Found {
        source: LibrarySource,
        devices: Vec<ProbedDevice>,
        /// Why the list is empty, when the library said.
        note: Option<String>,
    },
    /// The library could not be loaded or used.
    Unavailable(VendorError),
}

/// Loads `vendor`'s library and lists its devices: opens each briefly (forces off) to read
/// its model and limits, then closes it.
pub fn probe(vendor: Vendor) -> Probe {
    match vendor {
        Vendor::OpenHaptics => openhaptics::probe(),
        Vendor::ForceDimension => dhd::probe(),
        Vendor::Haply => haply::probe(),
    }
}

/// `v` scaled down to magnitude `max` if longer (direction kept); zero for a `max` that is
/// not a positive number. The last clamp before a vendor's output.
pub(crate) fn clamp3(v: [f64; 3], max: f64) -> [f64; 3] {
    let n = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    if max.is_nan() || max <= 0.0 {
        [0.0; 3]
    } else if n > max {
        let s = max / n;
        [v[0] * s, v[1] * s, v[2] * s]
    } else {
        v
    }
}

/// Reads a C string returned by a vendor library (null reads as empty).
///
/// # Safety
/// `p` must be null or point to a NUL-terminated string.
unsafe fn c_string(p: *const std::ffi::c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for v in Vendor::ALL {
            assert_eq!(Vendor::from_device_name(v.device_name()), Some(v));
        }
        assert_eq!(Vendor::from_device_name("phantom"), None);
    }

    #[test]
    fn faults_read_well() {
        let f = VendorFault {
            vendor: Vendor::OpenHaptics,
            code: 0x0302,
            internal: 7,
        };
        assert_eq!(
            f.to_string(),
            "OpenHaptics (HDAPI): error 0x0302 HD_COMM_ERROR (internal code 7)"
        );
        let f = VendorFault {
            vendor: Vendor::ForceDimension,
            code: 2,
            internal: 0,
        };
        assert_eq!(
            f.to_string(),
            "Force Dimension (DHD): error 2 DHD_ERROR_COM"
        );
        let f = VendorFault {
            vendor: Vendor::ForceDimension,
            code: VendorFault::SERVO_STOPPED,
            internal: 0,
        };
        assert!(f.to_string().contains("servo loop stopped"));
    }

    #[test]
    fn a_missing_library_names_itself_and_where_it_looked() {
        // A path that cannot exist: the error names the variable's value.
        let e = match unsafe { libloading::Library::new("/nonexistent/haptics-test/libHD.so") } {
            Ok(_) => panic!("loaded a nonexistent library"),
            Err(e) => e.to_string(),
        };
        let err = VendorError::LibraryNotFound {
            vendor: Vendor::OpenHaptics,
            looked: "HAPTICS_OPENHAPTICS_LIB=/nonexistent/haptics-test/libHD.so".into(),
            detail: e,
        };
        let msg = err.to_string();
        assert!(
            msg.starts_with("OpenHaptics (HDAPI) library not found"),
            "{msg}"
        );
        assert!(msg.contains("/nonexistent/haptics-test/libHD.so"), "{msg}");
        assert!(msg.contains("set HAPTICS_OPENHAPTICS_LIB"), "{msg}");
    }
}
