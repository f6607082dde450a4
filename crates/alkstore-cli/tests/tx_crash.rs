//! Transactional handlers in separate OS processes, through kills and a
//! freeze: job workers whose handler inserts a business row and completes
//! the job in the same transaction are SIGKILLed at random moments and
//! restarted; consumer-group workers doing the same per event (with the
//! bucket's checkpoint) are SIGKILLed and restarted too, and one is frozen
//! (SIGSTOP) past its lease's TTL and thawed. At the end every job and
//! every event has exactly one business row, and each key's rows were
//! inserted in offset order.

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use alkstore::{queue::QueueOpts, Store, StoreUrl};

mod common;
use common::terminate;

const JOBS: usize = 3_000;
const EVENTS: usize = 3_000;
const KEYS: usize = 60;
const BUCKETS: u32 = 8;
const TTL_MS: u64 = 2_000;

/// A small xorshift generator: the kill moments, reproducible from the
/// seed printed at the start.
struct Rng(u64);

impl Rng {
    fn new() -> Rng {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos().into())
            .unwrap_or(1)
            | 1;
        eprintln!("kill schedule seed {seed}");
        Rng(seed)
    }

    /// A duration in `lo..hi` milliseconds.
    fn ms(&mut self, lo: u64, hi: u64) -> Duration {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        Duration::from_millis(lo + self.0 % (hi - lo))
    }
}

/// The business table of the store at `db`, and the SQL that makes it.
fn business_table(db: &str) -> (String, String) {
    match StoreUrl::parse(db).expect("url") {
        StoreUrl::Sqlite { .. } => (
            "business".into(),
            "CREATE TABLE business (id INTEGER PRIMARY KEY, kind TEXT NOT NULL, \
             ref INTEGER NOT NULL, key TEXT NOT NULL)"
                .into(),
        ),
        StoreUrl::Postgres { schema, .. } => {
            let table = format!(
                "{}.business",
                alkstore::postgres::schema::quote_identifier(&schema)
            );
            let ddl = format!(
                "CREATE TABLE {table} (id BIGSERIAL PRIMARY KEY, kind TEXT NOT NULL, \
                 ref BIGINT NOT NULL, key TEXT NOT NULL)"
            );
            (table, ddl)
        }
    }
}

/// Run `sql` (no rows) in a transaction of the store's, committed.
async fn execute(store: &Store, sql: &str) {
    let mut tx = store.begin().await.expect("begin");
    if let Some(conn) = tx.sqlite() {
        conn.execute_batch(sql).expect("sql");
    } else if let Some(client) = tx.postgres() {
        client.batch_execute(sql).await.expect("sql");
    }
    tx.commit().await.expect("commit");
}

/// Every committed business row, `(kind, ref, key)`, in insertion order.
async fn rows(store: &Store, table: &str) -> Vec<(String, i64, String)> {
    let sql = format!("SELECT kind, ref, key FROM {table} ORDER BY id");
    let mut tx = store.begin().await.expect("begin");
    let rows = if let Some(conn) = tx.sqlite() {
        let mut stmt = conn.prepare(&sql).expect("prepare");
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .expect("query");
        rows.collect::<Result<Vec<_>, _>>().expect("rows")
    } else if let Some(client) = tx.postgres() {
        client
            .query(&sql, &[])
            .await
            .expect("query")
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect()
    } else {
        Vec::new()
    };
    tx.rollback().await.expect("rollback");
    rows
}

