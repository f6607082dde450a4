// What every test needs: a client of the live server named by ALK_URL (and
// ALK_TOKEN), and names no other test (or earlier run) has used.
import { Client } from "@alkstore/client";

const run = `${process.pid}-${Date.now() % 1e9}`;
let count = 0;

export function client() {
  const url = process.env.ALK_URL;
  if (!url) throw new Error("set ALK_URL (and ALK_TOKEN) to a running `alk serve`");
  return new Client(url, { token: process.env.ALK_TOKEN });
}

/** A fresh name that needs percent-encoding in a path: a space, "/", "?", "#", "%", "!'()*" and a non-ASCII letter. */
export function name(kind) {
  count += 1;
  return `js ${kind} ${run}-${count} a/b?c#d%e!'()* ü`;
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves with check()'s first truthy value; rejects after timeoutMs. */
export async function eventually(check, timeoutMs = 5000, what = "condition") {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    last = await check();
    if (last) return last;
    if (Date.now() > deadline) throw new Error(`${what} not reached within ${timeoutMs} ms (last: ${JSON.stringify(last)})`);
    await sleep(50);
  }
}

/** p, or a rejection after ms. */
export function within(p, ms, what = "promise") {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** The ApiError p rejects with (fails when it resolves or rejects otherwise). */
export async function apiError(p) {
  try {
    await p;
  } catch (e) {
    if (e?.name === "ApiError") return e;
    throw e;
  }
  throw new Error("expected an ApiError, the call succeeded");
}
export const T = { timeout: 30_000 };
