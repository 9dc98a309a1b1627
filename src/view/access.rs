//! Who may read and drive the dashboard (`wiggum serve`): a request is answered only when its
//! `Host` is the address `serve` is bound to (a page of another site whose name was rebound to
//! this address names its own host: 421), its `Origin`, when it sends one, is that address (403),
//! and it carries the token `serve` printed: in the cookie the printed URL sets, or in the
//! `x-wiggum-token` header (401 otherwise). Pure.

use std::net::{IpAddr, SocketAddr};

/// What a request says about itself, as far as access goes.
#[derive(Debug, Clone, Copy, Default)]
pub struct Asked<'a> {
    /// `Host`.
    pub host: Option<&'a str>,
    /// `Origin`.
    pub origin: Option<&'a str>,
    /// `Cookie` (every cookie, as sent).
    pub cookie: Option<&'a str>,
    /// `x-wiggum-token`.
    pub header_token: Option<&'a str>,
    /// The URL's query (`token=…` on the URL `serve` printed).
    pub query: Option<&'a str>,
}

/// The answer to a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Serve it.
    Allow,
    /// The URL carried the right token: set the cookie and send the browser to the same path
    /// without it.
    SetCookie,
    /// `Host` is not the bound address (421 Misdirected Request).
    ForeignHost,
    /// `Origin` is another site's (403).
    ForeignOrigin,
    /// No token, or a wrong one (401).
    NoToken,
}

/// The decision for `asked`, at `bound`, whose token is `token`.
#[must_use]
pub fn admit(asked: &Asked<'_>, bound: SocketAddr, token: &str) -> Verdict {
    let Some(host) = asked.host.filter(|h| host_allowed(h, bound)) else {
        return Verdict::ForeignHost;
    };
    if asked.origin.is_some_and(|o| o != format!("http://{host}")) {
        return Verdict::ForeignOrigin;
    }
    let given = |t: Option<&str>| t.is_some_and(|t| same(t, token));
    if given(asked.header_token) || given(cookie_value(asked.cookie, &cookie_name(bound))) {
        Verdict::Allow
    } else if given(query_token(asked.query)) {
        Verdict::SetCookie
    } else {
        Verdict::NoToken
    }
}

/// The cookie's name: per port, since a browser sends a host's cookies to all its ports.
#[must_use]
pub fn cookie_name(bound: SocketAddr) -> String {
    format!("wiggum_{}", bound.port())
}

/// The `Set-Cookie` value that keeps `token` for this dashboard: never readable by a script,
/// never sent by another site's page.
#[must_use]
pub fn set_cookie(bound: SocketAddr, token: &str) -> String {
    format!(
        "{}={token}; HttpOnly; SameSite=Strict; Path=/",
        cookie_name(bound)
    )
}

/// Whether `host` (a `Host` header) names the bound address: the address itself, `localhost`
/// with its port when bound to loopback, any address literal with its port when bound to all.
/// A name (which a page's site could rebind to this address) is never enough.
fn host_allowed(host: &str, bound: SocketAddr) -> bool {
    let Some((name, port)) = split_host(host) else {
        return false;
    };
    if port != bound.port() {
        return false;
    }
    match name
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
    {
        Ok(ip) => ip == bound.ip() || bound.ip().is_unspecified(),
        Err(_) => name.eq_ignore_ascii_case("localhost") && bound.ip().is_loopback(),
    }
}

/// `name:port` (`[v6]:port`), the port 80 when left out.
fn split_host(host: &str) -> Option<(&str, u16)> {
    let host = host.trim();
    let (name, port) = match host.rsplit_once(':') {
        Some((n, p)) if !p.contains(']') && (!n.contains(':') || n.ends_with(']')) => {
            (n, p.parse().ok()?)
        }
        _ => (host, 80),
    };
    (!name.is_empty()).then_some((name, port))
}

fn cookie_value<'a>(cookies: Option<&'a str>, name: &str) -> Option<&'a str> {
    cookies?
        .split(';')
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

