//! Plain formatting: times (RFC 3339 in UTC, relative), payloads (text,
//! base64, previews) and URLs with their passwords masked.

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, in unix seconds (the machine's clock; only used to say "3s ago").
pub(crate) fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// A unix time as RFC 3339 in UTC to the second (`2024-05-01T12:00:00Z`).
/// Times before 1970 or after 9999, which the formatter cannot write, show
/// as `@<seconds>`.
pub(crate) fn rfc3339(unix: i64) -> String {
    match u64::try_from(unix) {
        Ok(secs) if secs <= 253_402_300_799 => {
            let t = UNIX_EPOCH + std::time::Duration::from_secs(secs);
            humantime::format_rfc3339_seconds(t).to_string()
        }
        _ => format!("@{unix}"),
    }
}

/// A duration in seconds, in at most two units: `45s`, `5m 3s`, `5m`,
/// `2h 10m`, `3d 4h`.
pub(crate) fn duration(secs: i64) -> String {
    let s = secs.unsigned_abs();
    let (d, h, m, sec) = (s / 86_400, s % 86_400 / 3600, s % 3600 / 60, s % 60);
    let (big, small) = if d > 0 {
        ((d, 'd'), (h, 'h'))
    } else if h > 0 {
        ((h, 'h'), (m, 'm'))
    } else if m > 0 {
        ((m, 'm'), (sec, 's'))
    } else {
        return format!("{sec}s");
    };
    if small.0 == 0 {
        format!("{}{}", big.0, big.1)
    } else {
        format!("{}{} {}{}", big.0, big.1, small.0, small.1)
    }
}

/// What every duration flag of `alk` takes, for its `--help`.
pub(crate) const DURATION_HELP: &str =
    "a number with a unit (`90s`, `5m`, `1h 30m`, `7d`, `250ms`), or plain seconds (`90`)";

/// Parse a duration flag: plain seconds (`90`) or a number with a unit
/// (`90s`, `5m`, `1h 30m`, `7d`, `250ms`; humantime's syntax). Every
/// duration flag of `alk` takes this one syntax.
pub(crate) fn parse_duration(text: &str) -> std::result::Result<std::time::Duration, String> {
    let text = text.trim();
    if let Ok(secs) = text.parse::<u64>() {
        return Ok(std::time::Duration::from_secs(secs));
    }
    humantime::parse_duration(text).map_err(|e| format!("{e}; expected {DURATION_HELP}"))
}

/// A unix time in milliseconds as unix seconds, the unit of every time in
/// `--json` output (a fraction keeps the milliseconds: `1714564800.25`).
pub(crate) fn unix_seconds_from_ms(ms: i64) -> serde_json::Value {
    if ms % 1000 == 0 {
        serde_json::Value::from(ms / 1000)
    } else {
        serde_json::Value::from(ms as f64 / 1000.0)
    }
}

/// `unix` relative to `now`: `in 5m 3s`, `3s ago`, or `now`.
pub(crate) fn relative(unix: i64, now: i64) -> String {
    let diff = unix.saturating_sub(now);
    match diff {
        0 => "now".into(),
        d if d > 0 => format!("in {}", duration(d)),
        d => format!("{} ago", duration(d)),
    }
}

/// A time for people: RFC 3339 plus how far from now.
pub(crate) fn when(unix: i64, now: i64) -> String {
    format!("{} ({})", rfc3339(unix), relative(unix, now))
}

/// Standard base64 with padding (RFC 4648).
pub(crate) fn base64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A payload as JSON text: the text itself when it is UTF-8 (`utf8`),
/// else base64 (`base64`). Returns `(text, encoding)`.
pub(crate) fn payload_text(payload: &[u8]) -> (String, &'static str) {
    match std::str::from_utf8(payload) {
        Ok(s) => (s.to_string(), "utf8"),
        Err(_) => (base64(payload), "base64"),
    }
}

/// Text for one table cell or detail line: control characters escaped
/// (`\n`, `\0`), cut to `max` characters with `…`.
pub(crate) fn shorten(text: &str, max: usize) -> String {
    let mut out = String::new();
    for (count, c) in text.chars().enumerate() {
        if count == max {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

/// A payload for people: its text shortened, or `<N bytes, binary>`.
pub(crate) fn payload_preview(payload: &[u8], max: usize) -> String {
    match std::str::from_utf8(payload) {
        Ok(s) => shorten(s, max),
        Err(_) => format!("<{} bytes, binary>", payload.len()),
    }
}

/// The password in a URL's user info (`scheme://user:password@host`) or in
/// a `password=` query parameter, if any.
fn passwords(url: &str) -> Vec<&str> {
    let mut found = Vec::new();
    if let Some((_, rest)) = url.split_once("://") {
        let authority = rest.split(['/', '?']).next().unwrap_or("");
        if let Some((userinfo, _)) = authority.rsplit_once('@') {
            if let Some((_, pw)) = userinfo.split_once(':') {
                found.push(pw);
            }
        }
    }
    if let Some((_, query)) = url.split_once('?') {
        for pair in query.split('&') {
            if let Some(pw) = pair.strip_prefix("password=") {
                found.push(pw);
            }
        }
    }
    found.retain(|p| !p.is_empty());
    found
}

/// `text` with every password of `url` replaced by `***`: the last guard
/// before an error or a URL is printed.
pub(crate) fn redact(text: &str, url: &str) -> String {
    let mut out = text.to_string();
    for pw in passwords(url) {
        out = out.replace(pw, "***");
    }
    out
}

/// A store URL fit to print: passwords masked.
pub(crate) fn masked_url(url: &str) -> String {
    redact(&alkstore::url::mask_password(url), url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_rfc3339_in_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(-1), "@-1");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(rfc3339(253_402_300_799), "9999-12-31T23:59:59Z");
        assert_eq!(rfc3339(253_402_300_800), "@253402300800");
    }

    #[test]
    fn relative_times_read_naturally() {
        assert_eq!(relative(100, 100), "now");
        assert_eq!(relative(403, 100), "in 5m 3s");
        assert_eq!(relative(97, 100), "3s ago");
        assert_eq!(duration(2 * 86_400 + 3 * 3600 + 5), "2d 3h");
        assert_eq!(duration(3600 + 600), "1h 10m");
        assert_eq!(duration(300), "5m");
        assert_eq!(duration(86_400 + 59), "1d");
        assert_eq!(duration(0), "0s");
    }

    #[test]
    fn durations_take_units_or_plain_seconds() {
        use std::time::Duration;
        assert_eq!(parse_duration("300"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h 30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("7d"), Ok(Duration::from_secs(7 * 86_400)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        let bad = parse_duration("5 parsecs").expect_err("unknown unit");
        assert!(bad.contains("plain seconds"), "{bad}");
        assert!(parse_duration("-5").is_err());
    }

    #[test]
    fn millisecond_times_become_unix_seconds() {
        assert_eq!(
            unix_seconds_from_ms(1_714_564_800_000),
            serde_json::json!(1_714_564_800)
        );
        assert_eq!(
            unix_seconds_from_ms(1_714_564_800_250),
            serde_json::json!(1_714_564_800.25)
        );
    }

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (plain, coded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), coded);
        }
        assert_eq!(base64(&[0, 0xff, 0xfe]), "AP/+");
    }

    #[test]
    fn payloads_are_text_or_base64() {
        assert_eq!(payload_text(b"{\"a\":1}"), ("{\"a\":1}".into(), "utf8"));
        assert_eq!(payload_text(&[0xff]), ("/w==".into(), "base64"));
        assert_eq!(payload_preview(&[0xff, 0], 10), "<2 bytes, binary>");
        assert_eq!(shorten("a\nb\0c", 10), "a\\nb\\0c");
        assert_eq!(shorten("abcdef", 3), "abc…");
    }

    #[test]
    fn passwords_never_print() {
        let url = "postgres://u:s3cret@h:5432/d?schema=x";
        assert_eq!(masked_url(url), "postgres://u:***@h:5432/d?schema=x");
        assert_eq!(
            redact(&format!("cannot open {url}"), url),
            "cannot open postgres://u:***@h:5432/d?schema=x"
        );
        let url = "postgres://u@h/d?password=hunter2&schema=x";
        assert_eq!(masked_url(url), "postgres://u@h/d?password=***&schema=x");
        assert_eq!(masked_url("sqlite://a.db"), "sqlite://a.db");
    }
}
