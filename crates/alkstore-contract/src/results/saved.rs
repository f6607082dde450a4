//! Saving and reading job results: replace, expiry by the store's clock,
//! bad input.

use std::time::Duration;

use alkstore_core::results::{ResultSaveParams, MAX_RESULT_TTL};
use alkstore_core::{Clock, Engine, ErrorKind, ResultEngine};

use crate::Harness;

/// A saved result is read back byte for byte until its TTL passes by the
/// store's clock; a second save replaces it; a job with none reads `None`.
pub async fn results_are_kept_for_their_ttl_and_replaced_by_a_later_save<H: Harness>(h: &H) {
    let e = h.engine();
    assert_eq!(e.result_get(7).await.expect("get"), None);
    let saved = e
        .result_save(ResultSaveParams::new(7, b"first".to_vec()).ttl(Duration::from_secs(60)))
        .await
        .expect("save");
    assert_eq!(saved.expires_at_ms, h.clock().now_ms() + 60_000);
    let got = e.result_get(7).await.expect("get").expect("saved");
    assert_eq!(
        (got.value.as_slice(), got.expires_at_ms),
        (b"first".as_slice(), saved.expires_at_ms)
    );
    e.result_save(ResultSaveParams::new(7, vec![0, 255, 1]).ttl(Duration::from_secs(60)))
        .await
        .expect("replace");
    h.clock().advance(Duration::from_secs(59));
    assert_eq!(
        e.result_get(7).await.expect("get").expect("kept").value,
        [0, 255, 1]
    );
    assert_eq!(e.result_get(8).await.expect("get"), None, "another job");
    h.clock().advance(Duration::from_secs(1));
    assert_eq!(e.result_get(7).await.expect("get"), None, "expired");
}

/// A job id below 1, a TTL of 0 or above 30 days and a value over the
/// payload limit are `InvalidInput`, and nothing is saved.
pub async fn bad_result_input_is_refused_and_saves_nothing<H: Harness>(h: &H) {
    let e = h.engine();
    let too_big = vec![0u8; e.limits().max_payload_bytes + 1];
    for params in [
        ResultSaveParams::new(0, b"x".to_vec()),
        ResultSaveParams::new(1, b"x".to_vec()).ttl(Duration::ZERO),
        ResultSaveParams::new(1, b"x".to_vec()).ttl(MAX_RESULT_TTL + Duration::from_secs(1)),
        ResultSaveParams::new(1, too_big),
    ] {
        let err = e.result_save(params).await.expect_err("refused");
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    }
    assert_eq!(e.result_get(1).await.expect("get"), None);
    let err = e.result_get(-3).await.expect_err("bad id");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
}

/// The rows above, for [`contract_suite!`](crate::contract_suite).
#[doc(hidden)]
#[macro_export]
macro_rules! __results_saved {
    ($then:path, $args:tt) => {
        $then! { @rows $args results::saved [
            results_are_kept_for_their_ttl_and_replaced_by_a_later_save,
            bad_result_input_is_refused_and_saves_nothing,
        ] }
    };
}
