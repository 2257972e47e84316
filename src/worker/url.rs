//! Where a breaker's Durable Object is asked: the routes forward to it ([`routes`](super::routes))
//! and the lease client asks it ([`client`](super::client)), both by this URL.

use alloc::format;
use alloc::string::{String, ToString};

/// The URL of operation `op` on the object of breaker `name`: the name travels with every
/// request (`?breaker=`), for objects whose id does not carry it (see `object.rs`).
pub fn object_url(op: &str, name: &str) -> String {
    match worker::Url::parse_with_params(&format!("https://breaker/{op}"), [("breaker", name)]) {
        Ok(u) => u.to_string(),
        Err(_) => format!("https://breaker/{op}"),
    }
}
