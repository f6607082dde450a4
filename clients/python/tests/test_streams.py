"""Streams, consumer groups and the group-member helper, over the live server."""

import threading
import time
import unittest

from alkstore_client import ApiError, Client, GroupMember

from live import client, eventually, in_thread, joined, name


class Streams(unittest.TestCase):
    def setUp(self):
        self.c = client()

    def test_publish_and_read(self):
        s = name("stream")
        offsets = self.c.publish(s, events=[{"key": "k1", "payload": {"i": 0}}, {"payload": [1]},
                                            {"key": "k1", "payload": "two"}])["offsets"]
        self.assertEqual(offsets, sorted(offsets))
        self.assertEqual(len(set(offsets)), 3)
        page = self.c.read(s, after=0, limit=10, wait_ms=1000)
        self.assertEqual([(e["offset"], e["key"], e["payload"]) for e in page["events"]],
                         [(offsets[0], "k1", {"i": 0}), (offsets[1], None, [1]), (offsets[2], "k1", "two")])
        self.assertEqual(page["next_after"], offsets[2])
        self.assertEqual(self.c.read(s, after=offsets[0], limit=1)["events"][0]["offset"], offsets[1])
        info = self.c.stream_info(s)
        self.assertEqual((info["stream"], info["events"], info["head"]), (s, 3, offsets[2]))
        # A read waiting past the head is woken by the next publish.
        t, box = in_thread(self.c.read, s, after=page["next_after"], wait_ms=5000)
        time.sleep(0.2)
        self.assertTrue(t.is_alive(), "the read did not wait")
        [later] = self.c.publish(s, events=[{"payload": "later"}])["offsets"]
        got = joined(self, t, box, 5)
        self.assertEqual([(e["offset"], e["payload"]) for e in got["events"]], [(later, "later")])

    def test_read_backwards_from_the_head(self):
        s = name("back")
        offsets = self.c.publish(s, events=[{"payload": i} for i in range(5)])["offsets"]
        page = self.c.read(s, before=2**63 - 1, limit=2)
        self.assertEqual([e["payload"] for e in page["events"]], [4, 3])
        self.assertEqual(page["next_before"], offsets[3])
        page = self.c.read(s, before=page["next_before"], limit=2)
        self.assertEqual([e["payload"] for e in page["events"]], [2, 1])
        last = self.c.read(s, before=page["next_before"], limit=2)
        self.assertEqual([e["payload"] for e in last["events"]], [0])
        self.assertNotIn("next_before", last)
        with self.assertRaises(ApiError) as cm:
            self.c.read(s, before=offsets[4], wait_ms=1000)
        self.assertEqual((cm.exception.status, cm.exception.field), (400, "wait_ms"))

    def test_consumer_offsets(self):
        s = name("offsets")
        [o1, o2] = self.c.publish(s, events=[{"payload": 1}, {"payload": 2}])["offsets"]
        self.assertEqual(self.c.offset_commit(s, "py consumer/1", offset=o1)["offset"], o1)
        self.assertEqual(self.c.offset_get(s, "py consumer/1")["offset"], o1)
        with self.assertRaises(ApiError) as cm:
            self.c.offset_commit(s, "py consumer/1", offset=o2, expected=o2)
        self.assertEqual((cm.exception.status, cm.exception.code), (409, "not_held"))


