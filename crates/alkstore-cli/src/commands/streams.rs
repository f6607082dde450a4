//! `alk streams`: list, publish, tail, offsets, trim.

use std::time::Duration;

use alkstore::stream::{Event, EventCtx, NewEvent, OnError, SubscriberOpts};
use alkstore::Subscriber;
use alkstore::{Error, Result, Store, StoreOptions};
use clap::{Args, Subcommand};
use serde_json::{json, Value};

use super::enqueue::{payload, PayloadArgs};
use super::output::json_text;
use super::text::{now, payload_preview, payload_text, relative, shorten};

/// `alk streams …`.
#[derive(Debug, Subcommand)]
pub(super) enum StreamsCommand {
    /// Every stream: head offset and event count.
    List,
    /// Append one event; prints its offset.
    Publish(PublishArgs),
    /// Print a stream's events from an offset (or as a consumer, from its
    /// saved offset, saving as it goes); --follow keeps printing new events
    /// until Ctrl-C or SIGTERM. With --json, one JSON object per line.
    Tail(TailArgs),
    /// Every consumer of a stream: offset, lag, last move.
    Offsets {
        /// Stream name.
        stream: String,
    },
    /// Head, first offset, count, consumers and the open-transaction
    /// hold-back of one stream.
    Stats {
        /// Stream name.
        stream: String,
    },
    /// Delete old events: below an offset, older than an age, or both.
    Trim(TrimArgs),
}

/// Arguments of `alk streams publish`.
#[derive(Debug, Args)]
pub(super) struct PublishArgs {
    /// Stream name.
    stream: String,
    #[command(flatten)]
    payload: PayloadArgs,
    /// Kept with the event (consumer groups hash it).
    #[arg(long)]
    key: Option<String>,
}

/// Arguments of `alk streams tail`.
#[derive(Debug, Args)]
pub(super) struct TailArgs {
    /// Stream name.
    stream: String,
    /// Print events after this offset (without --consumer; default: from the
    /// start).
    #[arg(long, value_name = "OFFSET", default_value_t = 0)]
    from: i64,
    /// Keep printing new events as they are published.
    #[arg(long)]
    follow: bool,
    /// Read as this consumer: start after its saved offset and save the
    /// offset as events are printed (and on exit).
    #[arg(long)]
    consumer: Option<String>,
    /// With --consumer: save the offset after this many events (at least
    /// 1; and every second, when caught up and on exit).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..))]
    commit_every: u32,
    /// Without --follow or --consumer: print at most this many events.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    limit: u32,
    /// Start with the newest N events (as `tail -n`), oldest of them
    /// first; with --follow, go on from there. Not with --from or
    /// --consumer.
    #[arg(long, value_name = "N", conflicts_with_all = ["from", "consumer"],
        value_parser = clap::value_parser!(u32).range(1..=10_000))]
    last: Option<u32>,
}

/// Arguments of `alk streams trim`.
#[derive(Debug, Args)]
pub(super) struct TrimArgs {
    /// Stream name.
    stream: String,
    /// Delete events with an offset below this.
    #[arg(long, value_name = "OFFSET")]
    before: Option<i64>,
    /// Delete events published longer ago than this (`7d`, `12h`, `30m`, or plain seconds;
    /// at least `1s`, as a stream's retention).
    #[arg(long, value_name = "AGE", value_parser = super::text::parse_duration)]
    older_than: Option<Duration>,
}

fn event_json(e: &Event) -> Value {
    let (payload, encoding) = payload_text(&e.payload);
    json!({
        "offset": e.offset,
        "stream": &*e.stream,
        "key": e.key,
        "payload": payload,
        "payload_encoding": encoding,
        "created_at": e.created_at,
    })
}

/// One event per line: JSON Lines, or offset, key, age and payload.
fn event_line(e: &Event, as_json: bool) -> String {
    if as_json {
        let mut line = event_json(e).to_string();
        line.push('\n');
        return line;
    }
    format!(
        "{:>12}  {:<16}  {:<10}  {}\n",
        e.offset,
        shorten(e.key.as_deref().unwrap_or("-"), 16),
        relative(e.created_at, now()),
        payload_preview(&e.payload, 80)
    )
}

