//! Locks against a reference model: random sequences of acquires, renews
//! and releases by three owners on two names, with clock advances, run on
//! the engine and on a plain-Rust model, every answer compared (see
//! `src/model.rs`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use alkstore_core::lock::{
    LockAcquireParams, LockReleaseParams, LockReleased, LockRenewParams, LockRenewed,
};
use alkstore_core::{Clock, LockEngine};
use proptest::prelude::*;

use crate::Harness;

const OWNERS: [&str; 3] = ["a", "b", "c"];

/// One step of a lock sequence. `pick` chooses, modulo their count, among
/// the grants handed out so far (current or not: the model knows which).
#[derive(Debug, Clone)]
pub enum LockOp {
    /// Try to take lock `name` for `owner`.
    Acquire {
        /// Which of the two names.
        name: usize,
        /// Which of the three owners.
        owner: usize,
        /// For this many seconds.
        ttl_s: u64,
    },
    /// Renew a grant, as its owner or as another.
    Renew {
        /// Which grant.
        pick: usize,
        /// Whether another owner than the grant's asks.
        impostor: bool,
        /// For this many seconds.
        ttl_s: u64,
    },
    /// Release a grant, as its owner or as another.
    Release {
        /// Which grant.
        pick: usize,
        /// Whether another owner than the grant's asks.
        impostor: bool,
    },
    /// Move the clock on.
    Advance {
        /// By this many milliseconds.
        ms: u64,
    },
}

fn op() -> impl Strategy<Value = LockOp> {
    prop_oneof![
        3 => (0..2usize, 0..3usize, 1..6u64)
            .prop_map(|(name, owner, ttl_s)| LockOp::Acquire { name, owner, ttl_s }),
        2 => (any::<usize>(), any::<bool>(), 1..6u64)
            .prop_map(|(pick, impostor, ttl_s)| LockOp::Renew { pick, impostor, ttl_s }),
        2 => (any::<usize>(), any::<bool>())
            .prop_map(|(pick, impostor)| LockOp::Release { pick, impostor }),
        2 => prop_oneof![1..1_500u64, 2_000..7_000u64].prop_map(|ms| LockOp::Advance { ms }),
    ]
}

/// Sequences that once failed, shrunk: run first, every time.
fn regressions() -> Vec<Vec<LockOp>> {
    vec![]
}

/// Random sequences of acquires, renews and releases (by the holder and by
/// others, on current and old grants) with clock advances behave on the
/// engine as on the model: a lock is free when never taken, released, or
/// lapsed by the store's clock; a grant's token is higher than every
/// earlier one of its name; only the newest grant's owner renews (even
/// after its hold lapsed, while nobody took it since) or releases it.
pub async fn random_lock_operations_match_the_model<H: Harness>(h: &H) {
    let strategy = proptest::collection::vec(op(), 1..50);
    crate::model::check(strategy, regressions(), |name, ops| async move {
        run_case(h, &name, &ops).await
    })
    .await;
}

/// A lock as the model holds it.
#[derive(Debug, Clone, Copy)]
struct MLock {
    /// Which grant is the newest (an index into the grants).
    grant: usize,
    released: bool,
    expires_at_ms: i64,
}

/// A grant handed out: its lock, owner and token.
struct Grant {
    name: usize,
    owner: usize,
    token: i64,
}

async fn run_case<H: Harness>(h: &H, case: &str, ops: &[LockOp]) -> Result<(), String> {
    let e = h.engine();
    let clock = h.clock();
    let names = [format!("{case}-x"), format!("{case}-y")];
    let mut locks: BTreeMap<usize, MLock> = BTreeMap::new();
    let mut grants: Vec<Grant> = Vec::new();
    let mut log = String::new();
    for (step, op) in ops.iter().enumerate() {
        let now = clock.now_ms();
        let _ = writeln!(log, "  {step}: {op:?} at {now} ms");
        let differ = |what: String| Err(format!("step {step}: {what}\n{log}"));
        match *op {
            LockOp::Acquire { name, owner, ttl_s } => {
                let ttl = Duration::from_secs(ttl_s);
                let got = e
                    .lock_acquire(LockAcquireParams::new(&names[name], OWNERS[owner], ttl))
                    .await
                    .map_err(|x| x.to_string())?;
                let free = locks
                    .get(&name)
                    .is_none_or(|l| l.released || l.expires_at_ms <= now);
                match (got, free) {
                    (Some(g), true) => {
                        let newest = grants
                            .iter()
                            .filter(|o| o.name == name)
                            .map(|o| o.token)
                            .max();
                        if newest.is_some_and(|t| g.token <= t) {
                            return differ(format!("token {} not above {newest:?}", g.token));
                        }
                        let expires_at_ms = now + i64::try_from(ttl.as_millis()).unwrap_or(0);
                        if g.expires_at_ms != expires_at_ms {
                            return differ(format!(
                                "grant expires at {}, model {expires_at_ms}",
                                g.expires_at_ms
                            ));
                        }
                        grants.push(Grant {
                            name,
                            owner,
                            token: g.token,
                        });
                        locks.insert(
                            name,
                            MLock {
                                grant: grants.len() - 1,
                                released: false,
                                expires_at_ms,
                            },
                        );
                    }
                    (None, false) => {}
                    (got, free) => {
                        return differ(format!("acquire: engine {got:?}, model free={free}"));
                    }
                }
            }
            LockOp::Renew { pick, impostor, .. } | LockOp::Release { pick, impostor }
                if !grants.is_empty() =>
            {
                let gi = pick % grants.len();
                let g = &grants[gi];
                let owner = if impostor { (g.owner + 1) % 3 } else { g.owner };
                let lock = locks.get(&g.name).copied();
                let held = !impostor && lock.is_some_and(|l| l.grant == gi && !l.released);
                let (name, token) = (&names[g.name], g.token);
                if let LockOp::Renew { ttl_s, .. } = *op {
                    let ttl = Duration::from_secs(ttl_s);
                    let got = e
                        .lock_renew(LockRenewParams::new(name, OWNERS[owner], token, ttl))
                        .await
                        .map_err(|x| x.to_string())?;
                    let want_expiry = now + i64::try_from(ttl.as_millis()).unwrap_or(0);
                    match (&got, held) {
                        (LockRenewed::Held(ng), true) if ng.expires_at_ms == want_expiry => {
                            if let Some(l) = locks.get_mut(&grants[gi].name) {
                                l.expires_at_ms = want_expiry;
                            }
                        }
                        (LockRenewed::NotHeld, false) => {}
                        _ => {
                            return differ(format!(
                                "renew: engine {got:?}, model held={held} until {want_expiry}"
                            ))
                        }
                    }
                } else {
                    let got = e
                        .lock_release(LockReleaseParams::new(name, OWNERS[owner], token))
                        .await
                        .map_err(|x| x.to_string())?;
                    let want = if held {
                        LockReleased::Released
                    } else {
                        LockReleased::NotHeld
                    };
                    if got != want {
                        return differ(format!("release: engine {got:?}, model {want:?}"));
                    }
                    if held {
                        if let Some(l) = locks.get_mut(&grants[gi].name) {
                            l.released = true;
                        }
                    }
                }
            }
            LockOp::Renew { .. } | LockOp::Release { .. } => {}
            LockOp::Advance { ms } => clock.advance(Duration::from_millis(ms)),
        }
    }
    Ok(())
}

/// The rows above, for [`contract_suite!`](crate::contract_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! __locks_model {
    ($then:path, $args:tt) => {
        $then! { @rows $args locks::model [
            random_lock_operations_match_the_model,
        ] }
    };
}