class Groups(unittest.TestCase):
    def setUp(self):
        self.c = client()

    def test_two_members_share_a_group_exactly_once_in_key_order(self):
        s, g = name("group stream"), name("group")
        lock = threading.Lock()
        handled = []  # (member, key, seq, offset)

        def handler_for(member):
            def handle(ev):
                with lock:
                    handled.append((member, ev["key"], ev["payload"]["seq"], ev["offset"], ev["bucket"]))
            return handle

        stop = threading.Event()
        members = [GroupMember(self.c, g, s, handler_for(m), member=f"py member {m}", buckets=8,
                               ttl_ms=6000, wait_ms=300, stop=stop) for m in ("a", "b")]
        threads = [in_thread(m.run) for m in members]
        try:
            def balanced():
                try:
                    status = self.c.group_status(g)
                except ApiError as e:
                    if e.code == "not_found":
                        return False  # not created yet: the members are joining
                    raise
                owners = [b["owner"] for b in status["buckets"]]
                return (sorted(owners.count(m.member) for m in members) == [4, 4]) and status
            eventually(self, balanced, 10, "four buckets each")
            keys = [f"key {k}/{'x' * k}" for k in range(12)]
            events = [{"key": keys[i % len(keys)], "payload": {"seq": i // len(keys)}} for i in range(120)]
            offsets = []
            for at in range(0, len(events), 40):
                offsets += self.c.publish(s, events=events[at:at + 40])["offsets"]
            eventually(self, lambda: len(handled) >= len(events), 15, "every event handled")
            time.sleep(0.5)  # anything handled twice would show now
        finally:
            stop.set()
            for t, box in threads:
                joined(self, t, box, 10)
        self.assertEqual(sorted(h[3] for h in handled), sorted(offsets), "each event exactly once")
        by_member = {h[0] for h in handled}
        self.assertEqual(by_member, {"a", "b"}, "both members got events")
        for key in keys:
            mine = [h for h in handled if h[1] == key]
            self.assertEqual([h[2] for h in mine], list(range(10)), f"order of {key}")
            self.assertEqual(len({h[0] for h in mine}), 1, f"{key} went to one member")
        last = {}
        for h in handled:
            last[h[4]] = max(last.get(h[4], 0), h[3])
        status = self.c.group_status(g)
        for b in status["buckets"]:
            if b["bucket"] in last:
                self.assertEqual((b["checkpoint"], b["lag"]), (last[b["bucket"]], 0), b)
        # Both left: no bucket is owned any more.
        self.assertEqual({b["owner"] for b in status["buckets"] if not b["expired"]} - {None}, set())

    def test_a_member_that_lost_its_bucket_drops_the_rest(self):
        s, g = name("takeover stream"), name("takeover group")
        offsets = self.c.publish(s, events=[{"key": "k", "payload": i} for i in range(5)])["offsets"]
        partitioned, started, go_on = threading.Event(), threading.Event(), threading.Event()

        class Flaky(Client):  # member a's heartbeats are lost while partitioned
            def member_heartbeat(self, *args, **kwargs):
                if partitioned.is_set():
                    raise OSError("partitioned")
                return super().member_heartbeat(*args, **kwargs)

        seen_a = []

        def slow(ev):
            seen_a.append(ev["offset"])
            started.set()
            go_on.wait(10)

        a = GroupMember(Flaky(self.c.url, self.c.token), g, s, slow, member="py-a", buckets=1,
                        ttl_ms=1200, wait_ms=300)
        t, box = in_thread(a.run)
        try:
            self.assertTrue(started.wait(5), "member a got no event")
            partitioned.set()
            eventually(self, lambda: self.c.group_status(g)["buckets"][0]["expired"], 5, "a's lease to lapse")
            # b takes the bucket under a newer epoch and handles everything.
            self.c.join_group(g, stream=s, member="py-b", ttl_ms=10000)
            got = self.c.member_claim(g, "py-b", wait_ms=1000)
            self.assertEqual([e["offset"] for e in got["events"]], offsets)
            self.c.member_checkpoint(g, "py-b", bucket=0, epoch=got["events"][0]["epoch"], offset=offsets[-1])
            partitioned.clear()
            go_on.set()  # a finds the bucket gone: its checkpoint is refused, the rest dropped
            time.sleep(1.0)
        finally:
            go_on.set()
            a.stop()
            joined(self, t, box, 5)
        self.assertEqual(seen_a, offsets[:1])
        [bucket] = self.c.group_status(g)["buckets"]
        self.assertEqual((bucket["owner"], bucket["checkpoint"], bucket["lag"]), ("py-b", offsets[-1], 0))

    def test_a_stale_epoch_checkpoint_is_refused(self):
        s, g = name("fence stream"), name("fence group")
        [offset] = self.c.publish(s, events=[{"key": "k", "payload": "e"}])["offsets"]
        a = self.c.join_group(g, stream=s, member="py-a", buckets=1, ttl_ms=10000)
        self.assertEqual((a["member"], a["buckets"], [l["bucket"] for l in a["leases"]]), ("py-a", 1, [0]))
        got = self.c.member_claim(g, "py-a", wait_ms=1000)
        [ev] = got["events"]
        self.assertEqual((ev["offset"], ev["payload"], ev["key"], ev["bucket"]), (offset, "e", "k", 0))
        stale_epoch = ev["epoch"]
        # a leaves before checkpointing; b takes the bucket under a new epoch
        # and re-reads from the last checkpoint.
        self.assertEqual(self.c.leave_group(g, "py-a"), {"released": 1})
        self.c.join_group(g, stream=s, member="py-b", ttl_ms=10000)
        got_b = self.c.member_claim(g, "py-b", wait_ms=1000)
        self.assertEqual([e["offset"] for e in got_b["events"]], [offset])
        new_epoch = got_b["events"][0]["epoch"]
        self.assertGreater(new_epoch, stale_epoch)
        with self.assertRaises(ApiError) as cm:
            self.c.member_checkpoint(g, "py-a", bucket=0, epoch=stale_epoch, offset=offset)
        self.assertEqual((cm.exception.status, cm.exception.code, cm.exception.field), (409, "not_held", "epoch"))
        self.assertEqual(self.c.member_checkpoint(g, "py-b", bucket=0, epoch=new_epoch, offset=offset),
                         {"checkpoint": offset})
        self.assertEqual(self.c.member_claim(g, "py-b", wait_ms=0)["events"], [])
        [bucket] = self.c.group_status(g)["buckets"]
        self.assertEqual((bucket["owner"], bucket["checkpoint"], bucket["lag"]), ("py-b", offset, 0))

    def test_membership_heartbeat_and_fair_share(self):
        s, g = name("share stream"), name("share group")
        a = self.c.join_group(g, stream=s, member="py-a", buckets=4, ttl_ms=10000)
        self.assertEqual((len(a["leases"]), a["live_members"], a["ttl_ms"]), (4, 1, 10000))
        self.c.join_group(g, stream=s, member="py-b", ttl_ms=10000)
        a = self.c.member_heartbeat(g, "py-a")  # gives back the surplus
        b = self.c.member_heartbeat(g, "py-b")  # takes its share
        self.assertEqual((len(a["leases"]), len(b["leases"]), b["live_members"]), (2, 2, 2))
        self.assertEqual({l["bucket"] for l in a["leases"]} | {l["bucket"] for l in b["leases"]}, {0, 1, 2, 3})
        self.assertEqual(self.c.leave_group(g, "py-b"), {"released": 2})
        self.assertEqual(len(self.c.member_heartbeat(g, "py-a")["leases"]), 4)


if __name__ == "__main__":
    unittest.main()
