// Streams, consumer groups and the group-member helper, over the live server.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Client, GroupMember } from "@alkstore/client";
import { T, apiError, client, eventually, name, sleep, within } from "./live.mjs";

const c = client();

test("read backwards from the head", T, async () => {
  const s = name("back");
  const { offsets } = await c.publish(s, { events: [0, 1, 2, 3, 4].map((i) => ({ payload: i })) });
  let page = await c.read(s, { before: Number.MAX_SAFE_INTEGER, limit: 2 });
  assert.deepEqual(page.events.map((e) => e.payload), [4, 3]);
  assert.equal(page.next_before, offsets[3]);
  page = await c.read(s, { before: page.next_before, limit: 2 });
  assert.deepEqual(page.events.map((e) => e.payload), [2, 1]);
  const last = await c.read(s, { before: page.next_before, limit: 2 });
  assert.deepEqual(last.events.map((e) => e.payload), [0]);
  assert.equal(last.next_before, undefined);
  const e = await apiError(c.read(s, { before: offsets[4], wait_ms: 1000 }));
  assert.deepEqual([e.status, e.field], [400, "wait_ms"]);
});

test("publish and read", T, async () => {
  const s = name("stream");
  const { offsets } = await c.publish(s, {
    events: [{ key: "k1", payload: { i: 0 } }, { payload: [1] }, { key: "k1", payload: "two" }],
  });
  assert.equal(new Set(offsets).size, 3);
  assert.deepEqual(offsets, [...offsets].sort((a, b) => a - b));
  const page = await c.read(s, { after: 0, limit: 10, wait_ms: 1000 });
  assert.deepEqual(page.events.map((e) => [e.offset, e.key, e.payload]), [
    [offsets[0], "k1", { i: 0 }],
    [offsets[1], null, [1]],
    [offsets[2], "k1", "two"],
  ]);
  assert.equal(page.next_after, offsets[2]);
  const info = await c.stream_info(s);
  assert.deepEqual([info.stream, info.events, info.head], [s, 3, offsets[2]]);
  // A read waiting past the head is woken by the next publish.
  let settled = false;
  const waiting = c.read(s, { after: page.next_after, wait_ms: 5000 }).finally(() => (settled = true));
  await sleep(200);
  assert.equal(settled, false, "the read did not wait");
  const [later] = (await c.publish(s, { events: [{ payload: "later" }] })).offsets;
  const got = await within(waiting, 5000, "read");
  assert.deepEqual(got.events.map((e) => [e.offset, e.payload]), [[later, "later"]]);
});

test("two group members: every event exactly once, key order kept, checkpoints saved", T, async () => {
  const s = name("group stream");
  const g = name("group");
  const handled = []; // [member, key, seq, offset, bucket]
  const controller = new AbortController();
  const members = ["a", "b"].map(
    (m) =>
      new GroupMember(c, g, s, (ev) => { handled.push([m, ev.key, ev.payload.seq, ev.offset, ev.bucket]); }, {
        member: `js member ${m}`,
        buckets: 8,
        ttlMs: 6000,
        waitMs: 300,
        signal: controller.signal,
      }),
  );
  const runs = members.map((m) => m.run().then(() => null, (e) => e));
  const keys = Array.from({ length: 12 }, (_, k) => `key ${k}/${"x".repeat(k)}`);
  const offsets = [];
  try {
    await eventually(async () => {
      const status = await c.group_status(g).catch((e) => (e.code === "not_found" ? null : Promise.reject(e)));
      if (!status) return false; // not created yet: the members are joining
      const owners = status.buckets.map((b) => b.owner);
      const counts = members.map((m) => owners.filter((o) => o === m.member).length);
      return counts[0] === 4 && counts[1] === 4;
    }, 10_000, "four buckets each");
    const events = Array.from({ length: 120 }, (_, i) => ({ key: keys[i % keys.length], payload: { seq: Math.floor(i / keys.length) } }));
    for (let at = 0; at < events.length; at += 40) {
      offsets.push(...(await c.publish(s, { events: events.slice(at, at + 40) })).offsets);
    }
    await eventually(() => handled.length >= events.length, 15_000, "every event handled");
    await sleep(500); // anything handled twice would show now
  } finally {
    controller.abort();
    for (const error of await within(Promise.all(runs), 10_000, "members to stop")) if (error) throw error;
  }
  assert.deepEqual(handled.map((h) => h[3]).sort((a, b) => a - b), [...offsets].sort((a, b) => a - b), "each event exactly once");
  assert.deepEqual(new Set(handled.map((h) => h[0])), new Set(["a", "b"]), "both members got events");
  for (const key of keys) {
    const mine = handled.filter((h) => h[1] === key);
    assert.deepEqual(mine.map((h) => h[2]), Array.from({ length: 10 }, (_, i) => i), `order of ${key}`);
    assert.equal(new Set(mine.map((h) => h[0])).size, 1, `${key} went to one member`);
  }
  const last = new Map();
  for (const h of handled) last.set(h[4], Math.max(last.get(h[4]) ?? 0, h[3]));
  const status = await c.group_status(g);
  for (const b of status.buckets) {
    if (last.has(b.bucket)) assert.deepEqual([b.checkpoint, b.lag], [last.get(b.bucket), 0], JSON.stringify(b));
  }
  assert.deepEqual(status.buckets.filter((b) => !b.expired && b.owner !== null), [], "both members left");
});

