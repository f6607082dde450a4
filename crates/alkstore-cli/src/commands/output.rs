//! How `alk` shows things: tables and detail views for people, one JSON
//! document for scripts, and the helpers both use (times, payloads, URLs).
//!
//! Every command builds its whole output as a `String` and hands it to
//! [`emit`], so a closed pipe (`alk jobs | head`) ends the command quietly
//! instead of panicking inside `println!`.

use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use alkstore::{Error, JobInfo, JobState, QueueStats, Result, SweepReport};
use serde_json::{json, Value};

/// Append one formatted line to a `String` (infallible, unlike `writeln!`
/// whose `fmt::Result` would need handling at every call).
macro_rules! outln {
    ($out:expr) => {
        $out.push('\n')
    };
    ($out:expr, $($arg:tt)*) => {{
        $out.push_str(&format!($($arg)*));
        $out.push('\n');
    }};
}

/// Write `bytes` to stdout and flush. A reader that went away (broken pipe)
/// is not an error: the output was simply not wanted any more.
pub fn emit(bytes: &[u8]) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Error::invalid("stdout", e)),
    }
}

/// One JSON document, pretty-printed, with a final newline.
pub fn json_text(value: &Value) -> String {
    let mut s = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    s.push('\n');
    s
}

/// Progress for long operations goes to stderr, so stdout stays the result.
/// A closed stderr is ignored (there is nobody to tell).
pub fn progress(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Now, in unix seconds (the machine's clock; only used to say "3s ago").
pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// A unix time as RFC 3339 in UTC to the second (`2024-05-01T12:00:00Z`).
/// Years outside 0000–9999, which RFC 3339 cannot write, show as
/// `@<seconds>`.
pub fn rfc3339(unix: i64) -> String {
    let days = unix.div_euclid(86_400);
    let secs = unix.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    if !(0..=9999).contains(&y) {
        return format!("@{unix}");
    }
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

/// Proleptic Gregorian date of a day count since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// A duration in seconds, in at most two units: `45s`, `5m 3s`, `2h 10m`,
/// `3d 4h`.
pub fn duration(secs: i64) -> String {
    let s = secs.unsigned_abs();
    let (d, h, m, sec) = (s / 86_400, s % 86_400 / 3600, s % 3600 / 60, s % 60);
    if d > 0 {
        format!("{d}d {h}h")
    } else if h > 0 {
        format!("{h}h {m}m")
    } else if m > 0 {
        format!("{m}m {sec}s")
    } else {
        format!("{sec}s")
    }
}

/// `unix` relative to `now`: `in 5m 3s`, `3s ago`, or `now`.
pub fn relative(unix: i64, now: i64) -> String {
    let diff = unix.saturating_sub(now);
    match diff {
        0 => "now".into(),
        d if d > 0 => format!("in {}", duration(d)),
        d => format!("{} ago", duration(d)),
    }
}

/// A time for people: RFC 3339 plus how far from now.
pub fn when(unix: i64, now: i64) -> String {
    format!("{} ({})", rfc3339(unix), relative(unix, now))
}

/// Standard base64 with padding (RFC 4648).
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let sym = |n: u32| char::from(ALPHABET[(n & 63) as usize]);
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = |i: usize| u32::from(chunk.get(i).copied().unwrap_or(0));
        let n = (b(0) << 16) | (b(1) << 8) | b(2);
        out.push(sym(n >> 18));
        out.push(sym(n >> 12));
        out.push(if chunk.len() > 1 { sym(n >> 6) } else { '=' });
        out.push(if chunk.len() > 2 { sym(n) } else { '=' });
    }
    out
}

/// A payload as JSON text: the text itself when it is UTF-8 (`utf8`),
/// else base64 (`base64`). Returns `(text, encoding)`.
pub fn payload_text(payload: &[u8]) -> (String, &'static str) {
    match std::str::from_utf8(payload) {
        Ok(s) => (s.to_string(), "utf8"),
        Err(_) => (base64(payload), "base64"),
    }
}

/// Text for one table cell or detail line: control characters escaped
/// (`\n`, `\0`), cut to `max` characters with `…`.
pub fn shorten(text: &str, max: usize) -> String {
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
pub fn payload_preview(payload: &[u8], max: usize) -> String {
    match std::str::from_utf8(payload) {
        Ok(s) => shorten(s, max),
        Err(_) => format!("<{} bytes, binary>", payload.len()),
    }
}

/// When a job finished: its death (dead jobs) or its ack (completed jobs).
fn finished_at(j: &JobInfo, state: JobState) -> Option<i64> {
    if j.state == state {
        j.died_at
    } else {
        None
    }
}

/// One job as a JSON object: every field, times as unix seconds, and the
/// whole payload (see [`payload_text`]).
pub fn job_json(j: &JobInfo) -> Value {
    let (payload, encoding) = payload_text(&j.payload);
    let errors: Vec<Value> = j
        .errors
        .iter()
        .map(|e| json!({ "attempt": e.attempt, "at": e.at, "error": e.error }))
        .collect();
    json!({
        "id": j.id,
        "queue": j.queue,
        "state": j.state.as_str(),
        "priority": j.priority,
        "attempts": j.attempts,
        "max_attempts": j.max_attempts,
        "run_at": j.run_at,
        "created_at": j.created_at,
        "expires_at": j.expires_at,
        "worker": j.worker,
        "claim_expires_at": j.claim_expires_at,
        "unique_key": j.unique_key,
        "cancel_requested": j.cancel_requested,
        "last_error": j.last_error,
        "errors": errors,
        "dead_reason": j.dead_reason,
        "died_at": finished_at(j, JobState::Dead),
        "completed_at": finished_at(j, JobState::Completed),
        "payload_bytes": j.payload.len(),
        "payload": payload,
        "payload_encoding": encoding,
    })
}

/// A list of jobs as one JSON array.
pub fn jobs_json(jobs: &[JobInfo]) -> Value {
    Value::Array(jobs.iter().map(job_json).collect())
}

/// Live or completed jobs as a table.
pub fn jobs_table(jobs: &[JobInfo]) -> String {
    let mut out = String::new();
    outln!(
        out,
        "{:>10} {:<16} {:<10} {:>5} {:>8} {:<20}  payload",
        "id",
        "queue",
        "state",
        "prio",
        "attempts",
        "run_at"
    );
    for j in jobs {
        outln!(
            out,
            "{:>10} {:<16} {:<10} {:>5} {:>8} {:<20}  {}",
            j.id,
            j.queue,
            j.state.as_str(),
            j.priority,
            format!("{}/{}", j.attempts, j.max_attempts),
            rfc3339(j.run_at),
            payload_preview(&j.payload, 60)
        );
    }
    out
}

/// Dead letters as a table, with why and when they died and their last
/// error.
pub fn dead_table(jobs: &[JobInfo]) -> String {
    let mut out = String::new();
    outln!(
        out,
        "{:>10} {:<16} {:<10} {:>8} {:<20} {:<40}  payload",
        "id",
        "queue",
        "reason",
        "attempts",
        "died_at",
        "error"
    );
    for j in jobs {
        outln!(
            out,
            "{:>10} {:<16} {:<10} {:>8} {:<20} {:<40}  {}",
            j.id,
            j.queue,
            j.dead_reason.as_deref().unwrap_or("-"),
            format!("{}/{}", j.attempts, j.max_attempts),
            j.died_at.map(rfc3339).unwrap_or_else(|| "-".into()),
            shorten(j.last_error.as_deref().unwrap_or("-"), 39),
            payload_preview(&j.payload, 40)
        );
    }
    out
}

/// Everything about one job, one field a line.
pub fn job_detail(j: &JobInfo, now: i64) -> String {
    let mut out = String::new();
    let state = match &j.dead_reason {
        Some(r) if j.state == JobState::Dead => format!("dead ({r})"),
        _ => j.state.as_str().to_string(),
    };
    outln!(out, "id:               {}", j.id);
    outln!(out, "queue:            {}", j.queue);
    outln!(out, "state:            {state}");
    outln!(out, "priority:         {}", j.priority);
    outln!(out, "attempts:         {}/{}", j.attempts, j.max_attempts);
    outln!(out, "created_at:       {}", when(j.created_at, now));
    outln!(out, "run_at:           {}", when(j.run_at, now));
    if let Some(t) = j.expires_at {
        outln!(out, "expires_at:       {}", when(t, now));
    }
    if let Some(w) = &j.worker {
        outln!(out, "worker:           {w}");
    }
    if let Some(t) = j.claim_expires_at {
        outln!(out, "claim_expires_at: {}", when(t, now));
    }
    if let Some(k) = &j.unique_key {
        outln!(out, "unique_key:       {k}");
    }
    if matches!(j.state, JobState::Pending | JobState::Processing) {
        let flag = if j.cancel_requested { "yes" } else { "no" };
        outln!(out, "cancel_requested: {flag}");
    }
    if let Some(t) = finished_at(j, JobState::Dead) {
        outln!(out, "died_at:          {}", when(t, now));
    }
    if let Some(t) = finished_at(j, JobState::Completed) {
        outln!(out, "completed_at:     {}", when(t, now));
    }
    if !j.errors.is_empty() {
        outln!(out, "errors:");
        for e in &j.errors {
            outln!(
                out,
                "  attempt {} at {}: {}",
                e.attempt,
                rfc3339(e.at),
                shorten(&e.error, 2000)
            );
        }
    } else if let Some(e) = &j.last_error {
        outln!(out, "last_error:       {}", shorten(e, 2000));
    }
    outln!(
        out,
        "payload:          {} bytes: {}",
        j.payload.len(),
        payload_preview(&j.payload, 200)
    );
    if std::str::from_utf8(&j.payload).is_err() || j.payload.len() > 200 {
        outln!(
            out,
            "                  (alk job {} --payload writes it all)",
            j.id
        );
    }
    out
}

/// Queue counts as one JSON array (one object per queue, raw numbers).
pub fn stats_json(stats: &[QueueStats]) -> Value {
    Value::Array(
        stats
            .iter()
            .map(|s| {
                json!({
                    "queue": s.queue,
                    "ready": s.ready,
                    "scheduled": s.scheduled,
                    "processing": s.processing,
                    "expired_claims": s.expired_claims,
                    "expired": s.expired,
                    "dead": s.dead,
                    "completed": s.completed,
                    "oldest_ready_age_s": s.oldest_ready_age_s,
                })
            })
            .collect(),
    )
}

/// Queue counts as a table.
pub fn stats_table(stats: &[QueueStats]) -> String {
    let mut out = String::new();
    let row = |out: &mut String, cells: [&str; 9]| {
        let [q, ready, sched, proc_, claims, expired, dead, done, oldest] = cells;
        outln!(
            out,
            "{q:<24} {ready:>9} {sched:>9} {proc_:>10} {claims:>14} {expired:>7} {dead:>8} {done:>9} {oldest:>12}"
        );
    };
    row(
        &mut out,
        [
            "queue",
            "ready",
            "scheduled",
            "processing",
            "expired_claims",
            "expired",
            "dead",
            "completed",
            "oldest_ready",
        ],
    );
    for s in stats {
        let n = |v: u64| v.to_string();
        let oldest = s.oldest_ready_age_s.map(duration).unwrap_or("-".into());
        row(
            &mut out,
            [
                &s.queue,
                &n(s.ready),
                &n(s.scheduled),
                &n(s.processing),
                &n(s.expired_claims),
                &n(s.expired),
                &n(s.dead),
                &n(s.completed),
                &oldest,
            ],
        );
    }
    out
}

/// A sweep's report as a JSON object.
pub fn sweep_json(r: &SweepReport) -> Value {
    json!({
        "expired": r.expired,
        "rescued": r.rescued,
        "exhausted": r.exhausted,
        "dead_pruned": r.dead_pruned,
        "completed_pruned": r.completed_pruned,
    })
}

/// A sweep's report on one line, every field named.
pub fn sweep_line(r: &SweepReport) -> String {
    format!(
        "expired {} rescued {} exhausted {} dead_pruned {} completed_pruned {}\n",
        r.expired, r.rescued, r.exhausted, r.dead_pruned, r.completed_pruned
    )
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
pub fn redact(text: &str, url: &str) -> String {
    let mut out = text.to_string();
    for pw in passwords(url) {
        out = out.replace(pw, "***");
    }
    out
}

/// A store URL fit to print: passwords masked.
pub fn masked_url(url: &str) -> String {
    redact(&alkstore::url::mask_password(url), url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_rfc3339_in_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(-1), "1969-12-31T23:59:59Z");
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
