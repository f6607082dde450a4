//! Who may call the server: the bearer token (when one is set), the
//! cross-site checks on every request that changes something, and the
//! loopback Host check that keeps DNS rebinding out of an unprotected server.
//!
//! It owns the token's reading and checking too (the `Authorization`
//! header, the dashboard's cookie, the `/?token=…` login link, the
//! constant-time compare), which the dashboard's login uses: the dashboard
//! depends on the guard, never the other way round.

use axum::extract::{Query, Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use subtle::ConstantTimeEq;

use crate::error::ApiError;
use crate::AppState;

/// The cookie the dashboard keeps the token in once `/?token=…` opened it
/// (HttpOnly, SameSite=Strict: never sent by another site's page).
pub(crate) const TOKEN_COOKIE: &str = "alk_token";

/// Refuse what this request may not do: a missing or wrong token (401); a
/// change requested by another site's page (403); a loopback server
/// reached under a foreign host name (421, DNS rebinding).
pub(crate) async fn guard(State(app): State<AppState>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    if app.token.is_none() && !loopback_host(headers) {
        return ApiError::new(
            StatusCode::MISDIRECTED_REQUEST,
            "forbidden",
            Some("host"),
            "this server has no token and answers only to localhost, 127.0.0.1 or [::1]",
        )
        .into_response();
    }
    if let Some(token) = &app.token {
        let by_link = || login_link(&req).is_some_and(|t| same(&t, token.as_ref()));
        if !presented(headers).is_some_and(|t| same(t, token.as_ref())) && !by_link() {
            return ApiError::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                Some("authorization"),
                "send the server's token: `Authorization: Bearer <token>` (or open /?token=<token> in a browser)",
            )
            .into_response();
        }
    }
    if changes_something(req.method()) && cross_site(headers) {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            Some("origin"),
            "a change requested from another site's page is refused",
        )
        .into_response();
    }
    next.run(req).await
}

/// Constant-time equality, so the time a wrong token takes to refuse says
/// nothing about how much of it was right.
pub(crate) fn same(given: &str, token: &str) -> bool {
    given.as_bytes().ct_eq(token.as_bytes()).into()
}

/// The token a request carries: the bearer header, else the dashboard's
/// cookie.
fn presented(headers: &HeaderMap) -> Option<&str> {
    if let Some(v) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    {
        return v.strip_prefix("Bearer ").map(str::trim);
    }
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == TOKEN_COOKIE)
        .map(|(_, v)| v)
}

/// The token of the dashboard's login link, `GET /?token=…`: the one
/// request whose URL may carry it (`/` keeps it in the cookie and redirects).
fn login_link(req: &Request) -> Option<String> {
    if req.method() != Method::GET || req.uri().path() != "/" {
        return None;
    }
    query_token(req.uri())
}

#[derive(Deserialize)]
struct Login {
    token: Option<String>,
}

/// The `token` query parameter of `uri`, percent-decoded.
pub(crate) fn query_token(uri: &Uri) -> Option<String> {
    Query::<Login>::try_from_uri(uri).ok()?.0.token
}

fn changes_something(m: &Method) -> bool {
    !matches!(*m, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// A browser says where a request comes from: `Sec-Fetch-Site` (all current
/// browsers) or, failing that, an `Origin` whose host is not the one asked.
/// Programs send neither and are not affected.
fn cross_site(headers: &HeaderMap) -> bool {
    if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) {
        return !matches!(site, "same-origin" | "none");
    }
    let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let origin_host = origin.split_once("://").map_or(origin, |(_, rest)| rest);
    origin_host != host
}

/// Whether the Host header names this machine's loopback (any port).
fn loopback_host(headers: &HeaderMap) -> bool {
    let Some(host) = headers.get(header::HOST).and_then(|v| v.to_str().ok()) else {
        // HTTP/1.0 clients may send none; they cannot be rebound either.
        return true;
    };
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or("")
    } else {
        host.rsplit_once(':').map_or(host, |(h, _)| h)
    };
    matches!(name, "localhost" | "127.0.0.1" | "::1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn tokens_come_from_the_header_or_the_cookie() {
        assert_eq!(
            presented(&headers(&[("authorization", "Bearer abc")])),
            Some("abc")
        );
        assert_eq!(
            presented(&headers(&[("cookie", "x=1; alk_token=abc")])),
            Some("abc")
        );
        assert_eq!(presented(&headers(&[("authorization", "Basic abc")])), None);
        assert!(same("abc", "abc") && !same("abd", "abc") && !same("ab", "abc"));
    }

    #[test]
    fn other_sites_cannot_change_anything() {
        assert!(cross_site(&headers(&[("sec-fetch-site", "cross-site")])));
        assert!(cross_site(&headers(&[("sec-fetch-site", "same-site")])));
        assert!(!cross_site(&headers(&[("sec-fetch-site", "same-origin")])));
        assert!(cross_site(&headers(&[
            ("origin", "http://evil.example"),
            ("host", "127.0.0.1:7878")
        ])));
        assert!(!cross_site(&headers(&[
            ("origin", "http://127.0.0.1:7878"),
            ("host", "127.0.0.1:7878")
        ])));
        assert!(!cross_site(&headers(&[])));
    }

    #[test]
    fn only_loopback_names_reach_an_unprotected_server() {
        assert!(loopback_host(&headers(&[("host", "127.0.0.1:7878")])));
        assert!(loopback_host(&headers(&[("host", "localhost")])));
        assert!(loopback_host(&headers(&[("host", "[::1]:7878")])));
        assert!(!loopback_host(&headers(&[(
            "host",
            "rebound.example:7878"
        )])));
    }
}
