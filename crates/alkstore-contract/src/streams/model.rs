//! Streams and consumer offsets against a reference model: random
//! sequences of publishes, reads, offset commits (plain and
//! compare-and-set), offset reads and trims on two streams, run on the
//! engine and on a plain-Rust model, every answer compared (see
//! `src/model.rs`).

use alkstore_core::Writes as _;
use std::collections::BTreeMap;
use std::fmt::Write as _;

use alkstore_core::stream::{
    NewEvent, StreamOffsetCommitParams, StreamOffsetGetParams, StreamReadParams, StreamTrimParams,
};
use alkstore_core::{ErrorKind, StreamEngine};
use proptest::prelude::*;

use crate::Harness;

/// One step of a stream sequence. Offsets are picked, modulo their count,
/// among 0, every offset published so far (on either stream), and the
/// stream's head and head + 1.
#[derive(Debug, Clone)]
pub enum StreamOp {
    /// Publish `n` events to stream `stream` in one call.
    Publish {
        /// Which of the two streams.
        stream: usize,
        /// How many events.
        n: usize,
    },
    /// Read a page.
    Read {
        /// Which stream.
        stream: usize,
        /// After which offset.
        after: usize,
        /// Most events.
        limit: u32,
    },
    /// Commit a consumer's offset.
    Commit {
        /// Which stream.
        stream: usize,
        /// Which of the two consumers.
        consumer: usize,
        /// To which offset.
        at: usize,
        /// Compare-and-set from this offset, or a plain commit.
        expecting: Option<usize>,
    },
    /// Read a consumer's offset.
    Get {
        /// Which stream.
        stream: usize,
        /// Which consumer.
        consumer: usize,
    },
    /// Trim the events below an offset.
    Trim {
        /// Which stream.
        stream: usize,
        /// Below which offset.
        before: usize,
    },
}

fn op() -> impl Strategy<Value = StreamOp> {
    prop_oneof![
        3 => (0..2usize, 1..4usize).prop_map(|(stream, n)| StreamOp::Publish { stream, n }),
        2 => (0..2usize, any::<usize>(), 1..5u32)
            .prop_map(|(stream, after, limit)| StreamOp::Read { stream, after, limit }),
        3 => (0..2usize, 0..2usize, any::<usize>(), proptest::option::of(any::<usize>()))
            .prop_map(|(stream, consumer, at, expecting)| StreamOp::Commit {
                stream,
                consumer,
                at,
                expecting,
            }),
        1 => (0..2usize, 0..2usize).prop_map(|(stream, consumer)| StreamOp::Get { stream, consumer }),
        1 => (0..2usize, any::<usize>()).prop_map(|(stream, before)| StreamOp::Trim { stream, before }),
    ]
}

/// Sequences that once failed, shrunk: run first, every time.
fn regressions() -> Vec<Vec<StreamOp>> {
    vec![]
}

/// Random sequences of publishes, reads, commits (plain and expecting),
/// offset reads and trims behave on the engine as on the model: offsets
/// grow across the store; a read returns exactly the stream's stored
/// events after the offset, in order; a plain commit only moves forward
/// and never past the head; an expecting commit moves only from exactly
/// the saved offset; a trim deletes what lies below its offset and may not
/// reach past head + 1; trimmed offsets still bound commits.
pub async fn random_stream_operations_match_the_model<H: Harness>(h: &H) {
    let strategy = proptest::collection::vec(op(), 1..50);
    crate::model::check(strategy, regressions(), |name, ops| async move {
        run_case(h, &name, &ops).await
    })
    .await;
}

/// A call's answer as compared: its value, or its error's kind.
fn answer<T: std::fmt::Debug>(r: alkstore_core::Result<T>) -> String {
    match r {
        Ok(v) => format!("{v:?}"),
        Err(e) => format!("{:?}", e.kind()),
    }
}

