//! Fuzz the store-URL parser and its helpers: any text parses or is
//! refused as `InvalidUrl` (never a panic), a refusal never shows a
//! password written in the URL, masking never panics, and a PostgreSQL
//! URL's TLS split and `listen_url` are checked the same way.
//!
//! ```sh
//! cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run store_url -- -max_total_time=60
//! ```

#![no_main]

use alkstore_core::url::{mask_password, split_pg_tls, StoreUrl};
use alkstore_core::Error;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (&str, &str)| {
    let (text, secret) = input;
    // A password of plain characters, written into a URL-shaped text.
    let secret: String = secret.chars().filter(char::is_ascii_alphanumeric).collect();
    for url in [
        text.to_string(),
        format!("postgres://u:{secret}@{text}"),
        format!("postgres://h/d?listen_url=postgres%3A%2F%2Fu%3A{secret}%40{text}"),
    ] {
        match StoreUrl::parse(&url) {
            Ok(_) => {}
            Err(Error::InvalidUrl { url: shown, .. }) => {
                // (Unless the text itself holds the same characters
                // elsewhere: then they are not the password.)
                if secret.len() >= 4 && !text.contains(&secret) {
                    assert!(!shown.contains(&format!(":{secret}@")), "{shown}");
                }
            }
            Err(other) => panic!("not InvalidUrl: {other:?}"),
        }
        let _ = mask_password(&url);
        let _ = split_pg_tls(&url);
    }
});