fn query_token(query: Option<&str>) -> Option<&str> {
    query?
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == "token")
        .map(|(_, v)| v)
}

/// Equal, in a time that does not depend on where they differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && !b.is_empty()
        && a.bytes().zip(b.bytes()).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = "0123456789abcdef";

    fn asked<'a>(host: &'a str, origin: Option<&'a str>, cookie: Option<&'a str>) -> Asked<'a> {
        Asked {
            host: Some(host),
            origin,
            cookie,
            ..Asked::default()
        }
    }

    #[test]
    fn only_the_bound_address_with_the_token_is_served() {
        let lo: SocketAddr = "127.0.0.1:8765".parse().unwrap();
        let all: SocketAddr = "0.0.0.0:8765".parse().unwrap();
        let good = Some("wiggum_8765=0123456789abcdef");
        let cases = [
            (asked("127.0.0.1:8765", None, good), lo, Verdict::Allow),
            (asked("localhost:8765", None, good), lo, Verdict::Allow),
            (
                asked("127.0.0.1:8765", Some("http://127.0.0.1:8765"), good),
                lo,
                Verdict::Allow,
            ),
            // Another cookie beside ours, and ours among them.
            (
                asked(
                    "127.0.0.1:8765",
                    None,
                    Some("a=b; wiggum_8765=0123456789abcdef"),
                ),
                lo,
                Verdict::Allow,
            ),
            // A rebound name, another port, no host at all.
            (
                asked("evil.example:8765", None, good),
                lo,
                Verdict::ForeignHost,
            ),
            (
                asked("127.0.0.1:9999", None, good),
                lo,
                Verdict::ForeignHost,
            ),
            (asked("127.0.0.1", None, good), lo, Verdict::ForeignHost),
            (
                Asked {
                    cookie: good,
                    ..Asked::default()
                },
                lo,
                Verdict::ForeignHost,
            ),
            // Bound to all addresses: any address literal, never a name.
            (asked("192.168.1.5:8765", None, good), all, Verdict::Allow),
            (asked("[::1]:8765", None, good), all, Verdict::Allow),
            (
                asked("localhost:8765", None, good),
                all,
                Verdict::ForeignHost,
            ),
            // Another site's page.
            (
                asked("127.0.0.1:8765", Some("http://evil.example"), good),
                lo,
                Verdict::ForeignOrigin,
            ),
            (
                asked("127.0.0.1:8765", Some("null"), good),
                lo,
                Verdict::ForeignOrigin,
            ),
            // No token, a wrong one, another port's cookie.
            (asked("127.0.0.1:8765", None, None), lo, Verdict::NoToken),
            (
                asked("127.0.0.1:8765", None, Some("wiggum_8765=guessed")),
                lo,
                Verdict::NoToken,
            ),
            (
                asked("127.0.0.1:8765", None, Some("wiggum_9999=0123456789abcdef")),
                lo,
                Verdict::NoToken,
            ),
        ];
        for (i, (a, bound, want)) in cases.iter().enumerate() {
            assert_eq!(admit(a, *bound, T), *want, "case {i}: {a:?} at {bound}");
        }
    }

    #[test]
    fn the_printed_url_sets_the_cookie_and_a_header_does_as_well() {
        let lo: SocketAddr = "127.0.0.1:8765".parse().unwrap();
        let with = |query, header_token| Asked {
            host: Some("127.0.0.1:8765"),
            query,
            header_token,
            ..Asked::default()
        };
        assert_eq!(
            admit(&with(Some("token=0123456789abcdef"), None), lo, T),
            Verdict::SetCookie
        );
        assert_eq!(
            admit(&with(Some("token=wrong"), None), lo, T),
            Verdict::NoToken
        );
        assert_eq!(admit(&with(None, Some(T)), lo, T), Verdict::Allow);
        assert_eq!(
            set_cookie(lo, T),
            "wiggum_8765=0123456789abcdef; HttpOnly; SameSite=Strict; Path=/"
        );
    }
}
