//! Input checks shared by commands. A command that fails one is rejected and changes nothing;
//! the API runs the same checks first so users get the error before anything is proposed.

use crate::wire::rejection::Rejection;

/// Longest name (channel, destination, handler, owner, lane, namespace, org...).
pub const MAX_NAME_LEN: usize = 200;
/// Longest lease a claim may ask for: a day.
pub const MAX_TTL_MS: u64 = 24 * 60 * 60 * 1000;
/// Most rows one ClaimReady may return.
pub const MAX_CLAIM_LIMIT: u32 = 1000;

pub fn name(field: &str, value: &str) -> Result<(), Rejection> {
    if value.is_empty() {
        return Err(Rejection::invalid(field, "must not be empty"));
    }
    if value.len() > MAX_NAME_LEN {
        return Err(Rejection::invalid(
            field,
            format!("longer than {MAX_NAME_LEN} bytes"),
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(Rejection::invalid(
            field,
            "must not contain control characters",
        ));
    }
    Ok(())
}

pub fn opt_name(field: &str, value: Option<&str>) -> Result<(), Rejection> {
    value.map_or(Ok(()), |v| name(field, v))
}

pub fn ttl(field: &str, ttl_ms: u64) -> Result<(), Rejection> {
    if ttl_ms == 0 || ttl_ms > MAX_TTL_MS {
        return Err(Rejection::invalid(
            field,
            format!("must be between 1 and {MAX_TTL_MS} ms"),
        ));
    }
    Ok(())
}
