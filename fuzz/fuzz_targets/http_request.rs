//! Fuzz the HTTP API's request decoding end to end: any method, path,
//! query and body sent to the server's router (on an in-memory SQLite
//! store) is answered, never with a panic or a 500: bad input is a 4xx
//! that names what was wrong.
//!
//! ```sh
//! cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run http_request -- -max_total_time=60
//! ```

#![no_main]

use std::sync::OnceLock;

use alkstore::Store;
use alkstore_http::{router, ServeOptions};
use axum::body::Body;
use axum::http::{Method, Request};
use axum::Router;
use libfuzzer_sys::fuzz_target;
use tower::ServiceExt;

/// Paths the API serves, with `{}` where the fuzzer's text goes.
const PATHS: &[&str] = &[
    "/api/v1/queues/{}/jobs",
    "/api/v1/queues/{}/jobs/batch",
    "/api/v1/queues/{}/claim",
    "/api/v1/queues/{}",
    "/api/v1/jobs/{}",
    "/api/v1/jobs/{}/ack",
    "/api/v1/jobs/{}/retry",
    "/api/v1/streams/{}/events",
    "/api/v1/groups/{}",
    "/api/v1/schedules/{}",
    "/api/v1/locks/{}",
    "/api/v1/atomic",
    "/{}",
];

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    })
}

fn app() -> &'static Router {
    static APP: OnceLock<Router> = OnceLock::new();
    APP.get_or_init(|| {
        let store = runtime()
            .block_on(Store::open("sqlite://:memory:"))
            .expect("store");
        router(store, ServeOptions::default())
    })
}

fuzz_target!(|input: (u8, u8, &str, &str, &[u8])| {
    let (method, path, segment, query, body) = input;
    let method = [Method::GET, Method::POST, Method::PUT, Method::DELETE, Method::PATCH]
        [usize::from(method) % 5]
        .clone();
    let mut uri = PATHS[usize::from(path) % PATHS.len()].replace("{}", segment);
    if !query.is_empty() {
        uri = format!("{uri}?{query}");
    }
    let Ok(request) = Request::builder()
        .method(method)
        .uri(&uri)
        .header("content-type", "application/json")
        .body(Body::from(body.to_vec()))
    else {
        return; // not a URI at all: nothing reaches the server
    };
    let response = runtime()
        .block_on(app().clone().oneshot(request))
        .expect("infallible");
    assert!(
        !response.status().is_server_error(),
        "{uri}: {}",
        response.status()
    );
});
