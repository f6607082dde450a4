// @alkstore/client: a client for alkstore's HTTP API (`alk serve`).
//
// `Client` has one method per operation of the API (generated from its
// OpenAPI document, named after each operationId) plus `listen`, `result`,
// `notify` and `rate_acquire`; `Worker`/`work` run a job loop, `GroupMember`
// a consumer-group member.
export * from "./generated.js";
export { ApiError, Client, Listener } from "./client.js";
export { Fail, Worker, work } from "./worker.js";
export { GroupMember } from "./group.js";
