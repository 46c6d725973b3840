//! A publish retried with the same message id (its acknowledgement was lost) is dropped by the
//! server as a duplicate, even though it names an expected last sequence that is no longer the
//! stream's: the retry path of a flush never appends twice nor reads as fenced.

use bytes::Bytes;

use braid_nats::Cluster as Client;
use braid_nats::device::ensure_stream;
use braid_nats::publish::{MsgKind, Publisher};

use crate::support::Cluster;

#[test]
fn a_retried_publish_is_deduplicated() {
    let cluster = Cluster::start();
    let c = Client::connect(cluster.config("dedup")).unwrap();
    ensure_stream(&c, 0).unwrap();
    let p = Publisher::new(&c, 0, 1);
    let fence = p
        .publish(&c, MsgKind::Fence, 0, Bytes::new(), None)
        .unwrap();
    let bytes = Bytes::from_static(b"0123456789abcdef");
    let first = p
        .publish(&c, MsgKind::Data, 0, bytes.clone(), Some(fence.seq))
        .unwrap();
    assert!(!first.duplicate);
    let again = p
        .publish(&c, MsgKind::Data, 0, bytes.clone(), Some(fence.seq))
        .unwrap();
    assert!(again.duplicate, "the retry was appended again");
    assert_eq!(again.seq, first.seq);
    // A different message on the stale expectation is refused: that is a fenced writer.
    let err = p
        .publish(&c, MsgKind::Data, 16, bytes, Some(fence.seq))
        .unwrap_err();
    assert!(err.to_string().contains("fenced"), "{err}");
    let img = braid_nats::image::read(&c, p.stream_name(), first.seq).unwrap();
    assert_eq!(img.bytes, b"0123456789abcdef");
    assert_eq!(img.msgs.len(), 1);
}
