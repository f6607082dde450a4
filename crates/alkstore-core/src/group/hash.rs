//! PostgreSQL's `hashtextextended`, bit for bit, so both engines (and any
//! program) put a key in the same bucket as PostgreSQL's own SQL does.
//!
//! PostgreSQL hashes a text value's bytes with `hash_bytes_extended`
//! (`src/common/hashfn.c`): Bob Jenkins' lookup3 over 12-byte blocks, read
//! as little-endian words on the platforms PostgreSQL runs on in practice,
//! with the 64-bit seed mixed in first when it is not zero. The result is
//! `(b << 32) | c` of the final state, as a signed `BIGINT`.

/// lookup3's `mix`: reversibly mix three 32-bit words.
#[inline]
fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *a = a.wrapping_sub(*c);
    *a ^= c.rotate_left(4);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= a.rotate_left(6);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= b.rotate_left(8);
    *b = b.wrapping_add(*a);
    *a = a.wrapping_sub(*c);
    *a ^= c.rotate_left(16);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= a.rotate_left(19);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= b.rotate_left(4);
    *b = b.wrapping_add(*a);
}

/// lookup3's `final`: the last avalanche of the three words.
#[inline]
fn finish(a: &mut u32, b: &mut u32, c: &mut u32) {
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(14));
    *a ^= *c;
    *a = a.wrapping_sub(c.rotate_left(11));
    *b ^= *a;
    *b = b.wrapping_sub(a.rotate_left(25));
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(16));
    *a ^= *c;
    *a = a.wrapping_sub(c.rotate_left(4));
    *b ^= *a;
    *b = b.wrapping_sub(a.rotate_left(14));
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(24));
}

/// The little-endian word of up to four bytes (missing bytes are zero).
#[inline]
fn word(bytes: &[u8]) -> u32 {
    bytes
        .iter()
        .take(4)
        .enumerate()
        .fold(0, |w, (i, b)| w | (u32::from(*b) << (8 * i)))
}

/// PostgreSQL's `hashtextextended(key, seed)` for a text whose bytes are
/// `key` (its UTF-8 encoding, under a deterministic collation such as the
/// default one).
///
/// ```
/// use alkstore_core::group::hashtextextended;
/// // SELECT hashtextextended('', 0) on any PostgreSQL 11 or later.
/// assert_eq!(hashtextextended(b"", 0), -6_939_563_903_564_495_251);
/// ```
// lookup3 works on 32-bit words: the length and the seed's halves are
// truncated to 32 bits on purpose, exactly as PostgreSQL's C does.
#[allow(clippy::cast_possible_truncation)]
pub fn hashtextextended(key: &[u8], seed: i64) -> i64 {
    // The length is folded into the start state as a 32-bit value, as
    // PostgreSQL does (keys are far below 4 GiB).
    let len = key.len() as u32;
    let start = 0x9e37_79b9_u32.wrapping_add(len).wrapping_add(3_923_095);
    let (mut a, mut b, mut c) = (start, start, start);
    let seed = seed.cast_unsigned();
    if seed != 0 {
        // The seed is hashed as a 12-byte block: high word, low word, zero.
        a = a.wrapping_add((seed >> 32) as u32);
        b = b.wrapping_add(seed as u32);
        mix(&mut a, &mut b, &mut c);
    }
    let mut blocks = key.chunks_exact(12);
    for block in &mut blocks {
        a = a.wrapping_add(word(&block[0..4]));
        b = b.wrapping_add(word(&block[4..8]));
        c = c.wrapping_add(word(&block[8..12]));
        mix(&mut a, &mut b, &mut c);
    }
    // The last 0–11 bytes: the first four into a, the next four into b, the
    // rest into c's upper three bytes (its lowest byte is left for the
    // length in lookup3, which PostgreSQL does not add here).
    let rest = blocks.remainder();
    a = a.wrapping_add(word(rest.get(0..).unwrap_or_default()));
    b = b.wrapping_add(word(rest.get(4..).unwrap_or_default()));
    c = c.wrapping_add(word(rest.get(8..).unwrap_or_default()) << 8);
    finish(&mut a, &mut b, &mut c);
    ((u64::from(b) << 32) | u64::from(c)).cast_signed()
}

/// The bucket of `key` in a group of `buckets` buckets, exactly as
/// `(((hashtextextended(key, 0) % N) + N) % N)` computes it in PostgreSQL.
/// `buckets` of 0 is treated as 1 (every key in bucket 0); groups validate
/// their bucket count before it gets here.
///
/// ```
/// use alkstore_core::group::bucket_of;
/// let b = bucket_of(b"customer-42", 16);
/// assert!(b < 16);
/// assert_eq!(b, bucket_of(b"customer-42", 16), "the same key, the same bucket");
/// ```
pub fn bucket_of(key: &[u8], buckets: u32) -> u32 {
    let n = i64::from(buckets.max(1));
    let h = hashtextextended(key, 0);
    // `%` on i64 truncates toward zero like C's, so the SQL's double modulo
    // carries over unchanged; the result lies in 0..n.
    u32::try_from(((h % n) + n) % n).unwrap_or(0)
}

/// The bucket of an event without a key: spread by its offset.
pub fn bucket_of_offset(offset: i64, buckets: u32) -> u32 {
    // rem_euclid lies in 0..buckets, so it always fits.
    u32::try_from(offset.rem_euclid(i64::from(buckets.max(1)))).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spot values read off PostgreSQL 15 (`SELECT hashtextextended(k, s)`);
    /// the full comparison against a live server is in alkstore-postgres.
    #[test]
    fn matches_values_read_off_postgresql() {
        assert_eq!(hashtextextended(b"", 0), -6_939_563_903_564_495_251);
        assert_eq!(hashtextextended(b"a", 0), 3_591_986_179_850_072_241);
        assert_eq!(
            hashtextextended(b"hello world!x", -5),
            -3_006_652_675_899_631_702
        );
        assert_eq!(
            hashtextextended("ü€𝄞".as_bytes(), 123),
            1_553_458_323_974_915_005
        );
    }

    #[test]
    fn buckets_are_in_range_and_stable() {
        for n in [1, 2, 3, 16, 1000] {
            for k in ["", "a", "customer-42", "ü€𝄞"] {
                let b = bucket_of(k.as_bytes(), n);
                assert!(b < n);
                assert_eq!(b, bucket_of(k.as_bytes(), n));
            }
        }
        assert_eq!(bucket_of_offset(17, 16), 1);
    }
}
