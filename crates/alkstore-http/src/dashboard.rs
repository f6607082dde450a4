//! The dashboard at `/`: one page of plain HTML, CSS and JavaScript compiled
//! into the binary (no build step, nothing fetched from elsewhere), which
//! polls the JSON API once a second and draws its own charts.
//!
//! It sits behind the same [`guard`](crate::guard) as the API. A browser
//! logs in by opening `/?token=<token>` once: `/` checks the token, keeps it
//! in the `alk_token` cookie (HttpOnly, SameSite=Strict) and redirects to
//! `/`, so the token leaves the address bar and the history.

use axum::extract::State;
use axum::http::{header, HeaderName, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::error::ApiError;
use crate::guard::{query_token, same, TOKEN_COOKIE};
use crate::AppState;

const INDEX_HTML: &str = include_str!("../assets/index.html");
const APP_JS: &str = include_str!("../assets/app.js");
const APP_CSS: &str = include_str!("../assets/app.css");
const FAVICON_SVG: &str = include_str!("../assets/favicon.svg");

/// Scripts, styles and requests from this origin only; no framing.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; \
    frame-ancestors 'none'";

/// `/` and its assets.
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(index))
        .route(
            "/assets/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", text("app.js", APP_JS)) }),
        )
        .route(
            "/assets/app.css",
            get(|| async { asset("text/css; charset=utf-8", text("app.css", APP_CSS)) }),
        )
        .route(
            "/assets/favicon.svg",
            get(|| async { asset("image/svg+xml", FAVICON_SVG.into()) }),
        )
}

/// The page; or, for `/?token=…`, the login: the cookie, then a redirect.
async fn index(State(app): State<AppState>, uri: Uri) -> Response {
    let Some(given) = query_token(&uri) else {
        return page();
    };
    let mut headers = vec![
        (header::LOCATION, "/".to_string()),
        (header::CACHE_CONTROL, "no-store".to_string()),
        (header::REFERRER_POLICY, "no-referrer".to_string()),
    ];
    // The guard let the request in by its token, or by a cookie or header
    // already right; only the server's own token is ever kept.
    if let Some(token) = app.token.as_deref() {
        if same(&given, token) {
            if !token.bytes().all(cookie_octet) {
                return ApiError::invalid(
                    "token",
                    "this token has characters a cookie cannot hold (spaces, quotes, commas, \
                     semicolons, backslashes or non-ASCII): the dashboard needs a token of \
                     letters, digits and punctuation",
                )
                .into_response();
            }
            headers.push((
                header::SET_COOKIE,
                format!("{TOKEN_COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/"),
            ));
        }
    }
    let mut res = StatusCode::SEE_OTHER.into_response();
    for (name, value) in headers {
        if let Ok(value) = value.parse() {
            res.headers_mut().insert(name, value);
        }
    }
    res
}

/// A byte a cookie value may hold unquoted (RFC 6265 `cookie-octet`).
fn cookie_octet(b: u8) -> bool {
    matches!(b, 0x21 | 0x23..=0x2B | 0x2D..=0x3A | 0x3C..=0x5B | 0x5D..=0x7E)
}

fn page() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            (header::CONTENT_SECURITY_POLICY, CSP),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::X_FRAME_OPTIONS, "DENY"),
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        text("index.html", INDEX_HTML),
    )
        .into_response()
}

