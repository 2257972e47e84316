//! The admin routes' addressing, written once for the Rust Worker and `breakwater/cloudflare`
//! (through wasm): which breaker, and which action, `/admin/breakers/<rest>` names.

use alloc::string::String;
use alloc::vec::Vec;

use crate::name::validate_name;

/// The request's method, as far as the admin routes care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    /// `GET`.
    Get,
    /// `POST`.
    Post,
    /// Anything else.
    Other,
}

/// What `/admin/breakers/<rest>` addresses, given the method and the configured names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// `GET`: the named breaker's state.
    View(String),
    /// `POST .../isolate` or `POST .../reset` on the named breaker.
    Act(String, &'static str),
    /// A configured breaker, or an action on one, with the wrong method.
    WrongMethod,
    /// No configured breaker by that name.
    Unknown,
}

/// Resolves the rest of the path after `/admin/breakers/` (as it came, percent-encoded).
///
/// The whole rest is the name (percent-decoded, so names with `/` can be written as they are or
/// with `%2F`). Only `POST` strips a final `/isolate` or `/reset` (a literal one, not `%2F`
/// -encoded) and acts on the name before it; `GET` never does: `GET .../a/reset` views the
/// breaker `a/reset`. A configured name with the wrong method, or a `GET` of `<name>/isolate`
/// for a configured `<name>`, is [`Target::WrongMethod`].
pub fn target(rest: &str, method: Verb, configured: impl Fn(&str) -> bool) -> Target {
    let known = |encoded: &str| {
        percent_decode(encoded).filter(|n| validate_name(n).is_ok() && configured(n))
    };
    let action = rest.rsplit_once('/').and_then(|(name, op)| match op {
        "isolate" => Some((name, "isolate")),
        "reset" => Some((name, "reset")),
        _ => None,
    });
    if method == Verb::Post {
        if let Some((name, op)) = action {
            if let Some(name) = known(name) {
                return Target::Act(name, op);
            }
        }
        return match known(rest) {
            Some(_) => Target::WrongMethod,
            None => Target::Unknown,
        };
    }
    if let Some(name) = known(rest) {
        return match method {
            Verb::Get => Target::View(name),
            _ => Target::WrongMethod,
        };
    }
    match action.and_then(|(name, _)| known(name)) {
        Some(_) => Target::WrongMethod,
        None => Target::Unknown,
    }
}

/// Decodes `%XX` escapes; `None` if an escape is malformed or the result is not UTF-8.
pub fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hex = core::str::from_utf8(hex).ok()?;
            if !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
                return None;
            }
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::{percent_decode, target, Target, Verb};
    use alloc::string::String;

    fn resolve(rest: &str, method: Verb) -> Target {
        let configured = ["a", "a/reset", "openai:gpt-4.1/chat", "x/isolate"];
        target(rest, method, |n| configured.contains(&n))
    }

    fn sees(name: &str) -> Target {
        Target::View(String::from(name))
    }

    fn act(name: &str, op: &'static str) -> Target {
        Target::Act(String::from(name), op)
    }

    #[test]
    fn the_rest_of_the_path_is_the_name() {
        assert_eq!(resolve("a", Verb::Get), sees("a"));
        assert_eq!(
            resolve("openai:gpt-4.1/chat", Verb::Get),
            sees("openai:gpt-4.1/chat")
        );
        assert_eq!(
            resolve("openai%3Agpt-4.1%2Fchat", Verb::Get),
            sees("openai:gpt-4.1/chat")
        );
        assert_eq!(
            resolve("openai:gpt-4.1/chat/isolate", Verb::Post),
            act("openai:gpt-4.1/chat", "isolate")
        );
        assert_eq!(
            resolve("openai:gpt-4.1%2fchat/reset", Verb::Post),
            act("openai:gpt-4.1/chat", "reset")
        );
    }

    #[test]
    fn only_post_strips_the_action() {
        // GET of `a/reset` views the breaker `a/reset`; POST resets `a`.
        assert_eq!(resolve("a/reset", Verb::Get), sees("a/reset"));
        assert_eq!(resolve("a/reset", Verb::Post), act("a", "reset"));
        // An encoded slash is part of the name: POST on a view is the wrong method.
        assert_eq!(resolve("a%2Freset", Verb::Post), Target::WrongMethod);
        assert_eq!(resolve("a%2Freset", Verb::Get), sees("a/reset"));
        // `x/isolate` is configured, `x` is not: reset it with `.../x/isolate/reset`.
        assert_eq!(resolve("x/isolate", Verb::Get), sees("x/isolate"));
        assert_eq!(resolve("x/isolate", Verb::Post), Target::WrongMethod);
        assert_eq!(
            resolve("x/isolate/reset", Verb::Post),
            act("x/isolate", "reset")
        );
    }

    #[test]
    fn wrong_methods_and_unknown_names() {
        assert_eq!(resolve("a", Verb::Other), Target::WrongMethod);
        assert_eq!(resolve("a", Verb::Post), Target::WrongMethod);
        assert_eq!(resolve("a/isolate", Verb::Get), Target::WrongMethod);
        assert_eq!(resolve("a/explode", Verb::Post), Target::Unknown);
        assert_eq!(resolve("b", Verb::Get), Target::Unknown);
        assert_eq!(resolve("b/reset", Verb::Post), Target::Unknown);
        assert_eq!(resolve("", Verb::Get), Target::Unknown);
        assert_eq!(resolve("/reset", Verb::Post), Target::Unknown);
        assert_eq!(resolve("a/", Verb::Get), Target::Unknown);
        assert_eq!(resolve("bad%20name", Verb::Get), Target::Unknown);
        assert_eq!(resolve("a%ZZ", Verb::Get), Target::Unknown);
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("a%2Fb%3ac").as_deref(), Some("a/b:c"));
        assert_eq!(percent_decode("plain").as_deref(), Some("plain"));
        assert_eq!(percent_decode("a+b").as_deref(), Some("a+b"));
        assert_eq!(percent_decode("%C3%A9").as_deref(), Some("é"));
        for bad in ["%", "%2", "a%G0", "%%41", "%FF", "%2F%"] {
            assert_eq!(percent_decode(bad), None, "{bad}");
        }
    }
}
