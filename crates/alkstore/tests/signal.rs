//! `shutdown_signal` takes SIGTERM for the whole process: once it listens,
//! a SIGTERM resolves it (and every other listener) instead of ending the
//! process, and later ones do too. (Unix only; its own test binary, since
//! it signals its own process.)

#![cfg(unix)]

use std::time::Duration;

/// Send SIGTERM to this process.
fn sigterm_self() {
    let status = std::process::Command::new("kill")
        .args(["-TERM", &std::process::id().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -TERM");
}

/// Poll `fut` once, so it registers its signal handlers; it must still
/// be waiting.
async fn start(fut: &mut std::pin::Pin<Box<impl std::future::Future<Output = ()>>>) {
    tokio::select! {
        biased;
        _ = fut.as_mut() => panic!("resolved without a signal"),
        _ = std::future::ready(()) => {}
    }
}

#[tokio::test]
async fn shutdown_signal_consumes_sigterm_for_the_whole_process() {
    let mut first = Box::pin(alkstore::shutdown_signal());
    let mut other = Box::pin(alkstore::shutdown_signal());
    start(&mut first).await;
    start(&mut other).await;
    sigterm_self();
    tokio::time::timeout(Duration::from_secs(10), first)
        .await
        .expect("the first listener resolves");
    tokio::time::timeout(Duration::from_secs(10), other)
        .await
        .expect("every listener present resolves");

    // The process lives on, and a second SIGTERM does not end it either:
    // it goes to whoever listens now.
    let mut second = Box::pin(alkstore::shutdown_signal());
    start(&mut second).await;
    sigterm_self();
    tokio::time::timeout(Duration::from_secs(10), second)
        .await
        .expect("the next listener resolves; the process is still here");
}
