//! Schedule specs: `@every <n><s|m|h|d>` and 5- or 6-field cron (through
//! the `croner` crate), evaluated in UTC or a named IANA time zone.

use std::str::FromStr;

use chrono::{DateTime, TimeZone, Utc};
use chrono_tz::Tz;
use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;

use crate::{Error, Result};

/// The longest `@every` interval: ten years (far from any overflow).
const MAX_EVERY_MS: i64 = 10 * 366 * 86_400_000;

/// A parsed, valid schedule spec: when its boundaries fall.
///
/// ```
/// use alkstore_core::schedule::Spec;
///
/// let every = Spec::parse("@every 90s", None).unwrap();
/// assert_eq!(every.next_after(1_000), Some(90_000));
///
/// // 09:30 on weekdays, in Paris: 08:30 UTC in winter.
/// let cron = Spec::parse("30 9 * * 1-5", Some("Europe/Paris")).unwrap();
/// let monday_2026_01_05 = 1_767_571_200_000; // 00:00 UTC
/// assert_eq!(cron.next_after(monday_2026_01_05), Some(monday_2026_01_05 + 8 * 3_600_000 + 30 * 60_000));
///
/// assert!(Spec::parse("@every 0s", None).is_err());
/// assert!(Spec::parse("* * * * * * *", None).is_err());
/// ```
#[derive(Debug, Clone)]
pub struct Spec {
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    /// Every `n` ms, on multiples of `n` since the Unix epoch: the same
    /// boundaries on every host, whenever the schedule was registered.
    Every(i64),
    /// A cron pattern in a zone.
    Cron(Box<Cron>, Tz),
}

fn invalid(spec: &str, why: impl std::fmt::Display) -> Error {
    Error::invalid("schedule spec", format!("{spec:?}: {why}"))
}

impl Spec {
    /// Parse `spec` with an optional IANA time zone name (`Europe/Paris`;
    /// default UTC). Cron takes 5 fields (minute hour day-of-month month
    /// day-of-week) or 6 (seconds first), or a nickname (`@hourly`,
    /// `@daily`, `@weekly`, `@monthly`, `@yearly`). `@every` takes a
    /// positive whole number and one unit of `s`, `m`, `h` or `d`
    /// (boundaries on multiples of the interval since the Unix epoch, so a
    /// zone does not apply).
    ///
    /// Daylight saving, as `croner` documents it: a fixed time that falls
    /// in a spring-forward gap fires at the first valid time after the gap;
    /// one that occurs twice in a fall-back fires once; interval patterns
    /// (`*/15 * * * *`) follow real time through both.
    pub fn parse(spec: &str, tz: Option<&str>) -> Result<Spec> {
        let text = spec.trim();
        if text.is_empty() {
            return Err(invalid(spec, "empty"));
        }
        if let Some(rest) = text.strip_prefix("@every") {
            if tz.is_some() {
                return Err(invalid(
                    spec,
                    "a time zone applies to cron specs only (@every boundaries are multiples of the interval since the Unix epoch)",
                ));
            }
            return Ok(Spec {
                kind: Kind::Every(parse_every(spec, rest)?),
            });
        }
        let zone = match tz {
            None => Tz::UTC,
            Some(name) => Tz::from_str(name).map_err(|_| {
                Error::invalid(
                    "time zone",
                    format!(
                        "{name:?} is not an IANA time zone name (like \"Europe/Paris\" or \"UTC\")"
                    ),
                )
            })?,
        };
        if !text.starts_with('@') {
            let fields = text.split_whitespace().count();
            if !(5..=6).contains(&fields) {
                return Err(invalid(
                    spec,
                    format!("{fields} fields; cron takes 5 (minute hour day-of-month month day-of-week) or 6 (seconds first)"),
                ));
            }
        }
        let cron = parse_cron(text).map_err(|e| invalid(spec, cron_error(text, e)))?;
        let parsed = Spec {
            kind: Kind::Cron(Box::new(cron), zone),
        };
        // A pattern that parses but never matches (`0 0 30 2 *`).
        if parsed.next_after(0).is_none() {
            return Err(invalid(spec, "never matches a real date"));
        }
        Ok(parsed)
    }