/// `alk streams publish`'s event, read and checked before the store is
/// opened (or created).
pub(super) fn prepare(a: PublishArgs) -> Result<NewEvent> {
    let mut event = NewEvent::new(a.stream, payload(&a.payload)?);
    event.key = a.key;
    event.validate(&StoreOptions::default().limits)?;
    Ok(event)
}

/// `alk streams publish`: append the prepared event; its offset.
pub(super) async fn publish(store: &Store, event: NewEvent, as_json: bool) -> Result<String> {
    let stream = event.stream.clone();
    let offset = store
        .stream(stream.clone())
        .publish_raw(event.key.as_deref(), event.payload)
        .await?;
    Ok(if as_json {
        json_text(&json!({ "stream": stream, "offset": offset }))
    } else {
        format!("{offset}\n")
    })
}

/// Run a streams command that ends (everything but `publish` and `tail`).
pub(super) async fn run(store: &Store, cmd: StreamsCommand, as_json: bool) -> Result<String> {
    Ok(match cmd {
        StreamsCommand::List => {
            let streams = store.streams().await?;
            if as_json {
                json_text(&Value::Array(
                    streams
                        .iter()
                        .map(|s| json!({ "stream": s.stream, "head": s.head, "events": s.events }))
                        .collect(),
                ))
            } else {
                let mut out = format!("{:<32} {:>14} {:>10}\n", "STREAM", "HEAD", "EVENTS");
                for s in &streams {
                    let head = s.head.map_or("-".to_string(), |h| h.to_string());
                    out.push_str(&format!(
                        "{:<32} {head:>14} {:>10}\n",
                        shorten(&s.stream, 32),
                        s.events
                    ));
                }
                out
            }
        }
        StreamsCommand::Offsets { stream } => {
            let offsets = store.stream(stream.as_str()).offsets().await?;
            if as_json {
                json_text(&Value::Array(
                    offsets
                        .iter()
                        .map(|c| {
                            json!({
                                "consumer": c.consumer,
                                "offset": c.offset,
                                "lag": c.lag,
                                "updated_at": c.updated_at,
                            })
                        })
                        .collect(),
                ))
            } else {
                let mut out = format!("{:<32} {:>14} {:>10}  MOVED\n", "CONSUMER", "OFFSET", "LAG");
                for c in &offsets {
                    out.push_str(&format!(
                        "{:<32} {:>14} {:>10}  {}\n",
                        shorten(&c.consumer, 32),
                        c.offset,
                        c.lag,
                        relative(c.updated_at, now())
                    ));
                }
                out
            }
        }
        StreamsCommand::Stats { stream } => {
            let s = store.stream(stream.as_str()).stats().await?;
            // Empty stats are also what a stream never used gets: say so.
            if s.head.is_none()
                && s.consumers.is_empty()
                && s.max_age_s.is_none()
                && !store.streams().await?.iter().any(|i| i.stream == stream)
            {
                return Err(Error::NotFound {
                    what: format!("stream {stream:?}"),
                    detail: "nothing was published to it and no consumer reads it".into(),
                });
            }
            if as_json {
                json_text(&json!({
                    "stream": s.stream,
                    "head": s.head,
                    "first": s.first,
                    "events": s.events,
                    "held_back": s.held_back,
                    "held_back_by_s": s.held_back_by_s,
                    "max_age_s": s.max_age_s,
                    "consumers": s.consumers.iter().map(|c| json!({
                        "consumer": c.consumer, "offset": c.offset, "lag": c.lag,
                        "updated_at": c.updated_at,
                    })).collect::<Vec<_>>(),
                }))
            } else {
                let opt = |v: Option<i64>| v.map_or("-".to_string(), |v| v.to_string());
                let mut out = format!(
                    "stream {}\nhead {}  first {}  events {}\nheld back {} (oldest open publisher {})\n",
                    s.stream,
                    opt(s.head),
                    opt(s.first),
                    s.events,
                    s.held_back,
                    s.held_back_by_s.map_or("-".to_string(), |a| format!("{a}s")),
                );
                for c in &s.consumers {
                    out.push_str(&format!(
                        "consumer {}  offset {}  lag {}\n",
                        c.consumer, c.offset, c.lag
                    ));
                }
                out
            }
        }
        StreamsCommand::Trim(a) => {
            if a.before.is_none() && a.older_than.is_none() {
                return Err(Error::invalid(
                    "trim",
                    "give --before OFFSET, --older-than AGE, or both",
                ));
            }
            let deleted = store
                .stream(a.stream.as_str())
                .trim(a.before, a.older_than)
                .await?;
            if as_json {
                json_text(&json!({ "stream": a.stream, "deleted": deleted }))
            } else {
                format!("deleted {deleted} events from {}\n", a.stream)
            }
        }
        StreamsCommand::Publish(_) | StreamsCommand::Tail(_) => String::new(),
    })
}

