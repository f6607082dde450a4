//! The `alk` binary end to end on a temporary SQLite file (and, where the
//! engine matters, on PostgreSQL at `DATABASE_URL`).

mod common;

use std::process::{Command, Output};
use std::time::Duration;

use common::alk_stdin;

use alkstore::{queue::QueueOpts, Store};
use serde_json::Value;

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

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Run `alk … --json`, check it succeeded, parse its one JSON document.
fn alk_json(db: &str, args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.push("--json");
    let out = alk(db, &args);
    assert!(out.status.success(), "{args:?}: {out:?}");
    serde_json::from_slice(&out.stdout).expect("one JSON document")
}

/// Enqueue `{}` on `queue` with extra flags; returns the new id.
fn enqueue(db: &str, queue: &str, flags: &[&str]) -> i64 {
    let mut args = vec!["enqueue", queue, "{}"];
    args.extend_from_slice(flags);
    alk_json(db, &args)["id"].as_i64().expect("id")
}

/// Now in unix seconds, as `--json` gives times.
fn now_secs() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64()
}

fn temp_db() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("tmp");
    let db = format!("sqlite://{}", dir.path().join("cli.db").display());
    (dir, db)
}

/// Make `n` dead letters on `queue` (claimed and failed through the library).
async fn dead_letters(db: &str, queue: &str, n: usize) {
    let store = Store::open(db).await.expect("open");
    let q = store.queue(queue);
    q.enqueue_batch((0..n).map(|i| serde_json::json!({ "n": i })))
        .await
        .expect("enqueue");
    loop {
        let jobs = q.claim("test", 100).await.expect("claim");
        if jobs.is_empty() {
            break;
        }
        for j in jobs {
            assert!(q
                .fail(j.claim(), format!("boom {}", j.id))
                .await
                .expect("fail"));
        }
    }
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

#[test]
fn read_commands_never_create_a_store() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("none.db");
    let db = format!("sqlite://{}", path.display());
    for args in [
        &["stats"][..],
        &["jobs"],
        &["job", "1"],
        &["dead", "list"],
        &["dead", "requeue", "--all"],
        &["cancel", "1"],
        &["sweep"],
    ] {
        let out = alk(&db, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
        assert!(
            stderr(&out).contains("no alkstore store at"),
            "{args:?}: {}",
            stderr(&out)
        );
        assert!(!path.exists(), "{args:?} created {}", path.display());
    }
    let out = alk(&db, &["enqueue", "q", "{not json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!path.exists(), "a rejected payload creates no store");
    let out = alk(&db, &["init"]);
    assert!(out.status.success(), "{out:?}");
    assert!(path.exists());
    let out = alk(&db, &["stats"]);
    assert!(out.status.success(), "{out:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_read_commands_never_create_a_schema() {
    let base = alkstore_postgres::testing::database_url();
    let schema = alkstore_postgres::testing::unique_schema("alk_cli");
    let sep = if base.contains('?') { '&' } else { '?' };
    let db = format!("{base}{sep}schema={schema}");
    let out = alk(&db, &["stats"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(stderr(&out).contains("no alkstore store"), "{out:?}");
    let out = alk(&db, &["dead", "list", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");

    // Look at the catalog through a store of our own.
    let helper = alkstore_postgres::testing::unique_schema("alk_cli_h");
    let mut opts = alkstore_postgres::PgOptions::new(base.clone(), helper.clone());
    opts.pool_size = 2;
    let engine = alkstore_postgres::PgEngine::open(opts).await.expect("open");
    let client = engine.client().await.expect("client");
    let row = client
        .query_one(
            "SELECT count(*) FROM pg_namespace WHERE nspname = $1",
            &[&schema],
        )
        .await
        .expect("catalog");
    let found: i64 = row.get(0);
    assert_eq!(found, 0, "stats created schema {schema}");
    drop(client);

    let id = enqueue(&db, "q", &["--priority", "-5"]);
    let job = alk_json(&db, &["job", &id.to_string()]);
    assert_eq!(job["priority"], -5);
    for s in [&schema, &helper] {
        alkstore_postgres::testing::drop_schema(&base, s)
            .await
            .expect("drop schema");
    }
}

#[test]
fn passwords_never_print() {
    let out = Command::new(env!("CARGO_BIN_EXE_alk"))
        .arg("--help")
        .env("DATABASE_URL", "postgres://u:secret@h/d")
        .output()
        .expect("run alk");
    assert!(out.status.success(), "{out:?}");
    assert!(stdout(&out).contains("DATABASE_URL"), "{}", stdout(&out));
    assert!(!stdout(&out).contains("secret"), "{}", stdout(&out));
    let out = alk("postgres://u:secret@h/d?relaxed_commits=maybe", &["stats"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("u:***@h"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("secret"), "{}", stderr(&out));
    let out = alk("postgres://u:secret@127.0.0.1:1/d", &["init"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!stderr(&out).contains("secret"), "{}", stderr(&out));
}

#[test]
fn binary_payloads_round_trip_from_a_file_and_stdin() {
    let (dir, db) = temp_db();
    let bytes: Vec<u8> = vec![0, 0xff, b'a', 0, 0xfe, b'\n', 0x80];
    let file = dir.path().join("payload.bin");
    std::fs::write(&file, &bytes).expect("write");
    let file = file.display().to_string();
    let out = alk(&db, &["enqueue", "blobs", "--payload-file", &file, "--raw"]);
    assert!(out.status.success(), "{out:?}");
    let id = stdout(&out)
        .trim()
        .strip_prefix("enqueued ")
        .expect("enqueued ID")
        .to_string();
    let out = alk(&db, &["job", &id, "--payload"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        out.stdout, bytes,
        "the payload, byte for byte, nothing else"
    );
    let job = alk_json(&db, &["job", &id]);
    assert_eq!(job["payload_encoding"], "base64");
    assert_eq!(job["payload"], "AP9hAP4KgA==");
    assert_eq!(job["payload_bytes"], 7);

    // A large payload through stdin.
    let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let out = alk_stdin(
        &db,
        &["enqueue", "blobs", "--payload-file", "-", "--raw"],
        &big,
    );
    assert!(out.status.success(), "{out:?}");
    let id = stdout(&out).trim().replace("enqueued ", "");
    assert_eq!(alk(&db, &["job", &id, "--payload"]).stdout, big);

    // JSON from stdin is checked; exactly one source is required.
    let out = alk_stdin(
        &db,
        &["enqueue", "j", "--payload-file", "-"],
        b"{\"a\": 1}\n",
    );
    assert!(out.status.success(), "{out:?}");
    let out = alk_stdin(&db, &["enqueue", "j", "--payload-file", "-"], &bytes);
    assert!(stderr(&out).contains("not JSON"), "{out:?}");
    let out = alk(&db, &["enqueue", "j"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("--payload-file"), "{out:?}");
    let out = alk(&db, &["enqueue", "j", "{}", "--payload-file", &file]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("not both"), "{out:?}");
    let out = alk(&db, &["enqueue", "j", "--payload-file", "/nonexistent/x"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("cannot read"), "{out:?}");
}

#[test]
fn json_output_has_raw_numbers_and_text_has_rfc3339() {
    let (_dir, db) = temp_db();
    let out = alk(&db, &["enqueue", "q", r#"{"to":"a"}"#, "--delay", "300"]);
    assert!(out.status.success(), "{out:?}");
    let jobs = alk_json(&db, &["jobs"]);
    let job = &jobs.as_array().expect("an array")[0];
    assert_eq!(job["payload"], r#"{"to":"a"}"#);
    assert_eq!(job["payload_encoding"], "utf8");
    assert_eq!(job["state"], "scheduled", "first run due later");
    let run_at = job["run_at"].as_i64().expect("unix seconds");
    let created = job["created_at"].as_i64().expect("unix seconds");
    assert!((299..=301).contains(&(run_at - created)), "{job}");
    let id = job["id"].as_i64().expect("id").to_string();
    assert_eq!(alk_json(&db, &["job", &id])["id"], job["id"]);

    let stats = alk_json(&db, &["stats"]);
    assert_eq!(stats[0]["queue"], "q");
    assert_eq!(stats[0]["scheduled"], 1);
    for field in [
        "expired_claims",
        "expired",
        "completed",
        "dead",
        "processing",
    ] {
        assert_eq!(stats[0][field], 0, "{field}: {stats}");
    }
    let sweep = alk_json(&db, &["sweep"]);
    for field in [
        "expired",
        "rescued",
        "exhausted",
        "dead_pruned",
        "completed_pruned",
        "events_trimmed",
    ] {
        assert_eq!(sweep[field], 0, "{field}: {sweep}");
    }
    assert!(alk_json(&db, &["dead", "list"]).as_array().is_some());

    let text = stdout(&alk(&db, &["job", &id]));
    let line = text
        .lines()
        .find(|l| l.starts_with("run_at:"))
        .expect("run_at line");
    assert!(
        line.contains("Z (in 4m ") || line.contains("Z (in 5m)"),
        "{line}"
    );
    let table = stdout(&alk(&db, &["jobs"]));
    assert!(table.contains("Z  {\"to\":\"a\"}"), "{table}");
    let sweep = stdout(&alk(&db, &["sweep"]));
    for field in [
        "expired",
        "rescued",
        "exhausted",
        "dead_pruned",
        "completed_pruned",
        "events_trimmed",
    ] {
        assert!(sweep.contains(field), "{sweep}");
    }
    let stats = stdout(&alk(&db, &["stats"]));
    for field in ["expired_claims", "expired", "completed"] {
        assert!(stats.lines().next().expect("header").contains(field));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn job_shows_attempt_errors_dead_reason_and_missing_jobs() {
    let (_dir, db) = temp_db();
    let id = enqueue(&db, "q", &["--max-attempts", "2"]);
    {
        let store = Store::open(&db).await.expect("open");
        let q = store.queue("q");
        let job = q.claim("w", 1).await.expect("claim").remove(0);
        q.retry_after(job.claim(), "first failure", Duration::ZERO)
            .await
            .expect("retry");
        let job = q.claim("w", 1).await.expect("claim").remove(0);
        q.fail(job.claim(), "second\nfailure").await.expect("fail");
    }
    let text = stdout(&alk(&db, &["job", &id.to_string()]));
    assert!(text.contains("state:            dead (failed)"), "{text}");
    assert!(text.contains("died_at:"), "{text}");
    assert!(text.contains("attempt 1 at "), "{text}");
    assert!(text.contains(": first failure"), "{text}");
    assert!(text.contains("attempt 2 at "), "{text}");
    assert!(text.contains(": second\\nfailure"), "{text}");
    let job = alk_json(&db, &["job", &id.to_string()]);
    assert_eq!(job["errors"].as_array().map(Vec::len), Some(2), "{job}");
    assert_eq!(job["errors"][1]["error"], "second\nfailure");
    assert_eq!(job["dead_reason"], "failed");
    assert!(job["died_at"].is_i64(), "{job}");

    let table = stdout(&alk(&db, &["dead", "list"]));
    let header = table.lines().next().expect("header");
    assert!(
        header.contains("reason") && header.contains("error"),
        "{table}"
    );
    let row = table.lines().nth(1).expect("row");
    assert!(
        row.contains("failed") && row.contains("second\\nfailure"),
        "{row}"
    );

    let out = alk(&db, &["job", "999"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(
            "job 999 not found: finished jobs are deleted unless their queue keeps completed jobs"
        ),
        "{out:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn negative_numbers_release_and_completed_jobs() {
    let (_dir, db) = temp_db();
    let low = enqueue(&db, "q", &["--priority", "-5"]);
    let high = enqueue(&db, "q", &[]);
    let job = alk_json(&db, &["job", &low.to_string()]);
    assert_eq!(job["priority"], -5);
    let all = alk_json(&db, &["jobs", "--after", "-1"]);
    assert_eq!(all.as_array().map(Vec::len), Some(2), "{all}");
    let later = alk_json(&db, &["jobs", "--after", &low.to_string()]);
    assert_eq!(later[0]["id"], high, "{later}");

    // An operator releases a processing job; a second release says why not.
    {
        let store = Store::open(&db).await.expect("open");
        let job = store
            .queue("q")
            .claim("w", 1)
            .await
            .expect("claim")
            .remove(0);
        assert_eq!(job.id, high, "priority 0 before -5");
    }
    let hid = high.to_string();
    assert_eq!(alk_json(&db, &["job", &hid])["state"], "processing");
    let out = alk(&db, &["job", "release", &hid]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(stdout(&out), format!("released {high}\n"));
    assert_eq!(alk_json(&db, &["job", "show", &hid])["state"], "pending");
    let out = alk(&db, &["job", "release", &hid]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(&format!("processing job {high} not found")),
        "{out:?}"
    );

    // Completed jobs of a queue that keeps them.
    let kept = {
        let store = Store::open(&db).await.expect("open");
        let q = store.queue_with(
            "kept",
            QueueOpts {
                keep_completed: Some(Duration::from_secs(3600)),
                ..QueueOpts::default()
            },
        );
        q.enqueue(&1).await.expect("enqueue");
        let job = q.claim("w", 1).await.expect("claim").remove(0);
        assert_eq!(q.ack(vec![job.claim()]).await.expect("ack"), vec![true]);
        job.id
    };
    let done = alk_json(&db, &["jobs", "--state", "completed"]);
    assert_eq!(done[0]["id"], kept, "{done}");
    assert!(done[0]["completed_at"].is_i64(), "{done}");
    let text = stdout(&alk(&db, &["job", &kept.to_string()]));
    assert!(text.contains("state:            completed"), "{text}");
    assert!(text.contains("completed_at:"), "{text}");
    assert_eq!(alk_json(&db, &["stats", "kept"])[0]["completed"], 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn dead_requeue_and_purge_run_in_batches() {
    let (_dir, db) = temp_db();
    dead_letters(&db, "q", 25).await;
    let out = alk(&db, &["dead", "requeue", "--queue", "q", "--dry-run"]);
    assert!(out.status.success(), "{out:?}");
    assert!(stdout(&out).contains("would requeue 25"), "{out:?}");
    assert_eq!(alk_json(&db, &["stats", "q"])[0]["dead"], 25);

    let out = alk(&db, &["dead", "requeue", "--queue", "q", "--batch", "10"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(stdout(&out), "requeued 25\n");
    let progress = stderr(&out);
    let progress: Vec<&str> = progress.lines().collect();
    assert_eq!(
        progress,
        vec!["requeued 10/25", "requeued 20/25", "requeued 25/25"],
        "{out:?}"
    );
    let stats = alk_json(&db, &["stats", "q"]);
    assert_eq!(
        (stats[0]["dead"].as_u64(), stats[0]["ready"].as_u64()),
        (Some(0), Some(25))
    );

    // Dead again, then purged in batches; --id limits the selection.
    {
        let store = Store::open(&db).await.expect("open");
        let q = store.queue("q");
        for j in q.claim("w", 100).await.expect("claim") {
            q.fail(j.claim(), "again").await.expect("fail");
        }
    }
    let first = alk_json(&db, &["dead", "list", "--limit", "2"]);
    let ids: Vec<String> = first
        .as_array()
        .expect("array")
        .iter()
        .map(|j| j["id"].to_string())
        .collect();
    let out = alk(
        &db,
        &[
            "dead", "purge", "--id", &ids[0], "--id", &ids[1], "--batch", "1",
        ],
    );
    assert_eq!(stdout(&out), "purged 2\n", "{out:?}");
    let r = alk_json(&db, &["dead", "purge", "--all", "--batch", "7"]);
    assert_eq!(
        (r["matched"].as_u64(), r["purged"].as_u64()),
        (Some(23), Some(23)),
        "{r}"
    );
    let out = alk(&db, &["dead", "purge", "--all", "--dry-run"]);
    assert_eq!(stdout(&out), "would purge 0 dead letters (dry run)\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_pending_and_running_jobs() {
    let (_dir, db) = temp_db();
    let pending = enqueue(&db, "q", &["--priority", "-1"]).to_string();
    let running = enqueue(&db, "q", &[]);
    {
        let store = Store::open(&db).await.expect("open");
        let job = store
            .queue("q")
            .claim("w", 1)
            .await
            .expect("claim")
            .remove(0);
        assert_eq!(job.id, running);
    }
    let running = running.to_string();
    let out = alk(&db, &["cancel", &pending]);
    assert_eq!(stdout(&out), format!("cancelled {pending}\n"), "{out:?}");
    let job = alk_json(&db, &["job", &pending]);
    assert_eq!(
        (job["state"].as_str(), job["dead_reason"].as_str()),
        (Some("dead"), Some("cancelled"))
    );
    let r = alk_json(&db, &["cancel", &running]);
    assert_eq!(r["outcome"], "requested", "{r}");
    assert_eq!(alk_json(&db, &["job", &running])["cancel_requested"], true);
    let text = stdout(&alk(&db, &["job", &running]));
    assert!(text.contains("cancel_requested: yes"), "{text}");
    let out = alk(&db, &["cancel", &pending]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(stderr(&out).contains("live job"), "{out:?}");
}

/// `alk streams`: a refused publish creates no store; `tail
/// --commit-every 0` is refused (as the library refuses it); a trim age
/// under 1 s is refused as `retain` refuses one (either would delete every
/// event); stats of a stream nobody used says there is no such stream.
#[tokio::test(flavor = "multi_thread")]
async fn streams_commands_refuse_bad_input_clearly() {
    let (dir, db) = temp_db();
    let path = dir.path().join("cli.db");
    for (args, says) in [
        (&["streams", "publish", "", "{}"][..], "invalid stream name"),
        (
            &["streams", "publish", "s", "{}", "--key", ""],
            "invalid event key",
        ),
        (&["streams", "publish", "s", "{not json"], "invalid payload"),
    ] {
        let out = alk(&db, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
        assert!(!path.exists(), "{args:?} created {}", path.display());
    }
    let offset = alk_json(&db, &["streams", "publish", "s", "{}"])["offset"]
        .as_i64()
        .expect("offset");

    let out = alk(&db, &["streams", "stats", "nope"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        stderr(&out).contains("stream \"nope\" not found"),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    let stats = alk_json(&db, &["streams", "stats", "s"]);
    assert_eq!(stats["head"].as_i64(), Some(offset), "{stats}");

    for age in ["0s", "500ms"] {
        let out = alk(&db, &["streams", "trim", "s", "--older-than", age]);
        assert_eq!(out.status.code(), Some(1), "{age}: {out:?}");
        assert!(
            stderr(&out).contains("invalid trim age: must be at least 1 s"),
            "{age}: {}",
            stderr(&out)
        );
    }
    let store = Store::open(&db).await.expect("open");
    let err = store
        .stream("s")
        .retain(Some(Duration::ZERO))
        .await
        .expect_err("retain 0s");
    assert!(err.to_string().contains("at least 1 s"), "{err}");
    let stats = alk_json(&db, &["streams", "stats", "s"]);
    assert_eq!(
        stats["events"].as_u64(),
        Some(1),
        "nothing trimmed: {stats}"
    );

    let out = alk(
        &db,
        &[
            "streams",
            "tail",
            "s",
            "--consumer",
            "c",
            "--commit-every",
            "0",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(stderr(&out).contains("--commit-every"), "{}", stderr(&out));
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    let offsets = alk_json(&db, &["streams", "offsets", "s"]);
    assert_eq!(offsets, serde_json::json!([]), "nothing read or saved");
}

/// `alk groups bucket` answers "where does this key go?" without a store,
/// with PostgreSQL's bucket expression (values read off PostgreSQL 15:
/// `(((hashtextextended(k, 0) % 16) + 16) % 16)`), and refuses N = 0 and
/// a key that cannot be published (as `streams publish` refuses it).
#[test]
fn groups_bucket_prints_each_keys_bucket_without_a_store() {
    let (dir, db) = temp_db();
    let rows = alk_json(
        &db,
        &["groups", "bucket", "--buckets", "16", "customer-42", "a"],
    );
    let buckets: Vec<(String, u64)> = rows
        .as_array()
        .expect("array")
        .iter()
        .map(|r| {
            (
                r["key"].as_str().expect("key").to_string(),
                r["bucket"].as_u64().expect("bucket"),
            )
        })
        .collect();
    assert_eq!(
        buckets,
        vec![("customer-42".to_string(), 0), ("a".to_string(), 1)]
    );
    for key in [String::new(), "k".repeat(201)] {
        let refused = alk(&db, &["groups", "bucket", "--buckets", "16", "a", &key]);
        assert_eq!(refused.status.code(), Some(1), "{key:?}: {refused:?}");
        assert!(
            stderr(&refused).contains("invalid event key"),
            "{}",
            stderr(&refused)
        );
        assert!(stdout(&refused).is_empty(), "{}", stdout(&refused));
    }
    let text = stdout(&alk(&db, &["groups", "bucket", "--buckets", "16", "a"]));
    assert!(
        text.lines()
            .nth(1)
            .is_some_and(|l| l.split_whitespace().eq(["a", "1"])),
        "{text}"
    );
    let refused = alk(&db, &["groups", "bucket", "--buckets", "0", "a"]);
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("--buckets"),
        "{}",
        stderr(&refused)
    );
    assert!(
        !dir.path().join("cli.db").exists(),
        "no store is created for a question about keys"
    );
}

/// `alk groups list|status|dead|resize` on a group a worker ran: its
/// buckets with their checkpoints, its dead letter with the error, and a
/// resize (allowed once the worker left) that rewinds every bucket.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_list_status_dead_and_resize() {
    use alkstore::group::{GroupEvent, GroupOpts, GroupRunner};
    use alkstore::stream::OnError;
    let (_dir, db) = temp_db();
    let store = Store::open(&db).await.expect("open");
    let stream = store.stream("orders");
    let first = stream
        .publish_raw(Some("a"), b"ok".to_vec())
        .await
        .expect("publish");
    let poison = stream
        .publish_raw(Some("b"), b"poison".to_vec())
        .await
        .expect("publish");
    let handled = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = handled.clone();
    let opts = GroupOpts {
        on_error: OnError::Stop,
        ..GroupOpts::default()
    };
    let group_store = store.clone();
    let done = async move {
        // The good event handled and the poison one dead-lettered.
        while seen.load(std::sync::atomic::Ordering::SeqCst) < 1
            || group_store
                .group("proj")
                .dead_letters(0, 10)
                .await
                .map_or(0, |d| d.len())
                < 1
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    GroupRunner::new(store.clone(), "proj", "orders")
        .buckets(4)
        .opts(opts)
        .handler_raw(move |e: GroupEvent<Vec<u8>>| {
            let ok = e.payload() != b"poison";
            if ok {
                handled.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            std::future::ready(if ok {
                Ok(())
            } else {
                Err(std::io::Error::other("bad payload"))
            })
        })
        .run_until(done)
        .await
        .expect("run");

    let list = alk_json(&db, &["groups", "list"]);
    assert_eq!(list[0]["group"], "proj");
    assert_eq!(
        (list[0]["stream"].as_str(), list[0]["buckets"].as_u64()),
        (Some("orders"), Some(4))
    );
    let status = alk_json(&db, &["groups", "status", "proj"]);
    let buckets = status["buckets"].as_array().expect("buckets");
    assert_eq!(buckets.len(), 4);
    assert!(
        buckets.iter().all(|b| b["owner"].is_null()),
        "released on shutdown"
    );
    // Times in --json are unix seconds, named without a unit.
    assert!(
        buckets
            .iter()
            .all(|b| b.get("lease_expires_at").is_some() && b.get("lease_expires_at_ms").is_none()),
        "{status}"
    );
    let checkpoints: Vec<i64> = buckets
        .iter()
        .map(|b| b["checkpoint"].as_i64().expect("cp"))
        .collect();
    assert!(
        checkpoints.contains(&first) && checkpoints.contains(&poison),
        "{checkpoints:?}"
    );
    let table = stdout(&alk(&db, &["groups", "status", "proj"]));
    assert!(
        table.contains("CHECKPOINT") && table.contains(&first.to_string()),
        "{table}"
    );
    let dead = alk_json(&db, &["groups", "dead", "proj"]);
    assert_eq!(list[0]["dead"].as_u64(), Some(1), "{list}");
    assert_eq!(dead[0]["offset"].as_i64(), Some(poison));
    assert_eq!(dead[0]["payload"], "poison");
    assert!(
        dead[0]["error"]
            .as_str()
            .expect("error")
            .contains("bad payload"),
        "{dead}"
    );

    let requeued = alk_json(
        &db,
        &["groups", "requeue", "proj", "--offset", &poison.to_string()],
    );
    assert_eq!(requeued["requeued"].as_u64(), Some(1));
    let dead = alk_json(&db, &["groups", "dead", "proj"]);
    assert_eq!(dead[0]["requeued"], true);
    // Purging is explicit: an offset or --all.
    let refused = alk(&db, &["groups", "purge", "proj"]);
    assert!(!refused.status.success());
    assert!(stderr(&refused).contains("--all"), "{}", stderr(&refused));
    assert_eq!(
        alk_json(&db, &["groups", "dead", "proj"])
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    let purged = alk_json(
        &db,
        &["groups", "purge", "proj", "--offset", &poison.to_string()],
    );
    assert_eq!(purged["purged"].as_u64(), Some(1), "{purged}");
    assert_eq!(
        alk_json(&db, &["groups", "dead", "proj"]),
        serde_json::json!([])
    );
    assert_eq!(
        alk_json(&db, &["groups", "list"])[0]["dead"].as_u64(),
        Some(0)
    );
    let resized = alk_json(&db, &["groups", "resize", "proj", "--buckets", "8"]);
    assert_eq!(
        (resized["from"].as_u64(), resized["to"].as_u64()),
        (Some(4), Some(8))
    );
    assert_eq!(
        resized["rewound_to"].as_i64(),
        checkpoints.iter().copied().min()
    );
    let status = alk_json(&db, &["groups", "status", "proj"]);
    assert_eq!(status["buckets"].as_array().expect("buckets").len(), 8);
    let missing = alk(&db, &["groups", "status", "nope"]);
    assert!(!missing.status.success());
    assert!(
        stderr(&missing).contains("not found"),
        "{}",
        stderr(&missing)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn locks_list_shows_holders_and_tokens() {
    use std::time::Duration;
    let (_dir, db) = temp_db();
    let store = Store::open(&db).await.expect("open");
    let held = store
        .lock("nightly")
        .owner("host-a")
        .ttl(Duration::from_secs(600))
        .try_acquire()
        .await
        .expect("acquire")
        .expect("free");
    let freed = store
        .lock("cleanup")
        .owner("host-b")
        .try_acquire()
        .await
        .expect("acquire")
        .expect("free");
    assert_eq!(
        freed.release().await.expect("release"),
        alkstore::lock::LockReleased::Released
    );
    let rows = alk_json(&db, &["locks", "list"]);
    let rows: Vec<(String, Option<String>, i64, bool)> = rows
        .as_array()
        .expect("array")
        .iter()
        .map(|r| {
            (
                r["name"].as_str().expect("name").to_string(),
                r["owner"].as_str().map(str::to_string),
                r["token"].as_i64().expect("token"),
                r["held"].as_bool().expect("held"),
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            ("cleanup".to_string(), None, 1, false),
            (
                "nightly".to_string(),
                Some("host-a".to_string()),
                held.token(),
                true
            ),
        ]
    );
    // Times in --json are unix seconds (milliseconds as a fraction).
    let listed = alk_json(&db, &["locks", "list"]);
    let nightly = &listed[1];
    let now = now_secs();
    let expires = nightly["expires_at"].as_f64().expect("expires_at");
    let acquired = nightly["acquired_at"].as_f64().expect("acquired_at");
    assert!((expires - acquired - 600.0).abs() < 1.0, "{nightly}");
    assert!((acquired - now).abs() < 60.0, "{nightly}");
    assert!(nightly.get("expires_at_ms").is_none(), "{nightly}");
    let text = stdout(&alk(&db, &["locks", "list"]));
    assert!(
        text.lines()
            .any(|l| l.starts_with("nightly") && l.contains("host-a") && l.contains(" in ")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("cleanup") && l.contains("(free)")),
        "{text}"
    );
}

#[test]
fn schedules_add_list_pause_resume_remove_and_bad_specs() {
    let (dir, db) = temp_db();
    for (spec, says) in [
        ("@every 0s", "positive"),
        ("@every 5x", "unknown unit"),
        ("* * * * * * *", "7 fields"),
        ("0 24 * * *", "schedule spec"),
    ] {
        let out = alk(
            &db,
            &["schedules", "add", "s", "--spec", spec, "--queue", "q"],
        );
        assert!(!out.status.success(), "{spec}");
        assert!(stderr(&out).contains(says), "{spec}: {}", stderr(&out));
        // Checked before the store is opened: a refused spec creates no file.
        assert!(
            !dir.path().join("cli.db").exists(),
            "{spec} created a store"
        );
    }
    let out = alk(
        &db,
        &[
            "schedules",
            "add",
            "s",
            "--spec",
            "0 9 * * *",
            "--queue",
            "q",
            "--tz",
            "Nowhere/City",
        ],
    );
    assert!(stderr(&out).contains("IANA"), "{}", stderr(&out));
    assert!(
        !dir.path().join("cli.db").exists(),
        "a bad zone created a store"
    );
    assert!(alk(&db, &["init"]).status.success());
    assert_eq!(alk_json(&db, &["schedules", "list"]), serde_json::json!([]));
    let added = alk_json(
        &db,
        &[
            "schedules",
            "add",
            "daily",
            "--spec",
            "30 9 * * *",
            "--queue",
            "reports",
            "--tz",
            "Europe/Paris",
            "--payload",
            "hello",
        ],
    );
    assert_eq!(added["tz"], "Europe/Paris");
    assert_eq!(added["paused"], false);
    // Times in --json are unix seconds, like every other command's.
    let next = added["next_fire_at"].as_f64().expect("next_fire_at");
    let now = now_secs();
    assert!(next > now && next < now + 2.0 * 86_400.0, "{added}");
    assert!(added.get("next_fire_at_ms").is_none(), "{added}");
    // Without --payload, jobs carry JSON's null, which a JSON handler
    // decodes (an empty payload would not).
    let bare = alk_json(
        &db,
        &[
            "schedules",
            "add",
            "bare",
            "--spec",
            "@every 1h",
            "--queue",
            "q",
        ],
    );
    assert_eq!(bare["payload"], "null", "{bare}");
    assert!(alk(&db, &["schedules", "remove", "bare"]).status.success());
    let paused = alk_json(&db, &["schedules", "pause", "daily"]);
    assert_eq!(paused["paused"], true);
    // Fired by hand while paused: a job now, kept in its history.
    let fired = alk_json(&db, &["schedules", "fire-now", "daily"]);
    let job = fired["job_id"].as_i64().expect("job id");
    let fires = alk_json(&db, &["schedules", "fires", "daily"]);
    assert_eq!(fires[0]["job_id"], job, "{fires}");
    assert_eq!(fires[0]["manual"], true, "{fires}");
    assert!(!alk(&db, &["schedules", "fire-now", "nope"])
        .status
        .success());
    let text = stdout(&alk(&db, &["schedules", "list"]));
    assert!(
        text.lines()
            .any(|l| l.starts_with("daily") && l.contains("paused") && l.contains("hello")),
        "{text}"
    );
    assert_eq!(
        alk_json(&db, &["schedules", "resume", "daily"])["paused"],
        false
    );
    assert!(alk(&db, &["schedules", "remove", "daily"]).status.success());
    let again = alk(&db, &["schedules", "remove", "daily"]);
    assert!(!again.status.success());
    assert!(
        stderr(&again).contains("not found") || stderr(&again).contains("never registered"),
        "{}",
        stderr(&again)
    );
}

#[test]
fn queues_pause_and_resume() {
    let (_dir, db) = temp_db();
    enqueue(&db, "mail", &[]);
    assert_eq!(alk_json(&db, &["queues", "pause", "mail"])["changed"], true);
    assert_eq!(
        alk_json(&db, &["queues", "pause", "mail"])["changed"],
        false
    );
    assert_eq!(
        alk_json(&db, &["queues", "paused"]),
        serde_json::json!(["mail"])
    );
    assert_eq!(stdout(&alk(&db, &["queues", "paused"])), "mail\n");
    assert_eq!(
        stdout(&alk(&db, &["queues", "resume", "mail"])),
        "resumed mail\n"
    );
    assert_eq!(alk_json(&db, &["queues", "paused"]), serde_json::json!([]));
    let bad = alk(&db, &["queues", "pause", ""]);
    assert!(!bad.status.success());
    assert!(stderr(&bad).contains("queue name"), "{}", stderr(&bad));
}

#[tokio::test(flavor = "multi_thread")]
async fn stats_show_paused_queues_and_unknown_queues_are_named() {
    let (_dir, db) = temp_db();
    enqueue(&db, "mail", &[]);
    // A queue whose only job finished still exists (its throughput).
    enqueue(&db, "done", &[]);
    {
        let store = Store::open(&db).await.expect("open");
        let q = store.queue("done");
        let jobs = q.claim("test", 10).await.expect("claim");
        assert_eq!(jobs.len(), 1);
        q.ack(vec![jobs[0].claim()]).await.expect("ack");
    }
    let unknown = "no such queue yet";
    let paused = alk(&db, &["queues", "pause", "idle"]);
    assert!(paused.status.success(), "{paused:?}");
    assert!(stderr(&paused).contains(unknown), "{}", stderr(&paused));
    let again = alk(&db, &["queues", "pause", "idle"]);
    assert!(!stderr(&again).contains(unknown), "{}", stderr(&again));

    let rows = alk_json(&db, &["stats"]);
    let flags: Vec<(String, bool)> = rows
        .as_array()
        .expect("array")
        .iter()
        .map(|r| {
            (
                r["queue"].as_str().expect("queue").to_string(),
                r["paused"].as_bool().expect("paused"),
            )
        })
        .collect();
    assert_eq!(
        flags,
        vec![
            ("done".to_string(), false),
            ("idle".to_string(), true),
            ("mail".to_string(), false)
        ]
    );
    let table = stdout(&alk(&db, &["stats"]));
    assert!(
        table.lines().next().unwrap_or("").ends_with("paused"),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("idle ") && l.ends_with("yes")),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("mail ") && l.ends_with("no")),
        "{table}"
    );

    for args in [
        &["stats", "nosuch"][..],
        &["stats", "nosuch", "--json"],
        &["jobs", "--queue", "nosuch"],
        &["jobs", "--queue", "nosuch", "--json"],
    ] {
        let out = alk(&db, args);
        assert!(out.status.success(), "{args:?}: {out:?}");
        assert!(stderr(&out).contains(unknown), "{args:?}: {out:?}");
    }
    for args in [
        &["stats", "mail"][..],
        &["stats", "done"],
        &["stats", "idle"],
        &["jobs", "--queue", "mail"],
        &["jobs", "--queue", "done"],
    ] {
        let out = alk(&db, args);
        assert!(out.status.success(), "{args:?}: {out:?}");
        assert!(!stderr(&out).contains(unknown), "{args:?}: {out:?}");
    }
}

/// Every duration flag takes one syntax: a number with a unit, or plain
/// seconds.
#[test]
fn duration_flags_take_units_or_plain_seconds() {
    let (_dir, db) = temp_db();
    for (delay, secs) in [("5m", 300), ("1h 30m", 5400), ("90", 90)] {
        let id = enqueue(&db, "later", &["--delay", delay]);
        let job = alk_json(&db, &["job", &id.to_string()]);
        let run_at = job["run_at"].as_i64().expect("run_at");
        let created = job["created_at"].as_i64().expect("created_at");
        assert!(
            (secs - 1..=secs + 1).contains(&(run_at - created)),
            "--delay {delay}: {job}"
        );
    }
    let bad = alk(&db, &["enqueue", "later", "{}", "--delay", "5 parsecs"]);
    assert!(!bad.status.success());
    assert!(stderr(&bad).contains("plain seconds"), "{}", stderr(&bad));
    let bad = alk(
        &db,
        &[
            "worker",
            "--queue",
            "q",
            "--exec",
            "true",
            "--timeout",
            "soon",
        ],
    );
    assert!(!bad.status.success());
    assert!(stderr(&bad).contains("plain seconds"), "{}", stderr(&bad));
    let long = alk(
        &db,
        &[
            "worker",
            "--queue",
            "q",
            "--exec",
            "true",
            "--timeout",
            "400d",
        ],
    );
    assert!(!long.status.success());
    assert!(
        stderr(&long).contains("at most 365 days"),
        "{}",
        stderr(&long)
    );
}

/// SQLite hands out job ids in blocks of 1,024 per process: where ids are
/// listed, the help says why they jump.
#[test]
fn jobs_help_explains_id_jumps() {
    let (_dir, db) = temp_db();
    let help = stdout(&alk(&db, &["jobs", "--help"]));
    assert!(help.contains("blocks of 1,024"), "{help}");
}

#[tokio::test(flavor = "multi_thread")]
async fn job_states_show_retryable_and_scheduled_and_no_stale_claim() {
    let (_dir, db) = temp_db();
    let hour = Duration::from_secs(3600);
    let (scheduled, retryable, dead, completed) = {
        let store = Store::open(&db).await.expect("open");
        let q = store.queue("q");
        let retryable = q.enqueue(&1).await.expect("enqueue").id();
        let dead = q.enqueue(&2).await.expect("enqueue").id();
        for job in q.claim("w", 2).await.expect("claim") {
            if job.id == retryable {
                q.retry_after(job.claim(), "try later", hour)
                    .await
                    .expect("retry");
            } else {
                assert!(q.fail(job.claim(), "boom").await.expect("fail"));
            }
        }
        let scheduled = q
            .enqueue_with(&3, alkstore::queue::EnqueueOpts::default().delay(hour))
            .await
            .expect("enqueue")
            .id();
        let kept = store.queue_with(
            "kept",
            QueueOpts {
                keep_completed: Some(hour),
                ..QueueOpts::default()
            },
        );
        kept.enqueue(&4).await.expect("enqueue");
        let job = kept.claim("w", 1).await.expect("claim").remove(0);
        assert_eq!(kept.ack(vec![job.claim()]).await.expect("ack"), vec![true]);
        (scheduled, retryable, dead, job.id)
    };
    let state = |id: i64| alk_json(&db, &["job", &id.to_string()])["state"].clone();
    assert_eq!(state(retryable), "retryable", "waits out a backoff");
    assert_eq!(state(scheduled), "scheduled", "first run due later");
    let text = stdout(&alk(&db, &["job", &retryable.to_string()]));
    assert!(text.contains("state:            retryable"), "{text}");
    let table = stdout(&alk(&db, &["jobs", "--queue", "q"]));
    for (id, want) in [(retryable, "retryable"), (scheduled, "scheduled")] {
        let row = table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(&id.to_string()))
            .unwrap_or_else(|| panic!("row {id}: {table}"));
        assert_eq!(row.split_whitespace().nth(2), Some(want), "{row}");
    }
    for id in [dead, completed, retryable] {
        let job = alk_json(&db, &["job", &id.to_string()]);
        assert!(job["claim_expires_at"].is_null(), "no claim held: {job}");
        let text = stdout(&alk(&db, &["job", &id.to_string()]));
        assert!(!text.contains("claim_expires_at"), "{text}");
    }
}

/// Tags and metadata from `alk enqueue`, shown by `alk job`, filtered by
/// `alk jobs --tag` and `alk dead list --tag`; a bad `--meta` is refused
/// before anything is written.
#[test]
fn tags_and_meta_from_enqueue_to_listings() {
    let (_dir, db) = temp_db();
    let vip = enqueue(
        &db,
        "mail",
        &[
            "--tag", "vip", "--tag", "eu", "--meta", "by=ops", "--meta", "n=3",
        ],
    );
    let plain = enqueue(&db, "mail", &["--tag", "eu"]);
    let job = alk_json(&db, &["job", &vip.to_string()]);
    assert_eq!(job["tags"], serde_json::json!(["vip", "eu"]));
    assert_eq!(job["meta"], serde_json::json!({ "by": "ops", "n": 3 }));
    let shown = stdout(&alk(&db, &["job", &vip.to_string()]));
    assert!(shown.contains("tags:             vip, eu"), "{shown}");
    let table = stdout(&alk(&db, &["jobs", "--tag", "vip"]));
    assert!(table.contains("[vip,eu] {}"), "{table}");
    let ids = |v: Value| -> Vec<i64> {
        v.as_array()
            .expect("a list")
            .iter()
            .map(|j| j["id"].as_i64().expect("id"))
            .collect()
    };
    assert_eq!(ids(alk_json(&db, &["jobs", "--tag", "eu"])), [vip, plain]);
    assert_eq!(ids(alk_json(&db, &["jobs", "--tag", "vip"])), [vip]);
    assert!(ids(alk_json(&db, &["dead", "list", "--tag", "vip"])).is_empty());
    let bad = alk(&db, &["enqueue", "mail", "{}", "--meta", "no-equals-sign"]);
    assert!(!bad.status.success());
    assert!(stderr(&bad).contains("KEY=VALUE"), "{}", stderr(&bad));
    let bad = alk(&db, &["enqueue", "mail", "{}", "--tag", ""]);
    assert!(!bad.status.success());
    assert_eq!(ids(alk_json(&db, &["jobs", "--queue", "mail"])).len(), 2);
}

/// `alk streams tail --last N` prints the newest N events, oldest first.
#[test]
fn tail_last_prints_the_newest_events() {
    let (_dir, db) = temp_db();
    for i in 0..6 {
        let payload = format!("{{\"i\":{i}}}");
        assert!(alk(&db, &["streams", "publish", "s", &payload])
            .status
            .success());
    }
    let out = alk(&db, &["streams", "tail", "s", "--last", "3", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let seen: Vec<i64> = stdout(&out)
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("a JSON line");
            let payload: Value =
                serde_json::from_str(v["payload"].as_str().expect("text")).expect("JSON");
            payload["i"].as_i64().expect("i")
        })
        .collect();
    assert_eq!(seen, [3, 4, 5]);
    let both = alk(&db, &["streams", "tail", "s", "--last", "3", "--from", "1"]);
    assert!(
        !both.status.success(),
        "--last and --from together are refused"
    );
}
