//! The README's quickstart works for this repository: its dependency line
//! names this crate (crates.io's `alkstore` is another project), and its
//! code is `examples/quickstart.rs`, which builds with the crate.

use std::path::Path;

/// The text of the README's section `## {title}`.
fn section(readme: &str, title: &str) -> String {
    let start = readme
        .find(&format!("\n## {title}\n"))
        .unwrap_or_else(|| panic!("README has a {title} section"));
    let rest = &readme[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |i| i + 3);
    rest[..end].to_string()
}

/// The body of the first fenced block of `lang` in `text`.
fn block(text: &str, lang: &str) -> String {
    let fence = format!("```{lang}\n");
    let start = text.find(&fence).expect("a code block") + fence.len();
    let len = text[start..].find("```").expect("a closed block");
    text[start..start + len].to_string()
}

#[test]
fn the_quickstart_depends_on_this_repository_and_builds() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let quickstart = section(&readme, "Quickstart");

    let toml = block(&quickstart, "toml");
    let line = toml
        .lines()
        .find(|l| l.starts_with("alkstore "))
        .expect("an alkstore dependency line");
    assert!(
        line.contains("path = ") || line.contains("git = "),
        "a registry version resolves to crates.io's unrelated alkstore: {line}"
    );
    if let Some(path) = line.split("path = \"").nth(1) {
        let path = path.split('"').next().expect("a quoted path");
        assert!(
            path.ends_with("crates/alkstore"),
            "the path names this repository's crate: {line}"
        );
        let manifest = std::fs::read_to_string(root.join("crates/alkstore/Cargo.toml"))
            .expect("the crate's manifest");
        assert!(manifest.contains("name = \"alkstore\""), "{manifest}");
    }
    assert!(
        quickstart.contains("not on crates.io"),
        "the quickstart says the crates are not on crates.io under these names"
    );

    let example = std::fs::read_to_string(root.join("crates/alkstore/examples/quickstart.rs"))
        .expect("examples/quickstart.rs");
    let code: Vec<&str> = example
        .lines()
        .skip_while(|l| l.starts_with("//!"))
        .collect();
    // Compared without whitespace: rustfmt may wrap the file's lines.
    let squeeze = |s: &str| s.split_whitespace().collect::<String>();
    assert_eq!(
        squeeze(&block(&quickstart, "rust")),
        squeeze(&code.join("\n")),
        "the README's quickstart code is examples/quickstart.rs, so it builds"
    );
}
