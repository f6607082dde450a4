// Rate limits, notify/listen and locks over the live server.
import assert from "node:assert/strict";
import { test } from "node:test";
import { T, apiError, client, name, within } from "./live.mjs";

const c = client();

test("rate_acquire admits `limit`, then refuses", T, async () => {
  const r = name("rate");
  const answers = [];
  for (let i = 0; i < 4; i++) answers.push(await c.rate_acquire(r, 3, 60_000));
  assert.deepEqual(answers.map((a) => [a.admitted, a.remaining]), [[true, 2], [true, 1], [true, 0], [false, 0]]);
  assert.ok(answers.every((a) => a.reset_at_ms === answers[0].reset_at_ms), JSON.stringify(answers));
  assert.equal((await c.rate_acquire(name("rate"), 1, 60_000)).admitted, true);
  const e = await apiError(c.rate_acquire(r, 0, 1000));
  assert.deepEqual([e.status, e.code, e.field], [400, "invalid_input", "limit"]);
});

test("notify reaches a listener", T, async () => {
  const ch = name("channel");
  const listener = await c.listen(ch);
  try {
    assert.deepEqual(await c.notify_channel(ch, { payload: "hello 1" }), { done: true });
    assert.deepEqual(await c.notify(ch, "line one\nline two"), { done: true });
    await c.notify(name("other channel"), "not for us");
    const first = await within(listener.next(), 5000, "first notification");
    assert.deepEqual(first, { channel: ch, event: "notification", payload: "hello 1" });
    assert.equal((await within(listener.next(), 5000, "second notification")).payload, "line one\nline two");
    // close() ends a pending read; for-await then ends too.
    const pending = listener.next();
    listener.close();
    assert.equal(await within(pending, 3000, "read after close"), undefined);
    const rest = [];
    for await (const n of listener) rest.push(n);
    assert.deepEqual(rest, []);
  } finally {
    listener.close();
  }
});

test("a listener hears what is sent after it listens", T, async () => {
  // Fire and forget: a notification sent before anyone listens is not kept
  // for later listeners, but on PostgreSQL one still in flight may reach a
  // listener that subscribed just after the send returned.
  const ch = name("quiet channel");
  assert.deepEqual(await c.notify(ch, "early"), { done: true });
  const listener = await c.listen(ch);
  try {
    await c.notify(ch, "heard");
    for await (const n of listener) {
      if (n.payload === "early") continue;
      assert.equal(n.payload, "heard");
      break; // ends the listener
    }
  } finally {
    listener.close();
  }
});

test("a lock is exclusive", T, async () => {
  const lock = name("lock");
  const got = await c.acquire_lock(lock, { owner: "js-a", ttl_ms: 10_000 });
  assert.equal(got.held, true);
  assert.equal((await c.acquire_lock(lock, { owner: "js-b", ttl_ms: 10_000 })).held, false);
  assert.equal((await c.release_lock(lock, { owner: "js-a", token: got.token })).released, true);
  assert.equal((await c.acquire_lock(lock, { owner: "js-b", ttl_ms: 10_000 })).held, true);
});