async fn run_case<H: Harness>(h: &H, case: &str, ops: &[StreamOp]) -> Result<(), String> {
    let e = h.engine();
    let names = [format!("{case}-a"), format!("{case}-b")];
    // Per stream: its stored events (offset -> payload) and its head (the
    // highest offset it ever had).
    let mut stored: [BTreeMap<i64, Vec<u8>>; 2] = [BTreeMap::new(), BTreeMap::new()];
    let mut head = [0i64; 2];
    let mut published: Vec<i64> = Vec::new();
    let mut saved: BTreeMap<(usize, usize), i64> = BTreeMap::new();
    let mut log = String::new();
    let mut k = 0u32;
    for (step, op) in ops.iter().enumerate() {
        let _ = writeln!(log, "  {step}: {op:?}");
        let differ = |what: String| Err(format!("step {step}: {what}\n{log}"));
        let pick = |s: usize, i: usize| {
            let mut c = vec![0, head[s], head[s] + 1];
            c.extend(&published);
            c[i % c.len()]
        };
        let (got, want) = match *op {
            StreamOp::Publish { stream, n } => {
                let events: Vec<NewEvent> = (0..n)
                    .map(|_| {
                        k += 1;
                        NewEvent::new(names[stream].as_str(), format!("e{k}").into_bytes())
                    })
                    .collect();
                let payloads: Vec<Vec<u8>> = events.iter().map(|e| e.payload.clone()).collect();
                let offsets = e.stream_publish(events).await.map_err(|x| x.to_string())?;
                let last = published.last().copied().unwrap_or(0);
                if offsets.len() != n
                    || offsets.first().is_some_and(|o| *o <= last)
                    || offsets.windows(2).any(|w| w[0] >= w[1])
                {
                    return differ(format!("offsets {offsets:?} do not grow past {last}"));
                }
                for (o, p) in offsets.iter().zip(payloads) {
                    stored[stream].insert(*o, p);
                }
                head[stream] = *offsets.last().unwrap_or(&head[stream]);
                published.extend(&offsets);
                // Reads are gap-safe: on PostgreSQL any older open
                // transaction (another test's too) holds new events back.
                // The model describes the store once they are readable.
                crate::streams::settle(e, &names[stream]).await;
                continue;
            }
            StreamOp::Read {
                stream,
                after,
                limit,
            } => {
                let after = pick(stream, after);
                let got = e
                    .stream_read(StreamReadParams::new(names[stream].as_str(), after, limit))
                    .await
                    .map(|v| {
                        v.into_iter()
                            .map(|ev| (ev.offset, ev.payload))
                            .collect::<Vec<_>>()
                    });
                let want: Vec<(i64, Vec<u8>)> = stored[stream]
                    .range(after + 1..)
                    .take(limit as usize)
                    .map(|(o, p)| (*o, p.clone()))
                    .collect();
                (answer(got), format!("{want:?}"))
            }
            StreamOp::Commit {
                stream,
                consumer,
                at,
                expecting,
            } => {
                let at = pick(stream, at);
                let expected = expecting.map(|x| pick(stream, x));
                let mut params = StreamOffsetCommitParams::new(
                    names[stream].as_str(),
                    format!("c{consumer}"),
                    at,
                );
                if let Some(x) = expected {
                    params = params.expecting(x);
                }
                let got = e.stream_offset_commit(params).await;
                let now = saved.get(&(stream, consumer)).copied();
                let want: Result<i64, ErrorKind> = match expected {
                    Some(x) if x > at => Err(ErrorKind::InvalidInput),
                    _ if at > head[stream] => Err(ErrorKind::InvalidInput),
                    Some(x) if now.unwrap_or(0) != x => Err(ErrorKind::NotHeld),
                    Some(_) => Ok(at),
                    None => Ok(now.map_or(at, |n| n.max(at))),
                };
                if let Ok(o) = want {
                    saved.insert((stream, consumer), o);
                }
                (
                    answer(got),
                    match want {
                        Ok(v) => format!("{v:?}"),
                        Err(k) => format!("{k:?}"),
                    },
                )
            }
            StreamOp::Get { stream, consumer } => {
                let got = e
                    .stream_offset_get(StreamOffsetGetParams::new(
                        names[stream].as_str(),
                        format!("c{consumer}"),
                    ))
                    .await;
                let want = saved.get(&(stream, consumer)).copied();
                (answer(got), format!("{want:?}"))
            }
            StreamOp::Trim { stream, before } => {
                let before = pick(stream, before);
                let got = e
                    .stream_trim(StreamTrimParams::before(names[stream].as_str(), before))
                    .await;
                let want = if before > head[stream] + 1 {
                    format!("{:?}", ErrorKind::InvalidInput)
                } else {
                    let gone: Vec<i64> = stored[stream].range(..before).map(|(o, _)| *o).collect();
                    for o in &gone {
                        stored[stream].remove(o);
                    }
                    format!("{:?}", gone.len() as u64)
                };
                (answer(got), want)
            }
        };
        if got != want {
            return differ(format!("{op:?}: engine {got}, model {want}"));
        }
    }
    Ok(())
}

/// The rows above, for [`contract_suite!`](crate::contract_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! __streams_model {
    ($then:path, $args:tt) => {
        $then! { @rows $args streams::model [
            random_stream_operations_match_the_model,
        ] }
    };
}
