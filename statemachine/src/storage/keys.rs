//! Ordered key layouts. Integers are big-endian so byte order is numeric order; strings are
//! length-prefixed (u32) so a composite key can never be read two ways, whatever bytes a name holds.

/// Builder for composite keys.
#[derive(Default)]
pub struct Key(Vec<u8>);

impl Key {
    pub fn new() -> Self {
        Key(Vec::with_capacity(32))
    }
    pub fn u8(mut self, v: u8) -> Self {
        self.0.push(v);
        self
    }
    pub fn u32(mut self, v: u32) -> Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn u64(mut self, v: u64) -> Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn str(mut self, s: &str) -> Self {
        let len = u32::try_from(s.len()).unwrap_or(u32::MAX);
        self.0.extend_from_slice(&len.to_be_bytes());
        self.0.extend_from_slice(s.as_bytes());
        self
    }
    pub fn bytes(mut self, b: &[u8]) -> Self {
        self.0.extend_from_slice(b);
        self
    }
    pub fn build(self) -> Vec<u8> {
        self.0
    }
}

/// The smallest key greater than every key starting with `prefix` (`None`: no such key).
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// Read a big-endian u64 at `at`, if there are enough bytes.
pub fn read_u64(bytes: &[u8], at: usize) -> Option<u64> {
    let slice = bytes.get(at..at.checked_add(8)?)?;
    let mut buf = [0u8; 8];
    buf.copy_from_slice(slice);
    Some(u64::from_be_bytes(buf))
}

/// Read a big-endian u32 at `at`, if there are enough bytes.
pub fn read_u32(bytes: &[u8], at: usize) -> Option<u32> {
    let slice = bytes.get(at..at.checked_add(4)?)?;
    let mut buf = [0u8; 4];
    buf.copy_from_slice(slice);
    Some(u32::from_be_bytes(buf))
}

/// Read a length-prefixed (u32) UTF-8 string at `*at`, advancing `*at` past it.
pub fn read_str(bytes: &[u8], at: &mut usize) -> Option<String> {
    let len = usize::try_from(read_u32(bytes, *at)?).ok()?;
    let start = at.checked_add(4)?;
    let end = start.checked_add(len)?;
    let s = std::str::from_utf8(bytes.get(start..end)?).ok()?;
    *at = end;
    Some(s.to_string())
}

/// The last eight bytes as a big-endian u64 (most index keys end with a row id).
pub fn trailing_u64(bytes: &[u8]) -> Option<u64> {
    read_u64(bytes, bytes.len().checked_sub(8)?)
}

/// Fixed keys of the `Meta` table.
pub mod meta {
    pub const STATE: &[u8] = b"state";
    pub const LAST_APPLIED: &[u8] = b"last_applied";
    /// The cluster's log format (docs/SPEC.md §2.8); absent: format 1.
    pub const LOG_FORMAT: &[u8] = b"log_format";
    /// Prefix for opaque entries owned by the Raft adapter (membership, last log id).
    pub const EXTERNAL_PREFIX: &[u8] = b"ext/";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_end_is_the_successor() {
        assert_eq!(prefix_end(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_end(&[1, 0xff]), Some(vec![2]));
        assert_eq!(prefix_end(&[0xff, 0xff]), None);
    }

    #[test]
    fn strings_are_unambiguous() {
        let a = Key::new().str("ab").str("c").build();
        let b = Key::new().str("a").str("bc").build();
        assert_ne!(a, b);
    }

    #[test]
    fn trailing_u64_reads_the_tail() {
        let k = Key::new().str("lane").u64(7).u64(42).build();
        assert_eq!(trailing_u64(&k), Some(42));
        assert_eq!(trailing_u64(&[1, 2]), None);
    }

    #[test]
    fn keys_read_back() {
        let k = Key::new().u64(9).build();
        assert_eq!(read_u64(&k, 0), Some(9));
    }
}