test("a member that lost its bucket drops the rest of its events", T, async () => {
  const s = name("takeover stream");
  const g = name("takeover group");
  const { offsets } = await c.publish(s, { events: [0, 1, 2, 3, 4].map((i) => ({ key: "k", payload: i })) });
  let partitioned = false;
  class Flaky extends Client {
    // member a's heartbeats are lost while partitioned
    member_heartbeat(...args) {
      return partitioned ? Promise.reject(new TypeError("fetch failed: partitioned")) : super.member_heartbeat(...args);
    }
  }
  const seenA = [];
  let started;
  const startedP = new Promise((resolve) => (started = resolve));
  let goOn;
  const goOnP = new Promise((resolve) => (goOn = resolve));
  const a = new GroupMember(new Flaky(c.url, { token: c.token }), g, s, async (ev) => {
    seenA.push(ev.offset);
    started();
    await goOnP;
  }, { member: "js-a", buckets: 1, ttlMs: 1200, waitMs: 300 });
  const running = a.run().then(() => null, (e) => e);
  try {
    await within(startedP, 5000, "member a's first event");
    partitioned = true;
    await eventually(async () => (await c.group_status(g)).buckets[0].expired, 5000, "a's lease to lapse");
    // b takes the bucket under a newer epoch and handles everything.
    await c.join_group(g, { stream: s, member: "js-b", ttl_ms: 10_000 });
    const got = await c.member_claim(g, "js-b", { wait_ms: 1000 });
    assert.deepEqual(got.events.map((e) => e.offset), offsets);
    await c.member_checkpoint(g, "js-b", { bucket: 0, epoch: got.events[0].epoch, offset: offsets.at(-1) });
    partitioned = false;
    goOn(); // a finds the bucket gone: its checkpoint is refused, the rest dropped
    await sleep(1000);
  } finally {
    goOn();
    a.stop();
    const error = await within(running, 5000, "member a to stop");
    if (error) throw error;
  }
  assert.deepEqual(seenA, offsets.slice(0, 1));
  const [bucket] = (await c.group_status(g)).buckets;
  assert.deepEqual([bucket.owner, bucket.checkpoint, bucket.lag], ["js-b", offsets.at(-1), 0]);
});

test("a stale-epoch checkpoint is refused: 409 not_held (fenced)", T, async () => {
  const s = name("fence stream");
  const g = name("fence group");
  const [offset] = (await c.publish(s, { events: [{ key: "k", payload: "e" }] })).offsets;
  const a = await c.join_group(g, { stream: s, member: "js-a", buckets: 1, ttl_ms: 10_000 });
  assert.deepEqual([a.member, a.buckets, a.leases.map((l) => l.bucket)], ["js-a", 1, [0]]);
  const [ev] = (await c.member_claim(g, "js-a", { wait_ms: 1000 })).events;
  assert.deepEqual([ev.offset, ev.payload, ev.key, ev.bucket], [offset, "e", "k", 0]);
  // a leaves before checkpointing; b takes the bucket under a new epoch and re-reads.
  assert.deepEqual(await c.leave_group(g, "js-a"), { released: 1 });
  await c.join_group(g, { stream: s, member: "js-b", ttl_ms: 10_000 });
  const gotB = await c.member_claim(g, "js-b", { wait_ms: 1000 });
  assert.deepEqual(gotB.events.map((e) => e.offset), [offset]);
  const newEpoch = gotB.events[0].epoch;
  assert.ok(newEpoch > ev.epoch);
  const e = await apiError(c.member_checkpoint(g, "js-a", { bucket: 0, epoch: ev.epoch, offset }));
  assert.deepEqual([e.status, e.code, e.field], [409, "not_held", "epoch"]);
  assert.deepEqual(await c.member_checkpoint(g, "js-b", { bucket: 0, epoch: newEpoch, offset }), { checkpoint: offset });
  assert.deepEqual((await c.member_claim(g, "js-b", { wait_ms: 0 })).events, []);
  const [bucket] = (await c.group_status(g)).buckets;
  assert.deepEqual([bucket.owner, bucket.checkpoint, bucket.lag], ["js-b", offset, 0]);
});