/// An asset's text: compiled in, or, when `ALK_DASHBOARD_DIR` names a
/// folder (while working on the dashboard), read from there at each
/// request, so a reload shows an edit without a rebuild.
fn text(name: &str, compiled: &'static str) -> std::borrow::Cow<'static, str> {
    match std::env::var_os("ALK_DASHBOARD_DIR") {
        Some(dir) => std::fs::read_to_string(std::path::Path::new(&dir).join(name))
            .map_or(compiled.into(), Into::into),
        None => compiled.into(),
    }
}

fn asset(content_type: &'static str, body: std::borrow::Cow<'static, str>) -> Response {
    let headers: [(HeaderName, &'static str); 3] = [
        (header::CONTENT_TYPE, content_type),
        // Compiled in: a new binary may bring new assets, so revalidate.
        (header::CACHE_CONTROL, "no-cache"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    ];
    (headers, body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{router, ServeOptions};
    use axum::body::Body;
    use axum::http::Request;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    const TOKEN: &str = "0123456789abcdef-secret";

    async fn app() -> (Router, tempfile::TempDir) {
        let dir = tempfile::tempdir().expect("tmp");
        let url = format!("sqlite://{}", dir.path().join("d.db").display());
        let store = alkstore::Store::open(&url).await.expect("open");
        let opts = ServeOptions {
            token: Some(TOKEN.into()),
            ..ServeOptions::default()
        };
        (router(store, opts), dir)
    }

    async fn send(app: &Router, req: Request<Body>) -> (StatusCode, axum::http::HeaderMap, String) {
        let res = app.clone().oneshot(req).await.expect("response");
        let (parts, body) = res.into_parts();
        let bytes = body.collect().await.expect("body").to_bytes();
        (
            parts.status,
            parts.headers,
            String::from_utf8_lossy(&bytes).into_owned(),
        )
    }

    fn get(uri: &str, cookie: Option<&str>) -> Request<Body> {
        let mut r = Request::get(uri).header("host", "10.0.0.5:7878");
        if let Some(c) = cookie {
            r = r.header("cookie", c);
        }
        r.body(Body::empty()).expect("request")
    }

    #[tokio::test]
    async fn the_token_link_sets_the_cookie_and_redirects() {
        let (app, _dir) = app().await;
        let (s, h, _) = send(&app, get(&format!("/?token={TOKEN}"), None)).await;
        assert_eq!(s, StatusCode::SEE_OTHER);
        assert_eq!(h[header::LOCATION], "/");
        assert_eq!(
            h[header::SET_COOKIE],
            format!("alk_token={TOKEN}; HttpOnly; SameSite=Strict; Path=/").as_str()
        );
        // Percent-encoded works too.
        let (s, h, _) = send(&app, get("/?token=0123456789abcdef%2Dsecret", None)).await;
        assert_eq!(s, StatusCode::SEE_OTHER);
        assert!(h.contains_key(header::SET_COOKIE));

        let (s, _, _) = send(&app, get("/?token=wrong", None)).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED);
        let (s, _, _) = send(&app, get("/", None)).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED);
        // With a good cookie, a wrong token in the link is not kept.
        let cookie = format!("alk_token={TOKEN}");
        let (s, h, _) = send(&app, get("/?token=wrong", Some(&cookie))).await;
        assert_eq!(s, StatusCode::SEE_OTHER);
        assert!(!h.contains_key(header::SET_COOKIE));

        let (s, h, body) = send(&app, get("/", Some(&cookie))).await;
        assert_eq!(s, StatusCode::OK);
        assert!(h[header::CONTENT_TYPE]
            .to_str()
            .unwrap_or("")
            .starts_with("text/html"));
        assert!(h.contains_key(header::CONTENT_SECURITY_POLICY));
        assert!(body.contains("/assets/app.js"), "{body}");
    }

    #[tokio::test]
    async fn the_query_token_opens_only_the_page() {
        let (app, _dir) = app().await;
        for uri in [
            format!("/api/v1/queues?token={TOKEN}"),
            format!("/assets/app.js?token={TOKEN}"),
            format!("/metrics?token={TOKEN}"),
        ] {
            let (s, _, _) = send(&app, get(&uri, None)).await;
            assert_eq!(s, StatusCode::UNAUTHORIZED, "{uri}");
        }
        let post = Request::post(format!("/?token={TOKEN}"))
            .header("host", "10.0.0.5:7878")
            .body(Body::empty())
            .expect("request");
        let (s, _, _) = send(&app, post).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED);
    }

    #[tokio::test]
    async fn assets_are_served_with_their_types() {
        let (app, _dir) = app().await;
        let cookie = format!("alk_token={TOKEN}");
        for (path, ty) in [
            ("/assets/app.js", "text/javascript"),
            ("/assets/app.css", "text/css"),
            ("/assets/favicon.svg", "image/svg+xml"),
        ] {
            let (s, h, body) = send(&app, get(path, Some(&cookie))).await;
            assert_eq!(s, StatusCode::OK, "{path}");
            assert!(
                h[header::CONTENT_TYPE]
                    .to_str()
                    .unwrap_or("")
                    .starts_with(ty),
                "{path}"
            );
            assert!(!body.is_empty());
        }
        // The page never writes data into the DOM as markup.
        assert!(!APP_JS.contains("innerHTML"), "use textContent");
        assert!(!APP_JS.contains("insertAdjacentHTML"));
    }

    #[tokio::test]
    async fn without_a_server_token_the_link_keeps_nothing() {
        let dir = tempfile::tempdir().expect("tmp");
        let url = format!("sqlite://{}", dir.path().join("d.db").display());
        let store = alkstore::Store::open(&url).await.expect("open");
        let app = router(store, ServeOptions::default());
        let local = |uri: &str| {
            Request::get(uri)
                .header("host", "127.0.0.1:7878")
                .body(Body::empty())
                .expect("request")
        };
        let (s, _, body) = send(&app, local("/")).await;
        assert_eq!(s, StatusCode::OK);
        assert!(body.contains("<title>alkstore</title>"));
        let (s, h, _) = send(&app, local("/?token=whatever")).await;
        assert_eq!(s, StatusCode::SEE_OTHER);
        assert!(!h.contains_key(header::SET_COOKIE));
    }

    #[test]
    fn cookie_octets() {
        assert!(TOKEN.bytes().all(cookie_octet));
        for bad in [b' ', b'"', b',', b';', b'\\', 0x7F, 0xC3] {
            assert!(!cookie_octet(bad), "{bad}");
        }
    }
}
