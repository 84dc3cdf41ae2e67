//! Names inside URL paths.

/// `s` as one path segment (or query value): every byte but RFC 3986's unreserved characters
/// percent-encoded, so a channel, stage, lane or action name with `/`, `?`, `#`, `%` or a space
/// reaches the server as one segment, byte for byte, and cannot be decoded into another name.
pub fn encode_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_segments_are_percent_encoded() {
        assert_eq!(encode_segment("lab-1.x_y~z"), "lab-1.x_y~z");
        assert_eq!(encode_segment("a/b"), "a%2Fb");
        assert_eq!(encode_segment("a b?c#d%e"), "a%20b%3Fc%23d%25e");
        assert_eq!(encode_segment(".."), "..");
        assert_eq!(encode_segment("é"), "%C3%A9");
        assert_eq!(encode_segment(""), "");
    }
}
