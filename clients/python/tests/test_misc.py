"""Rate limits, notify/listen, locks and schedules over the live server."""

import unittest

from alkstore_client import ApiError

from live import client, in_thread, joined, name


class RatesAndChannels(unittest.TestCase):
    def setUp(self):
        self.c = client()

    def test_rate_acquire_admits_limit_then_refuses(self):
        r = name("rate")
        answers = [self.c.rate_acquire(r, limit=3, per_ms=60000) for _ in range(4)]
        self.assertEqual([(a["admitted"], a["remaining"]) for a in answers],
                         [(True, 2), (True, 1), (True, 0), (False, 0)])
        self.assertTrue(all(a["reset_at_ms"] == answers[0]["reset_at_ms"] for a in answers), answers)
        # Another name has its own window.
        self.assertTrue(self.c.rate_acquire(name("rate"), limit=1, per_ms=60000)["admitted"])
        with self.assertRaises(ApiError) as cm:
            self.c.rate_acquire(r, limit=0, per_ms=1000)
        self.assertEqual(
            (cm.exception.status, cm.exception.code, cm.exception.field), (400, "invalid_input", "limit")
        )

    def test_notify_reaches_a_listener(self):
        ch = name("channel")
        with self.c.listen(ch, timeout=5) as listener:
            self.assertEqual(self.c.notify_channel(ch, payload="hello 1"), {"done": True})
            self.assertEqual(self.c.notify(ch, payload="line one\nline two"), {"done": True})
            self.c.notify(name("other channel"), payload="not for us")
            first = next(listener)
            self.assertEqual((first.channel, first.event, first.payload), (ch, "notification", "hello 1"))
            self.assertEqual(next(listener).payload, "line one\nline two")
            # close() from another thread ends a blocked read.
            t, box = in_thread(lambda: list(listener))
            t.join(0.3)
            listener.close()
            self.assertEqual(joined(self, t, box, 3), [])

    def test_a_listener_hears_what_is_sent_after_it_listens(self):
        # Fire and forget: a notification sent before anyone listens is not
        # kept for later listeners, but on PostgreSQL one still in flight
        # may reach a listener that subscribed just after the send returned.
        ch = name("quiet channel")
        self.assertEqual(self.c.notify(ch, payload="early"), {"done": True})
        with self.c.listen(ch, timeout=5) as listener:
            self.c.notify(ch, payload="heard")
            got = next(listener).payload
            if got == "early":
                got = next(listener).payload
            self.assertEqual(got, "heard")


class LocksAndSchedules(unittest.TestCase):
    def setUp(self):
        self.c = client()

    def test_lock_is_exclusive(self):
        lock = name("lock")
        got = self.c.acquire_lock(lock, owner="py-a", ttl_ms=10000)
        self.assertTrue(got["held"], got)
        other = self.c.acquire_lock(lock, owner="py-b", ttl_ms=10000)
        self.assertFalse(other["held"], other)
        self.assertTrue(self.c.release_lock(lock, owner="py-a", token=got["token"])["released"])
        self.assertTrue(self.c.acquire_lock(lock, owner="py-b", ttl_ms=10000)["held"])

    def test_schedule_set_list_remove(self):
        sched = name("schedule")
        view = self.c.set_schedule(sched, spec="@every 1h", queue=name("scheduled"), payload={"x": 1})
        self.assertEqual((view["name"], view["spec"], view["paused"]), (sched, "@every 1h", False))
        self.assertIn(sched, [s["name"] for s in self.c.list_schedules()["schedules"]])
        self.assertTrue(self.c.pause_schedule(sched)["paused"])
        self.assertEqual(self.c.remove_schedule(sched), {"removed": True})

    def test_schedule_payload_in_base64(self):
        sched = name("raw schedule")
        view = self.c.set_schedule(sched, spec="@every 1h", queue=name("raw"), payload_base64="/wA=")
        self.assertEqual((view["payload"], view["payload_base64"]), (None, "/wA="))
        with self.assertRaises(ApiError) as cm:
            self.c.set_schedule(sched, spec="@every 1h", queue="raw", payload={"x": 1}, payload_base64="/wA=")
        self.assertEqual((cm.exception.status, cm.exception.field), (400, "payload_base64"))
        with self.assertRaises(ApiError) as cm:
            self.c.set_schedule(sched, spec="@every 1h", queue="raw", payload_base64="not base64!")
        self.assertEqual((cm.exception.status, cm.exception.field), (400, "payload_base64"))
        self.assertEqual(self.c.remove_schedule(sched), {"removed": True})


if __name__ == "__main__":
    unittest.main()
