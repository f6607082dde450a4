//! Opening stores by URL.

use alkstore::{EnqueueOpts, ErrorKind, JobExt, Store};

#[tokio::test]
async fn bad_urls_are_typed_errors() {
    for url in [
        "mysql://localhost/db",
        "sqlite://",
        "app.db",
        "sqlite://x.db?mode=weird",
    ] {
        let err = Store::open(url).await.expect_err(url);
        assert_eq!(err.kind(), ErrorKind::InvalidUrl, "{url}: {err}");
    }
}

#[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
struct Email {
    to: String,
}

#[tokio::test]
async fn typed_payloads_round_trip_on_sqlite() {
    let dir = tempfile::tempdir().expect("tmp");
    let store = Store::open(&format!("sqlite://{}", dir.path().join("a.db").display()))
        .await
        .expect("open");
    let q = store.queue("emails");
    q.enqueue(&Email {
        to: "a@example.com".into(),
    })
    .await
    .expect("enqueue");
    q.enqueue_with(
        &Email {
            to: "b@example.com".into(),
        },
        EnqueueOpts::default().priority(9),
    )
    .await
    .expect("enqueue");
    let jobs = q.claim("w", 10).await.expect("claim");
    let emails: Vec<Email> = jobs.iter().map(|j| j.decode().expect("decode")).collect();
    assert_eq!(
        emails,
        vec![
            Email {
                to: "b@example.com".into()
            },
            Email {
                to: "a@example.com".into()
            }
        ]
    );
    let bad: Result<u64, _> = jobs[0].decode();
    assert_eq!(bad.expect_err("not a number").kind(), ErrorKind::Payload);
    assert_eq!(
        q.ack(jobs.iter().map(|j| j.claim()).collect())
            .await
            .expect("ack"),
        vec![true, true]
    );
}
