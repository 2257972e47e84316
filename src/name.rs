//! Breaker names: the one rule every host checks a name against (the Rust host, the shared
//! breaker's `BREAKERS` and admin paths, the Worker). Names become Durable Object names and
//! store keys.

use alloc::string::{String, ToString};
use core::fmt;

/// The longest breaker name, in bytes.
pub const MAX_NAME_LEN: usize = 128;

/// Why a breaker name was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidName {
    /// The name as given (cut to 160 bytes).
    pub name: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl fmt::Display for InvalidName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid breaker name {:?}: {}", self.name, self.reason)
    }
}

impl core::error::Error for InvalidName {}

/// Checks a breaker name: 1 to 128 bytes of ASCII letters, digits and `- _ . : /`. Names become
/// Durable Object names and store keys, so they must come from configuration, never from request
/// input; this check keeps a mistake from creating objects at will.
pub fn validate_name(name: &str) -> Result<(), InvalidName> {
    let fail = |reason| {
        let mut cut = 160.min(name.len());
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        Err(InvalidName {
            name: name.get(..cut).unwrap_or_default().to_string(),
            reason,
        })
    };
    if name.is_empty() {
        return fail("empty");
    }
    if name.len() > MAX_NAME_LEN {
        return fail("longer than 128 bytes");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':' | b'/'))
    {
        return fail("only ASCII letters, digits and - _ . : / are allowed");
    }
    Ok(())
}
