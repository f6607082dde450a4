//! The fair-share policy of a group's members, written once: the Rust
//! runner's coordinator and the HTTP member protocol both follow it.

/// What a member does at a heartbeat to hold its fair share: the buckets
/// divided by the live members, rounded up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rebalance {
    /// Below the share: take this many more free buckets.
    Take(u32),
    /// Above it (members joined): give back these buckets, the highest
    /// first, so the newcomers find them free.
    Give(Vec<u32>),
    /// At its share.
    Hold,
}

/// The step toward the fair share for a member holding `held` (its
/// buckets, ascending) of `buckets`, with `live` members (itself
/// included; 0 counts as 1). How fast it takes is the caller's: the
/// runner takes one per pass, so a lone starter does not take every
/// bucket only to give most back as its peers start; an HTTP member takes
/// them all at once, since its client beats far less often.
///
/// ```
/// use alkstore_core::group::{rebalance, Rebalance};
/// assert_eq!(rebalance(8, 2, &[0, 1]), Rebalance::Take(2));
/// assert_eq!(rebalance(8, 4, &[0, 1, 2, 3]), Rebalance::Give(vec![3, 2]));
/// assert_eq!(rebalance(8, 3, &[0, 1, 2]), Rebalance::Hold);
/// ```
pub fn rebalance(buckets: u32, live: u32, held: &[u32]) -> Rebalance {
    let fair = buckets.div_ceil(live.max(1)) as usize;
    let mine = held.len();
    if mine < fair {
        Rebalance::Take(u32::try_from(fair - mine).unwrap_or(u32::MAX))
    } else if mine > fair {
        Rebalance::Give(held.iter().rev().take(mine - fair).copied().collect())
    } else {
        Rebalance::Hold
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every member of a stable group ends at its share, and together they
    /// hold every bucket exactly once.
    #[test]
    fn shares_add_up_to_every_bucket() {
        for buckets in [1u32, 4, 16, 17] {
            for live in 1u32..=6 {
                let fair = buckets.div_ceil(live);
                assert_eq!(rebalance(buckets, live, &[]), Rebalance::Take(fair));
                let at_share: Vec<u32> = (0..fair).collect();
                assert_eq!(rebalance(buckets, live, &at_share), Rebalance::Hold);
                let all: Vec<u32> = (0..buckets).collect();
                match rebalance(buckets, live, &all) {
                    Rebalance::Give(back) => {
                        assert_eq!(back.len(), usize::try_from(buckets - fair).expect("fits"));
                        assert!(back.windows(2).all(|w| w[0] > w[1]), "highest first");
                        assert_eq!(back[0], buckets - 1);
                    }
                    Rebalance::Hold => {
                        assert_eq!(fair, buckets, "holding every bucket is its share")
                    }
                    other => panic!("{other:?}"),
                }
            }
        }
    }
}