    /// The first boundary strictly after `after_ms` (unix ms), or `None`
    /// when there is none in range.
    pub fn next_after(&self, after_ms: i64) -> Option<i64> {
        match &self.kind {
            Kind::Every(n) => after_ms
                .div_euclid(*n)
                .checked_add(1)
                .and_then(|k| k.checked_mul(*n)),
            Kind::Cron(cron, zone) => {
                // Cron boundaries are whole seconds: the next one after the
                // second `after_ms` falls in is the next one after it.
                let at: DateTime<Tz> = Utc
                    .timestamp_millis_opt(after_ms.div_euclid(1_000) * 1_000)
                    .single()?
                    .with_timezone(zone);
                cron.find_next_occurrence(&at, false)
                    .ok()
                    .map(|t| t.timestamp_millis())
            }
        }
    }
}

/// `text` through `croner`: 5 or 6 fields (seconds first), or a nickname.
fn parse_cron(text: &str) -> std::result::Result<Cron, croner::errors::CronError> {
    CronParser::builder()
        .seconds(Seconds::Optional)
        .year(Year::Disallowed)
        .build()
        .parse(text)
}

/// Each cron field's name and what it takes, in order (5 fields: minute
/// first; 6 fields: second first).
const CRON_FIELDS: [(&str, &str); 6] = [
    ("second", "0-59"),
    ("minute", "0-59"),
    ("hour", "0-23"),
    ("day of month", "1-31 (or L, or nW)"),
    ("month", "1-12 or JAN-DEC"),
    (
        "day of week",
        "0-7 (0 and 7 are Sunday) or SUN-SAT (or nL, n#k)",
    ),
];

/// `croner`'s error for `text`, naming the first field that is wrong on
/// its own (every other field set to `*`) and what that field takes.
fn cron_error(text: &str, err: croner::errors::CronError) -> String {
    let fields: Vec<&str> = text.split_whitespace().collect();
    let names = &CRON_FIELDS[CRON_FIELDS.len() - fields.len().min(CRON_FIELDS.len())..];
    for (i, (field, (name, takes))) in fields.iter().zip(names).enumerate() {
        let alone: Vec<&str> = (0..fields.len())
            .map(|j| if j == i { *field } else { "*" })
            .collect();
        if let Err(e) = parse_cron(&alone.join(" ")) {
            return format!(
                "the {name} field (field {}) is {field:?}: {}; the {name} takes {takes}",
                i + 1,
                croner_reason(&e)
            );
        }
    }
    croner_reason(&err)
}

/// `croner`'s message without its "Component error: " prefix and final dot.
fn croner_reason(e: &croner::errors::CronError) -> String {
    let text = e.to_string();
    let text = text.strip_prefix("Component error: ").unwrap_or(&text);
    text.trim_end_matches('.').to_string()
}