/// Write to stdout now. Unlike `emit`, a reader that went away is an error
/// here: a consumer must not save an offset for an event nobody received.
fn print(bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()
}

fn broken_pipe(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::BrokenPipe
}

/// Print `out`; false once stdout is closed (a reader such as `head` went
/// away), which ends the tail quietly.
fn print_events(out: &str) -> Result<bool> {
    match print(out.as_bytes()) {
        Ok(()) => Ok(true),
        Err(e) if broken_pipe(&e) => Ok(false),
        Err(e) => Err(Error::invalid("stdout", e)),
    }
}

/// `alk streams tail`: prints as it reads, so it streams its output instead
/// of returning it. Stops quietly when its reader goes away (`| head`); as a
/// consumer, the event that could not be printed is not saved as handled.
pub(super) async fn tail(store: &Store, a: TailArgs, as_json: bool) -> Result<()> {
    let stream = store.stream(a.stream.clone());
    if let Some(consumer) = &a.consumer {
        let opts = SubscriberOpts {
            commit_every: a.commit_every,
            on_error: OnError::Stop,
            ..SubscriberOpts::default()
        };
        let shutdown: std::pin::Pin<Box<dyn std::future::Future<Output = ()>>> = if a.follow {
            Box::pin(alkstore::shutdown_signal())
        } else {
            // Without --follow: stop once caught up.
            let stream = stream.clone();
            let consumer = consumer.clone();
            Box::pin(async move {
                loop {
                    let head = stream.stats().await.ok().and_then(|s| s.head);
                    let at = stream.offset(&consumer).await.ok().flatten();
                    if head.is_none() || at >= head {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            })
        };
        let printer = move |event: EventCtx<Vec<u8>>| async move {
            print(event_line(&event.into_event(), as_json).as_bytes())
        };
        return match Subscriber::new(store.clone(), a.stream.clone(), consumer.clone())
            .opts(opts)
            .handler_raw(printer)
            .run_until(shutdown)
            .await
        {
            Ok(_) => Ok(()),
            Err(Error::HandlerFailed { source, .. })
                if source
                    .downcast_ref::<std::io::Error>()
                    .is_some_and(broken_pipe) =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        };
    }
    let mut after = a.from;
    let mut printed: u32 = 0;
    let mut hints = store.wakes();
    if let Some(n) = a.last {
        // The newest n, read backwards from the head, printed oldest first.
        let mut newest = stream.read_back(0, i64::MAX, n).await?;
        newest.reverse();
        let mut out = String::new();
        for e in &newest {
            out.push_str(&event_line(e, as_json));
            after = e.offset;
        }
        if !print_events(&out)? || !a.follow {
            return Ok(());
        }
    }
    let shutdown = alkstore::shutdown_signal();
    tokio::pin!(shutdown);
    loop {
        let page_size = if a.follow {
            500
        } else {
            a.limit.saturating_sub(printed).clamp(1, 500)
        };
        let events = stream.read(after, page_size).await?;
        let mut out = String::new();
        for e in &events {
            out.push_str(&event_line(e, as_json));
            after = e.offset;
        }
        if !print_events(&out)? {
            return Ok(());
        }
        printed = printed.saturating_add(u32::try_from(events.len()).unwrap_or(u32::MAX));
        if !a.follow {
            if events.is_empty() || printed >= a.limit {
                return Ok(());
            }
            continue;
        }
        if events.len() == 500 {
            continue;
        }
        tokio::select! {
            () = &mut shutdown => return Ok(()),
            _ = hints.recv() => {}
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}
