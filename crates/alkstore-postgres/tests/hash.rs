//! The Rust port of `hashtextextended` against a real PostgreSQL: thousands
//! of keys (empty, ASCII, multi-byte UTF-8, every length from 0 to 300
//! bytes, so every 12-byte block boundary and every tail length), under
//! several seeds including negative ones; and `bucket_of` against the SQL
//! expression consumer groups use.

// The generator's values are bounded (below 301, 95, 26, 8) before narrowing.
#![allow(clippy::cast_possible_truncation)]

use alkstore_core::group::{bucket_of, hashtextextended};
use alkstore_postgres::{testing, PgEngine, PgOptions};

/// A small deterministic generator (xorshift64*), so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// A string of at most `bytes` bytes, mixing 1- to 4-byte characters.
    fn text(&mut self, bytes: usize) -> String {
        const SAMPLES: [char; 8] = ['a', 'Z', '7', ' ', 'é', 'ж', '€', '𝄞'];
        let mut s = String::new();
        loop {
            let c = if self.below(3) == 0 {
                SAMPLES[self.below(SAMPLES.len() as u64) as usize]
            } else {
                char::from(b' ' + self.below(95) as u8)
            };
            if s.len() + c.len_utf8() > bytes {
                return s;
            }
            s.push(c);
        }
    }
}

fn keys() -> Vec<String> {
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let mut keys = vec![String::new()];
    for len in 0..=300 {
        // Exactly `len` ASCII bytes, and a mixed string of about that size.
        keys.push(
            (0..len)
                .map(|i| char::from(b'a' + (i % 26) as u8))
                .collect(),
        );
        keys.push(rng.text(len));
    }
    for _ in 0..2_000 {
        let len = rng.below(301) as usize;
        keys.push(rng.text(len));
    }
    keys
}

#[tokio::test]
async fn the_port_matches_postgresql_bit_for_bit() {
    let url = testing::ensure_database(&testing::database_url(), "alkstore_test")
        .await
        .expect("PostgreSQL at DATABASE_URL (scripts/test starts one)");
    let schema = testing::unique_schema("hash");
    let engine = PgEngine::open(PgOptions::new(url.clone(), schema.clone()))
        .await
        .expect("open");
    let client = engine.client().await.expect("client");

    let keys = keys();
    let seeds = [0_i64, 1, -1, 42, -987_654_321, i64::MAX, i64::MIN];
    let mut checked = 0;
    for seed in seeds {
        let rows = client
            .query(
                "SELECT k, hashtextextended(k, $2) FROM unnest($1::text[]) WITH ORDINALITY AS t(k, i) ORDER BY i",
                &[&keys, &seed],
            )
            .await
            .expect("hash in SQL");
        assert_eq!(rows.len(), keys.len());
        for row in rows {
            let key: String = row.get(0);
            let expected: i64 = row.get(1);
            assert_eq!(
                hashtextextended(key.as_bytes(), seed),
                expected,
                "key {key:?} ({} bytes), seed {seed}",
                key.len()
            );
            checked += 1;
        }
    }
    assert_eq!(checked, keys.len() * seeds.len());

    for n in [1_i32, 2, 3, 7, 16, 64, 1000] {
        let rows = client
            .query(
                "SELECT k, (((hashtextextended(k, 0) % $2::int) + $2::int) % $2::int)::int \
                 FROM unnest($1::text[]) AS t(k)",
                &[&keys, &n],
            )
            .await
            .expect("bucket in SQL");
        for row in rows {
            let key: String = row.get(0);
            let expected: i32 = row.get(1);
            assert_eq!(
                i64::from(bucket_of(key.as_bytes(), n.cast_unsigned())),
                i64::from(expected),
                "key {key:?}, {n} buckets"
            );
        }
    }
    drop(client);
    testing::drop_schema(&url, &schema).await.expect("drop");
}
