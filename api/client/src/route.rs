//! What a route is to the client: a method and a path template (`/v1/rows/{id}/{action}`), and
//! the typed form each method calls, which knows how many path segments the template takes, so
//! a method that passes the wrong number does not compile.

use hyper::Method;
use raftlane_contract::path::encode_segment;
use std::fmt;

/// The HTTP methods the API uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verb {
    Get,
    Post,
    Put,
    Delete,
}

impl Verb {
    /// Lower case, as the server's route table and the OpenAPI document spell it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::Post => "post",
            Verb::Put => "put",
            Verb::Delete => "delete",
        }
    }

    pub fn method(self) -> Method {
        match self {
            Verb::Get => Method::GET,
            Verb::Post => Method::POST,
            Verb::Put => Method::PUT,
            Verb::Delete => Method::DELETE,
        }
    }
}

/// A route as the server's table names it: method and path template.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Route {
    pub method: Verb,
    pub path: &'static str,
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.method.as_str(), self.path)
    }
}

/// A [`Route`] whose template takes `N` path segments: what a client method calls. Built only
/// in a `const` (the route table), where a template with another number of `{...}` segments
/// stops the build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Endpoint<const N: usize> {
    pub route: Route,
}

impl<const N: usize> Endpoint<N> {
    /// Panics (at compile time, in a `const`) unless `path` has exactly `N` `{...}` segments.
    pub const fn new(method: Verb, path: &'static str) -> Self {
        assert!(
            placeholders(path) == N,
            "a route's segment count differs from its template"
        );
        Endpoint {
            route: Route { method, path },
        }
    }

    /// The path with each `{...}` replaced, in order, by a segment, percent-encoded so that a
    /// name with `/`, `?`, `#`, `%` or a space stays one segment.
    pub fn path(&self, segments: [&str; N]) -> String {
        let template = self.route.path;
        let mut out = String::with_capacity(template.len() + 16);
        let mut segments = segments.iter();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let after = &rest[open..];
            let close = after.find('}').map_or(after.len(), |c| c + 1);
            if let Some(s) = segments.next() {
                out.push_str(&encode_segment(s));
            }
            rest = &after[close..];
        }
        out.push_str(rest);
        out
    }
}

/// How many `{...}` segments a template has.
const fn placeholders(path: &str) -> usize {
    let bytes = path.as_bytes();
    let mut i = 0;
    let mut n = 0;
    while i < bytes.len() {
        if bytes[i] == b'{' {
            n += 1;
        }
        i += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_fill_the_template_in_order_encoded() {
        const ROW_ACTION: Endpoint<2> = Endpoint::new(Verb::Post, "/v1/rows/{id}/{action}");
        assert_eq!(ROW_ACTION.path(["7", "done"]), "/v1/rows/7/done");
        const LANE: Endpoint<2> = Endpoint::new(Verb::Get, "/v1/lanes/{stage}/{name}");
        assert_eq!(
            LANE.path(["outbound", "a/b c"]),
            "/v1/lanes/outbound/a%2Fb%20c"
        );
        const PLAIN: Endpoint<0> = Endpoint::new(Verb::Get, "/v1/stats");
        assert_eq!(PLAIN.path([]), "/v1/stats");
        assert_eq!(PLAIN.route.to_string(), "get /v1/stats");
    }
}
