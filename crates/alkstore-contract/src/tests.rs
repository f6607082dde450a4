//! The suite's own checks: every row is registered, and teardown runs
//! whatever the row does.

use std::collections::BTreeSet;
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A row as `(area, sub-area, name)`.
type Row = (String, String, String);

/// Expands the `__areas!` chain into pushes onto `$into`, one per row,
/// instead of tests.
macro_rules! collect_rows {
    (@area [$into:ident] $area:ident { $($body:tt)* }) => {
        $($body)*
    };
    (@rows [$into:ident] $area:ident :: $sub:ident [$($name:ident),* $(,)?]) => {
        $(
            note(&mut $into, stringify!($area), stringify!($sub), stringify!($name));
        )*
    };
    (@places [$into:ident] $area:ident :: $sub:ident [$($name:ident),* $(,)?]) => {
        $(
            note(&mut $into, stringify!($area), stringify!($sub), stringify!($name));
        )*
    };
}

fn note(rows: &mut Vec<Row>, area: &str, sub: &str, name: &str) {
    rows.push((area.to_string(), sub.to_string(), name.to_string()));
}

/// Every row [`contract_suite!`](crate::contract_suite) expands, in order.
fn registered() -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    crate::__areas!(collect_rows, [rows]);
    rows
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).expect("read src dir");
    for entry in entries {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// Every `pub async fn` in `src/` whose signature mentions `Harness` (or
/// `RuntimeHarness`), named by the file it is written in:
/// `src/queues/claim.rs` → `(queues, claim)`.
fn written() -> Vec<Row> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut rows = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("read source");
        let rel = file.strip_prefix(&src).expect("under src");
        let parts: Vec<String> = rel
            .with_extension("")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let (area, sub) = match parts.as_slice() {
            [area, sub] => (area.clone(), sub.clone()),
            _ => (String::new(), parts.join("/")),
        };
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let Some(rest) = line.trim_start().strip_prefix("pub async fn ") else {
                continue;
            };
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let signature: String = lines[i..]
                .join("\n")
                .split('{')
                .next()
                .unwrap_or_default()
                .to_string();
            if !name.is_empty() && signature.contains("Harness") {
                rows.push((area.clone(), sub.clone(), name));
            }
        }
    }
    rows
}

#[test]
fn every_row_is_registered() {
    let registered = registered();
    let written = written();
    assert!(!written.is_empty(), "no rows found under src/");
    let listed: BTreeSet<&Row> = registered.iter().collect();
    let found: BTreeSet<&Row> = written.iter().collect();
    let unlisted: Vec<&&Row> = found.difference(&listed).collect();
    assert!(
        unlisted.is_empty(),
        "rows written but never run (add each to the list at the end of its \
         file, and that file's macro to its area's, and the area's to \
         `__areas!`): {unlisted:?}"
    );
    let stray: Vec<&&Row> = listed.difference(&found).collect();
    assert!(
        stray.is_empty(),
        "rows listed in a file other than their own, or not written as \
         `pub async fn name<H: Harness>`: {stray:?}"
    );
    let mut names = BTreeSet::new();
    for (area, _, name) in &registered {
        assert!(
            names.insert((area, name)),
            "{area}::{name} is listed twice (test names are <area>::<row>)"
        );
    }
}

/// Run `f` to completion on a fresh runtime.
fn block_on<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(f)
}

/// A stand-in harness: its name, and a log that rows and teardown append to.
struct Fake<'a> {
    name: &'static str,
    log: &'a Mutex<Vec<String>>,
}

impl Fake<'_> {
    fn note(&self, what: String) {
        self.log.lock().expect("log").push(what);
    }
}

/// Run a row on a [`Fake`] harness through the same runner the generated
/// tests use; returns the log and the panic message, if any.
fn run(row: for<'h> fn(&'h Fake<'_>) -> crate::RowFuture<'h>) -> (Vec<String>, Option<String>) {
    let log = Mutex::new(Vec::new());
    let harness = Fake {
        name: "fake",
        log: &log,
    };
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        block_on(crate::__run_row(harness, row, |h| async move {
            tokio::task::yield_now().await;
            h.note(format!("teardown {}", h.name));
        }))
    }));
    let message = outcome.err().map(|p| match p.downcast::<String>() {
        Ok(s) => *s,
        Err(p) => p
            .downcast_ref::<&str>()
            .map_or_else(|| "non-string panic".to_string(), |s| s.to_string()),
    });
    let log = log.into_inner().expect("log");
    (log, message)
}

#[test]
fn teardown_runs_after_a_passing_row() {
    let (log, panicked) = run(|h| {
        Box::pin(async move {
            tokio::task::yield_now().await;
            h.note("row".into());
        })
    });
    assert_eq!(log, ["row", "teardown fake"]);
    assert_eq!(panicked, None);
}

#[test]
fn teardown_runs_after_a_panicking_row() {
    let (log, panicked) = run(|h| {
        Box::pin(async move {
            h.note("row".into());
            tokio::task::yield_now().await;
            panic!("row failed on {}", h.name);
        })
    });
    assert_eq!(
        log,
        ["row", "teardown fake"],
        "teardown ran after the panic"
    );
    assert_eq!(
        panicked.as_deref(),
        Some("row failed on fake"),
        "the row's own panic fails the test"
    );
}

#[test]
fn teardown_runs_after_a_failed_assertion_before_any_await() {
    let (log, panicked) = run(|h| {
        Box::pin(async move {
            assert_eq!(h.name, "another", "wrong harness");
        })
    });
    assert_eq!(log, ["teardown fake"]);
    assert!(
        panicked
            .as_deref()
            .is_some_and(|m| m.contains("wrong harness")),
        "{panicked:?}"
    );
}
