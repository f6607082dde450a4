export * from "./generated.js";
export { ApiError, Client, Listener } from "./client.js";
export type { ClientOptions, Notification } from "./client.js";
export { Fail, Worker, work } from "./worker.js";
export type { JobHandler, WorkerCounts, WorkerOptions } from "./worker.js";
export { GroupMember } from "./group.js";
export type { EventHandler, GroupMemberOptions } from "./group.js";
