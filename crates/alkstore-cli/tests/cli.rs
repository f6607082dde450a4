//! The `alk` binary end to end on a temporary SQLite file.

use std::process::{Command, Output};

fn alk(db: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_alk"))
        .arg("--db")
        .arg(db)
        .args(args)
        .env_remove("DATABASE_URL")
        .output()
        .expect("run alk")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn enqueue_inspect_and_dead_letter_flow() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = format!("sqlite://{}", dir.path().join("cli.db").display());
    let out = alk(
        &db,
        &[
            "enqueue",
            "emails",
            r#"{"to":"a@example.com"}"#,
            "--priority",
            "3",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    assert!(stdout(&out).starts_with("enqueued "), "{}", stdout(&out));
    let out = alk(&db, &["stats"]);
    let line = stdout(&out)
        .lines()
        .find(|l| l.starts_with("emails"))
        .map(str::to_string)
        .expect("emails row");
    assert_eq!(
        line.split_whitespace().nth(1),
        Some("1"),
        "one ready job: {line}"
    );
    let out = alk(&db, &["jobs", "--queue", "emails"]);
    assert!(
        stdout(&out).contains(r#"{"to":"a@example.com"}"#),
        "{}",
        stdout(&out)
    );
    let dup = alk(&db, &["enqueue", "emails", "{}", "--unique-key", "k"]);
    let again = alk(&db, &["enqueue", "emails", "{}", "--unique-key", "k"]);
    assert!(stdout(&dup).starts_with("enqueued"));
    assert!(
        stdout(&again).starts_with("duplicate of live job"),
        "{}",
        stdout(&again)
    );
}

#[test]
fn bad_input_fails_clearly_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = format!("sqlite://{}", dir.path().join("cli.db").display());
    let out = alk(&db, &["enqueue", "emails", "{not json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("invalid payload"),
        "{out:?}"
    );
    let out = alk(&db, &["enqueue", "", "{}"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("queue name"),
        "{out:?}"
    );
    let out = alk(&db, &["stats"]);
    assert_eq!(
        stdout(&out).lines().count(),
        1,
        "header only, no queue: {}",
        stdout(&out)
    );
    let out = alk("mysql://nope", &["stats"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("invalid store url"),
        "{out:?}"
    );
    let out = alk(&db, &["dead", "purge"]);
    assert_eq!(out.status.code(), Some(1), "purging everything needs --all");
}
