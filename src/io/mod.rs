//! File helpers that every reader and writer of the core shares:
//! - [`write_atomic`]: a file appears whole or not at all (temporary file beside it,
//!   synced, then renamed), so a crash or a full disk never leaves a half-written cache;
//! - [`sweep_stale`]: removes the temporaries that killed writers left behind;
//! - [`fault`]: failures injected on purpose (full disk, read-only directory, failed
//!   rename) into every write, for the fault-injection tests;
//! - [`ByteReader`]: a little-endian cursor over a binary file whose errors name the byte
//!   offset and what was expected there;
//! - [`sha256_hex`] / [`file_sha256`]: content digests for cache manifests and checksums.

mod atomic;
mod bytes;
pub mod fault;
mod hash;

pub(crate) use atomic::parent_dir;
pub use atomic::{sweep_stale, temp_sibling, write_atomic, write_bytes_atomic};
pub use bytes::{ByteReader, Truncated};
pub use hash::{file_sha256, hex, sha256_hex};
