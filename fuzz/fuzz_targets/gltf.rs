//! Fuzzes the `gltf` reader: any input parses or gives an error that names the file.
#![no_main]

use haptics::formats::{check_contract, Format};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let format = Format::from_name("gltf").expect("a format name");
    if let Err(breach) = check_contract(format, data) {
        panic!("{breach}");
    }
});
