//! A no_std library using breakwater under its library name, as every example does.
#![no_std]

use breakwater::{Admission, Breaker, BreakerConfig, ConfigError, Timestamp};

/// One admission from a fresh breaker with the default settings.
pub fn admit(now_ms: u64) -> Result<Admission, ConfigError> {
    let mut breaker = Breaker::new(BreakerConfig::new())?;
    Ok(breaker.acquire(Timestamp(now_ms)))
}