fn alk(db: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_alk"));
    cmd.args(["--db", db])
        .env_remove("DATABASE_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

fn job_worker(db: &str, table: &str) -> Child {
    alk(db)
        .args(["test-worker", "--queue", "txcrash", "--concurrency", "8"])
        .args(["--sleep-ms", "1", "--tx-table", table])
        .spawn()
        .expect("spawn alk test-worker")
}

fn group_worker(db: &str, table: &str, name: &str) -> Child {
    alk(db)
        .args(["test-group-worker", "--group", "proj", "--stream", "orders"])
        .args(["--buckets", &BUCKETS.to_string(), "--name", name])
        .args(["--ttl-ms", &TTL_MS.to_string(), "--heartbeat-ms", "300"])
        .args(["--tx-table", table])
        .spawn()
        .expect("spawn alk test-group-worker")
}

/// Send `signal` (`STOP`, `CONT`) to `child`.
fn signal(child: &Child, signal: &str) {
    let sent = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(child.id().to_string())
        .status()
        .expect("kill");
    assert!(sent.success(), "kill -{signal}");
}

fn kill_nine(mut child: Child) {
    child.kill().expect("SIGKILL");
    let _ = child.wait();
}

/// The test's children, thawed and killed if it fails while they run.
#[derive(Default)]
struct Children(Vec<Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for mut child in self.0.drain(..) {
            // No assertion here: this may run while a failure unwinds.
            let _ = Command::new("kill")
                .arg("-CONT")
                .arg(child.id().to_string())
                .status();
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

async fn exactly_once_through_kills_and_a_freeze(db: String) {
    let store = Store::open(&db).await.expect("open");
    let (table, ddl) = business_table(&db);
    execute(&store, &ddl).await;
    let q = store.queue_with(
        "txcrash",
        QueueOpts {
            visibility_timeout: Duration::from_secs(2),
            ..QueueOpts::default()
        },
    );
    let mut jobs = BTreeSet::new();
    let mut rng = Rng::new();
    let mut steady = Children::default();
    steady.0.push(job_worker(&db, &table));
    steady.0.push(group_worker(&db, &table, "steady"));
    let frozen = group_worker(&db, &table, "frozen");
    steady.0.push(frozen);

    // Enqueue the jobs and publish the events in chunks while the workers
    // run; meanwhile kill a job worker and a group worker at random
    // moments and start new ones.
    let stream = store.stream("orders");
    let mut key_of: BTreeMap<i64, String> = BTreeMap::new();
    let (mut job_victim, mut group_victim) = (
        Some(job_worker(&db, &table)),
        Some(group_worker(&db, &table, "victim-0")),
    );
    let mut kills = 0;
    let rounds = EVENTS.div_ceil(250);
    for (round, chunk) in (0..EVENTS).collect::<Vec<_>>().chunks(250).enumerate() {
        let share = JOBS / rounds;
        let enqueued = q
            .enqueue_batch(round * share..(round + 1) * share)
            .await
            .expect("enqueue");
        jobs.extend(enqueued.iter().map(|j| j.id()));
        let batch: Vec<(Option<String>, Vec<u8>)> = chunk
            .iter()
            .map(|i| (Some(format!("k{}", i % KEYS)), i.to_string().into_bytes()))
            .collect();
        let keys: Vec<String> = batch.iter().filter_map(|(k, _)| k.clone()).collect();
        let offsets = stream.publish_batch_raw(batch).await.expect("publish");
        key_of.extend(offsets.into_iter().zip(keys));
        tokio::time::sleep(rng.ms(100, 400)).await;
        if round % 3 == 1 {
            kill_nine(job_victim.take().expect("job victim"));
            kill_nine(group_victim.take().expect("group victim"));
            kills += 2;
            job_victim = Some(job_worker(&db, &table));
            group_victim = Some(group_worker(&db, &table, &format!("victim-{round}")));
        }
        if round == 6 {
            // Freeze a group worker past its lease's TTL, then thaw it:
            // its buckets move meanwhile, and whatever it was running
            // must not commit.
            let frozen = &steady.0[2];
            signal(frozen, "STOP");
            tokio::time::sleep(Duration::from_millis(TTL_MS + 1_500)).await;
            signal(frozen, "CONT");
        }
    }
    steady.0.extend(job_victim);
    steady.0.extend(group_victim);

    // Until every job is done and every event has its row.
    let events: BTreeSet<i64> = key_of.keys().copied().collect();
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let s = q.stats().await.expect("stats");
        let handled: BTreeSet<i64> = rows(&store, &table)
            .await
            .into_iter()
            .filter(|(kind, _, _)| kind == "event")
            .map(|(_, offset, _)| offset)
            .collect();
        if s.live() == 0 && handled.len() >= events.len() {
            assert_eq!(s.dead, 0, "no job may die");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "after 180 s: jobs {s:?}, {} of {} events",
            handled.len(),
            events.len()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    for child in std::mem::take(&mut steady.0) {
        signal(&child, "CONT");
        terminate(child);
    }

    let all = rows(&store, &table).await;
    let mut job_rows: BTreeMap<i64, usize> = BTreeMap::new();
    let mut event_rows: BTreeMap<i64, usize> = BTreeMap::new();
    let mut last: BTreeMap<&str, i64> = BTreeMap::new();
    for (kind, reference, key) in &all {
        match kind.as_str() {
            "job" => *job_rows.entry(*reference).or_default() += 1,
            "event" => {
                *event_rows.entry(*reference).or_default() += 1;
                assert_eq!(
                    key_of.get(reference).map(String::as_str),
                    Some(key.as_str()),
                    "offset {reference}"
                );
                if let Some(prev) = last.insert(key.as_str(), *reference) {
                    assert!(prev < *reference, "key {key}: {reference} after {prev}");
                }
            }
            other => panic!("row of kind {other}"),
        }
    }
    let twice: Vec<_> = job_rows.iter().filter(|(_, n)| **n != 1).collect();
    assert!(twice.is_empty(), "jobs with other than one row: {twice:?}");
    assert_eq!(
        job_rows.keys().copied().collect::<BTreeSet<_>>(),
        jobs,
        "every job has its row"
    );
    let twice: Vec<_> = event_rows.iter().filter(|(_, n)| **n != 1).collect();
    assert!(
        twice.is_empty(),
        "events with other than one row: {twice:?}"
    );
    assert_eq!(
        event_rows.keys().copied().collect::<BTreeSet<_>>(),
        events,
        "every event has its row"
    );
    eprintln!(
        "{} jobs and {} events, one row each, through {kills} kills and a freeze",
        jobs.len(),
        events.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_tx_handlers_write_exactly_once_through_kills_and_a_freeze() {
    let dir = tempfile::tempdir().expect("tmp");
    exactly_once_through_kills_and_a_freeze(format!(
        "sqlite://{}",
        dir.path().join("txcrash.db").display()
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_tx_handlers_write_exactly_once_through_kills_and_a_freeze() {
    use alkstore_postgres::testing;
    let url = testing::ensure_database(&testing::database_url(), "alkstore_test")
        .await
        .expect("postgres");
    let schema = testing::unique_schema("txcrash");
    exactly_once_through_kills_and_a_freeze(format!("{url}?schema={schema}")).await;
    testing::drop_schema(&url, &schema).await.expect("drop");
}
