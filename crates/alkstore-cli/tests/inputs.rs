//! The CLI's payload inputs under arbitrary bytes, through the real `alk`
//! binary (a binary crate is no fuzz target: proptest drives the process
//! instead). Any payload given as an argument, a file or stdin, to
//! `enqueue` or `streams publish`, is stored (valid JSON, or anything with
//! `--raw`) or refused with exit code 1 and a message naming the payload;
//! never a panic, and a refused one writes nothing.

mod common;

use proptest::prelude::*;

/// How the payload reaches `alk`.
#[derive(Debug, Clone)]
enum Via {
    Argument,
    File,
    Stdin,
}

/// Bytes that are sometimes JSON: arbitrary ones, arbitrary text, and
/// JSON values mangled a little.
fn payloads() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..64),
        ".{0,40}".prop_map(String::into_bytes),
        (
            prop_oneof![
                Just("{\"a\": 1}".to_string()),
                Just("[1, 2.5, \"x\", null, true]".to_string()),
                Just("\"text\"".to_string()),
                Just("12345678901234567890123".to_string()),
                Just("{\"deep\": [[[[{}]]]]}".to_string()),
            ],
            0usize..24,
            any::<u8>(),
        )
            .prop_map(|(json, at, byte)| {
                let mut b = json.into_bytes();
                if at < b.len() && byte % 2 == 0 {
                    b[at] = byte;
                }
                b
            }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("ALKSTORE_CLI_INPUT_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(48),
        ..ProptestConfig::default()
    })]

    #[test]
    fn any_payload_is_stored_or_refused_clearly(
        bytes in payloads(),
        via in prop_oneof![Just(Via::Argument), Just(Via::File), Just(Via::Stdin)],
        publish in any::<bool>(),
        raw in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().expect("tmp");
        let db = format!("sqlite://{}", dir.path().join("in.db").display());
        let mut args: Vec<String> = if publish {
            vec!["streams".into(), "publish".into(), "s".into()]
        } else {
            vec!["enqueue".into(), "q".into()]
        };
        if raw {
            args.push("--raw".into());
        }
        let mut stdin: &[u8] = &[];
        match via {
            Via::Argument => match std::str::from_utf8(&bytes) {
                // An argument is text without NUL (the OS's rule).
                Ok(text) if !text.contains('\0') && !text.starts_with('-') => {
                    args.push(text.to_string());
                }
                _ => return Ok(()),
            },
            Via::File => {
                let path = dir.path().join("payload.bin");
                std::fs::write(&path, &bytes).expect("payload file");
                args.push("--payload-file".into());
                args.push(path.display().to_string());
            }
            Via::Stdin => {
                args.push("--payload-file".into());
                args.push("-".into());
                stdin = &bytes;
            }
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = common::alk_stdin(&db, &args, stdin);
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        prop_assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        let is_json = serde_json::from_slice::<serde_json::Value>(&bytes).is_ok();
        if raw || is_json {
            prop_assert!(out.status.success(), "{args:?} refused: {stderr}");
        } else {
            prop_assert_eq!(out.status.code(), Some(1), "{:?}: {}", args, stderr);
            prop_assert!(stderr.contains("payload"), "{args:?}: {stderr}");
            // Refused before the store was opened: nothing was created.
            prop_assert!(!dir.path().join("in.db").exists(), "{:?} created a store", args);
        }
    }
}
