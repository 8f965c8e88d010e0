//! A little-endian cursor over the bytes of a binary file (Vega matrixIO and `.cub`,
//! `.dist`, `.pshell`). Every read names what it expected, so a reader's typed error can
//! say "truncated at byte offset N: expected the f64 grid value 12".

/// A read past the end of the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncated {
    /// The byte offset at which the value starts.
    pub offset: u64,
    /// How many bytes the value needs.
    pub needed: usize,
    /// How many bytes were left.
    pub available: usize,
    /// What the value is (from the caller).
    pub what: String,
}

impl std::fmt::Display for Truncated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "expected {} ({} bytes at byte offset {}), but only {} bytes are left",
            self.what, self.needed, self.offset, self.available
        )
    }
}

/// Little-endian reads from a byte slice, tracking the offset.
#[derive(Debug, Clone)]
pub struct ByteReader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> ByteReader<'a> {
    /// A cursor at the start of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        ByteReader { bytes, pos: 0 }
    }

    /// The current byte offset.
    pub fn offset(&self) -> usize {
        self.pos
    }

    /// Bytes left after the cursor.
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// The next `n` bytes.
    pub fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], Truncated> {
        if n > self.remaining() {
            return Err(Truncated {
                offset: self.pos as u64,
                needed: n,
                available: self.remaining(),
                what: what.to_string(),
            });
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], Truncated> {
        let s = self.take(N, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    /// A little-endian `i32`.
    pub fn i32(&mut self, what: &str) -> Result<i32, Truncated> {
        Ok(i32::from_le_bytes(self.array(what)?))
    }

    /// A little-endian `u32`.
    pub fn u32(&mut self, what: &str) -> Result<u32, Truncated> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    /// A little-endian `u64`.
    pub fn u64(&mut self, what: &str) -> Result<u64, Truncated> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    /// A little-endian `f32`.
    pub fn f32(&mut self, what: &str) -> Result<f32, Truncated> {
        Ok(f32::from_le_bytes(self.array(what)?))
    }

    /// A little-endian `f64`.
    pub fn f64(&mut self, what: &str) -> Result<f64, Truncated> {
        Ok(f64::from_le_bytes(self.array(what)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_little_endian_and_names_the_offset_of_a_truncation() {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&(-7i32).to_le_bytes());
        bytes.extend_from_slice(&2.5f64.to_le_bytes());
        bytes.extend_from_slice(&[1, 2]);
        let mut r = ByteReader::new(&bytes);
        assert_eq!(r.i32("count").unwrap(), -7);
        assert_eq!(r.f64("value").unwrap(), 2.5);
        assert_eq!(r.offset(), 12);
        let e = r.u32("the flags").unwrap_err();
        assert_eq!((e.offset, e.needed, e.available), (12, 4, 2));
        assert!(
            e.to_string()
                .contains("the flags (4 bytes at byte offset 12)"),
            "{e}"
        );
        // A failed read does not move the cursor.
        assert_eq!(r.remaining(), 2);
    }
}