/// `@every`'s argument: ` <n><unit>` → milliseconds.
fn parse_every(spec: &str, rest: &str) -> Result<i64> {
    let arg = rest.trim();
    if arg.is_empty() || !rest.starts_with(char::is_whitespace) {
        return Err(invalid(
            spec,
            "expected `@every <n><s|m|h|d>`, like `@every 30s`",
        ));
    }
    let digits = arg.chars().take_while(char::is_ascii_digit).count();
    let (number, unit) = arg.split_at(digits);
    if number.is_empty() {
        return Err(invalid(
            spec,
            "the interval must start with a whole number, like `@every 30s`",
        ));
    }
    let unit_ms: i64 = match unit {
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        "" => return Err(invalid(spec, "missing unit: s, m, h or d")),
        other => {
            return Err(invalid(
                spec,
                format!("unknown unit {other:?}: use s, m, h or d"),
            ))
        }
    };
    let n: i64 = number
        .parse()
        .map_err(|_| invalid(spec, "the interval is too long (at most 10 years)"))?;
    if n == 0 {
        return Err(invalid(spec, "the interval must be positive"));
    }
    match n.checked_mul(unit_ms) {
        Some(ms) if ms <= MAX_EVERY_MS => Ok(ms),
        _ => Err(invalid(spec, "the interval is too long (at most 10 years)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MIN: i64 = 60_000;
    const HOUR: i64 = 60 * MIN;
    /// 2026-01-05 00:00:00 UTC, a Monday.
    const MONDAY: i64 = 1_767_571_200_000;

    fn next(spec: &str, tz: Option<&str>, after: i64) -> i64 {
        Spec::parse(spec, tz)
            .expect("valid")
            .next_after(after)
            .expect("some")
    }

    fn refused(spec: &str, tz: Option<&str>) -> String {
        Spec::parse(spec, tz).expect_err("refused").to_string()
    }

    #[test]
    fn every_falls_on_multiples_since_the_epoch() {
        assert_eq!(next("@every 1s", None, 0), 1_000);
        assert_eq!(next("@every 1s", None, 999), 1_000);
        assert_eq!(next("@every 1s", None, 1_000), 2_000);
        assert_eq!(next("@every 5m", None, MONDAY + 1), MONDAY + 5 * MIN);
        assert_eq!(next("@every 2h", None, MONDAY), MONDAY + 2 * HOUR);
        assert_eq!(next("@every 1d", None, MONDAY - 1), MONDAY);
        assert_eq!(next("@every 1s", None, -1), 0, "before the epoch");
    }

    #[test]
    fn cron_five_and_six_fields_and_nicknames() {
        assert_eq!(next("*/15 * * * *", None, MONDAY), MONDAY + 15 * MIN);
        assert_eq!(next("30 * * * * *", None, MONDAY), MONDAY + 30_000);
        assert_eq!(next("0 9 * * 1", None, MONDAY), MONDAY + 9 * HOUR);
        assert_eq!(
            next("0 9 * * 1", None, MONDAY + 9 * HOUR),
            MONDAY + 7 * 24 * HOUR + 9 * HOUR
        );
        assert_eq!(next("@hourly", None, MONDAY), MONDAY + HOUR);
        assert_eq!(next("@daily", None, MONDAY), MONDAY + 24 * HOUR);
    }

    #[test]
    fn named_zones_and_daylight_saving() {
        // New York is UTC-5 in January.
        assert_eq!(
            next("0 9 * * *", Some("America/New_York"), MONDAY),
            MONDAY + 14 * HOUR
        );
        // 2026-03-08: New York springs forward at 02:00 local (07:00 UTC);
        // 02:30 does not exist that day and fires at the first valid time
        // after the gap, 03:00 EDT = 07:00 UTC.
        let mar_8 = 1_772_928_000_000; // 2026-03-08 00:00 UTC
        assert_eq!(
            next("30 2 * * *", Some("America/New_York"), mar_8),
            mar_8 + 7 * HOUR
        );
        // 2026-11-01: 01:30 local occurs twice; it fires once (the first,
        // 05:30 UTC), and the next firing is the following day.
        let nov_1 = 1_793_491_200_000; // 2026-11-01 00:00 UTC
        let first = next("30 1 * * *", Some("America/New_York"), nov_1);
        assert_eq!(first, nov_1 + 5 * HOUR + 30 * MIN);
        let again = next("30 1 * * *", Some("America/New_York"), first);
        assert!(
            again > nov_1 + 24 * HOUR,
            "fires once on the repeated hour: {again}"
        );
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        assert!(refused("@every 0s", None).contains("positive"));
        assert!(refused("@every 5x", None).contains("unknown unit"));
        assert!(refused("@every 5", None).contains("missing unit"));
        assert!(refused("@every", None).contains("expected"));
        assert!(refused("@every s", None).contains("whole number"));
        assert!(refused("@every -5s", None).contains("whole number"));
        assert!(refused("@every 99999999999d", None).contains("too long"));
        assert!(refused("@every 1s", Some("UTC")).contains("cron specs only"));
        assert!(refused("* * * * * * *", None).contains("7 fields"));
        assert!(refused("* * * *", None).contains("4 fields"));
        assert!(refused("", None).contains("empty"));
        assert!(
            refused("61 * * * *", None).contains("61"),
            "{}",
            refused("61 * * * *", None)
        );
        assert!(refused("* 24 * * *", None).contains("schedule spec"));
        assert!(refused("* * 32 * *", None).contains("schedule spec"));
        assert!(refused("* * * 13 *", None).contains("schedule spec"));
        assert!(refused("0 0 30 2 *", None).contains("never matches"));
        assert!(refused("0 9 * * *", Some("Mars/Olympus")).contains("IANA"));
    }

    #[test]
    fn out_of_range_cron_fields_are_named_with_their_range() {
        for (spec, field, range) in [
            ("61 * * * *", "the minute field (field 1) is \"61\"", "0-59"),
            ("* 24 * * *", "the hour field (field 2) is \"24\"", "0-23"),
            (
                "0 0 32 * *",
                "the day of month field (field 3) is \"32\"",
                "1-31",
            ),
            ("0 0 1 13 *", "the month field (field 4) is \"13\"", "1-12"),
            (
                "0 0 * * 8",
                "the day of week field (field 5) is \"8\"",
                "0-7",
            ),
            (
                "0 0 * * 1-9",
                "the day of week field (field 5) is \"1-9\"",
                "0-7",
            ),
            (
                "60 0 0 * * *",
                "the second field (field 1) is \"60\"",
                "0-59",
            ),
            (
                "0 61 0 * * *",
                "the minute field (field 2) is \"61\"",
                "0-59",
            ),
            (
                "*/5 0 * * MON-FRI,X",
                "the day of week field (field 5)",
                "SUN-SAT",
            ),
        ] {
            let text = refused(spec, None);
            assert!(text.contains(field), "{spec}: {text}");
            assert!(text.contains(range), "{spec}: {text}");
            assert!(!text.contains("Component error"), "{spec}: {text}");
        }
    }

    proptest! {
        /// Any `@every n<unit>` within range parses, and its boundaries are
        /// strictly after the given time, within one interval, on a
        /// multiple of the interval.
        #[test]
        fn every_boundaries_are_the_next_multiple(n in 1_i64..100_000, unit in 0_usize..4, after in -(1_i64 << 45)..(1_i64 << 45)) {
            let (suffix, unit_ms) = [("s", 1_000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000)][unit];
            let spec = format!("@every {n}{suffix}");
            let parsed = Spec::parse(&spec, None);
            if n * unit_ms > MAX_EVERY_MS {
                prop_assert!(parsed.is_err());
            } else {
                let b = parsed.expect("valid").next_after(after).expect("some");
                let every = n * unit_ms;
                prop_assert!(b > after && b - after <= every && b % every == 0);
            }
        }

        /// Valid 5-field patterns built from in-range fields parse, and each
        /// boundary is strictly later than the time asked about and on a
        /// whole minute.
        #[test]
        fn in_range_cron_fields_parse_and_advance(min in 0_u32..60, hour in 0_u32..24, dow in 0_u32..7, after in 0_i64..(1_i64 << 42)) {
            let spec = Spec::parse(&format!("{min} {hour} * * {dow}"), None).expect("valid");
            let b = spec.next_after(after).expect("some");
            prop_assert!(b > after);
            prop_assert!(b - after <= 7 * 24 * HOUR + MIN);
            prop_assert_eq!(b % MIN, 0);
        }

        /// Out-of-range minutes and hours are refused, never accepted.
        #[test]
        fn out_of_range_fields_are_refused(min in 60_u32..1000, hour in 24_u32..1000) {
            let (bad_min, bad_hour) = (format!("{min} * * * *"), format!("0 {hour} * * *"));
            prop_assert!(Spec::parse(&bad_min, None).is_err());
            prop_assert!(Spec::parse(&bad_hour, None).is_err());
        }

        /// Arbitrary text never panics the parser: it is a spec or an error.
        #[test]
        fn arbitrary_text_never_panics(text in "\\PC{0,40}", tz in proptest::option::of("[A-Za-z_/]{0,20}")) {
            if let Ok(spec) = Spec::parse(&text, tz.as_deref()) {
                let _ = spec.next_after(0);
            }
        }
    }
}
