//! Every kind of op an atomic request takes: its tag, the single call it
//! stands for, how its fields are read into a [`Write`], and how the
//! OpenAPI document shows it ([`AtomicOp`], one schema per kind). The one
//! table, `KINDS`, serves both, so what is read and what is documented
//! cannot drift apart.

use std::time::Duration;

use alkstore_core::group::GroupCheckpointParams;
use alkstore_core::lock::LockFenceParams;
use alkstore_core::notify::NotifyParams;
use alkstore_core::queue::JobSnoozeParams;
use axum::http::StatusCode;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use utoipa::openapi::schema::{
    Discriminator, Object, ObjectBuilder, OneOfBuilder, Schema, SchemaFormat, Type,
};
use utoipa::openapi::{KnownFormat, Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

use super::wire::{GroupCheckpointRequest, LockFenceRequest, NoBody, NotifyRequest, SnoozeRequest};
use super::write::Write;
use crate::error::{ApiError, ApiResult};
use crate::queues::{ClaimRef, EnqueueBatchRequest, EnqueueRequest, FailRequest, RetryRequest};
use crate::schedules::ScheduleRequest;
use crate::streams::{CommitRequest, PublishRequest};

/// A value a single call takes in its path, which its op carries as a
/// field.
#[derive(Debug, Clone, Copy)]
enum PathField {
    Queue,
    Stream,
    Consumer,
    Id,
    Name,
}

impl PathField {
    fn key(self) -> &'static str {
        match self {
            PathField::Queue => "queue",
            PathField::Stream => "stream",
            PathField::Consumer => "consumer",
            PathField::Id => "id",
            PathField::Name => "name",
        }
    }

    fn schema(self) -> RefOr<Schema> {
        let what = match self {
            PathField::Id => {
                return ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
                    .minimum(Some(1))
                    .description(Some("Job id (the path's `{id}` of the single call)."))
                    .into()
            }
            PathField::Queue => "Queue name",
            PathField::Stream => "Stream name",
            PathField::Consumer => "Consumer name",
            PathField::Name => "Schedule name",
        };
        ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(200))
            .pattern(Some("^[^\\u0000]+$"))
            .description(Some(format!(
                "{what} (the path's `{{{}}}` of the single call): 1 to 200 bytes of UTF-8, no NUL.",
                self.key()
            )))
            .into()
    }

    /// Take this field out of an op: a string for names, a positive
    /// integer for ids (the store checks names as it does in a path).
    fn take_name(self, op: &mut Map<String, Value>) -> ApiResult<String> {
        match op.remove(self.key()) {
            Some(Value::String(s)) => Ok(s),
            Some(_) => Err(ApiError::invalid(self.key(), "must be a string")),
            None => Err(missing(self.key())),
        }
    }

    fn take_id(self, op: &mut Map<String, Value>) -> ApiResult<i64> {
        match op.remove(self.key()) {
            Some(v) => match v.as_i64() {
                Some(id) if id >= 1 => Ok(id),
                _ => Err(ApiError::invalid(
                    self.key(),
                    format!("job ids are positive integers, not {v}"),
                )),
            },
            None => Err(missing(self.key())),
        }
    }
}

fn missing(key: &str) -> ApiError {
    ApiError::invalid(key, format!("missing field `{key}`"))
}

/// The rest of an op (its path fields taken out) as the single call's body.
fn body<T: DeserializeOwned>(op: Map<String, Value>) -> ApiResult<T> {
    serde_path_to_error::deserialize(Value::Object(op)).map_err(|e| crate::error::invalid_json(&e))
}

/// An op that names a schedule and has no body.
fn schedule_named(mut op: Map<String, Value>, write: fn(String) -> Write) -> ApiResult<Write> {
    let name = PathField::Name.take_name(&mut op)?;
    body::<NoBody>(op)?;
    Ok(write(name))
}

/// The schema of a body type, with the schemas it refers to.
fn body_schema<T: ToSchema>(refs: &mut Vec<(String, RefOr<Schema>)>) -> RefOr<Schema> {
    T::schemas(refs);
    T::schema()
}

type SchemaFn = fn(&mut Vec<(String, RefOr<Schema>)>) -> RefOr<Schema>;

/// One kind of op: its tag, the single call it stands for, and how to
/// read it.
pub(super) struct Kind {
    pub(super) op: &'static str,
    /// Its schema's name in the document.
    component: &'static str,
    /// What it does (the schema's description).
    description: &'static str,
    /// The single call's path values, carried as fields.
    path: &'static [PathField],
    /// The single call's body.
    body: SchemaFn,
    /// The op's fields (tag taken out) as a write.
    parse: fn(Map<String, Value>) -> ApiResult<Write>,
    /// The field at fault when what it needs is no longer the caller's.
    pub(super) held_field: &'static str,
}

const Q: &[PathField] = &[PathField::Queue];
const ID: &[PathField] = &[PathField::Id];
const NAME: &[PathField] = &[PathField::Name];

/// Every kind of op.
const KINDS: &[Kind] = &[
    Kind {
        op: "enqueue",
        component: "EnqueueOp",
        description: "Enqueue a job: the body of `POST /api/v1/queues/{queue}/jobs`, with `queue`. Claimable once the request commits.",
        path: Q,
        body: body_schema::<EnqueueRequest>,
        parse: |mut m| {
            let queue = PathField::Queue.take_name(&mut m)?;
            Ok(Write::Enqueue(body::<EnqueueRequest>(m)?.into_job(&queue)?))
        },
        held_field: "token",
    },
    Kind {
        op: "enqueue_batch",
        component: "EnqueueBatchOp",
        description: "Enqueue several jobs: the body of `POST /api/v1/queues/{queue}/jobs/batch`, with `queue`.",
        path: Q,
        body: body_schema::<EnqueueBatchRequest>,
        parse: |mut m| {
            let queue = PathField::Queue.take_name(&mut m)?;
            Ok(Write::EnqueueBatch(
                body::<EnqueueBatchRequest>(m)?.into_jobs(&queue)?,
            ))
        },
        held_field: "token",
    },
    Kind {
        op: "publish",
        component: "PublishOp",
        description: "Publish events: the body of `POST /api/v1/streams/{stream}/events`, with `stream`. Readable once the request commits.",
        path: &[PathField::Stream],
        body: body_schema::<PublishRequest>,
        parse: |mut m| {
            let stream = PathField::Stream.take_name(&mut m)?;
            Ok(Write::Publish(body::<PublishRequest>(m)?.into_events(&stream)?))
        },
        held_field: "token",
    },
    Kind {
        op: "ack",
        component: "AckOp",
        description: "Ack a claimed job: the body of `POST /api/v1/jobs/{id}/ack`, with `id`. A claim no longer held fails the request (409).",
        path: ID,
        body: body_schema::<ClaimRef>,
        parse: |mut m| {
            let id = PathField::Id.take_id(&mut m)?;
            Ok(Write::Ack(body::<ClaimRef>(m)?.claim(id)))
        },
        held_field: "token",
    },
    Kind {
        op: "retry",
        component: "RetryOp",
        description: "Retry a claimed job later: the body of `POST /api/v1/jobs/{id}/retry`, with `id`. A claim no longer held fails the request (409).",
        path: ID,
        body: body_schema::<RetryRequest>,
        parse: |mut m| {
            let id = PathField::Id.take_id(&mut m)?;
            Ok(Write::Retry(body::<RetryRequest>(m)?.into_params(id)))
        },
        held_field: "token",
    },
    Kind {
        op: "fail",
        component: "FailOp",
        description: "Fail a claimed job for good: the body of `POST /api/v1/jobs/{id}/fail`, with `id`. A claim no longer held fails the request (409).",
        path: ID,
        body: body_schema::<FailRequest>,
        parse: |mut m| {
            let id = PathField::Id.take_id(&mut m)?;
            Ok(Write::Fail(body::<FailRequest>(m)?.into_params(id)))
        },
        held_field: "token",
    },
    Kind {
        op: "snooze",
        component: "SnoozeOp",
        description: "Snooze a claimed job: it runs again after `delay_ms` without using an attempt. A claim no longer held fails the request (409).",
        path: ID,
        body: body_schema::<SnoozeRequest>,
        parse: |mut m| {
            let id = PathField::Id.take_id(&mut m)?;
            let s = body::<SnoozeRequest>(m)?;
            Ok(Write::Snooze(JobSnoozeParams::new(ClaimRef { worker: s.worker, token: s.token, } .claim(id), Duration::from_millis(s.delay_ms))))
        },
        held_field: "token",
    },
    Kind {
        op: "offset_commit",
        component: "OffsetCommitOp",
        description: "Commit a consumer's offset: the body of `PUT /api/v1/streams/{stream}/consumers/{consumer}`, with `stream` and `consumer`. With `expected`, the offset moves only from exactly that one, and stays so until the request commits: one that moved fails the request (409), so another instance of the consumer cannot also commit its writes for the same events.",
        path: &[PathField::Stream, PathField::Consumer],
        body: body_schema::<CommitRequest>,
        parse: |mut m| {
            let stream = PathField::Stream.take_name(&mut m)?;
            let consumer = PathField::Consumer.take_name(&mut m)?;
            Ok(Write::OffsetCommit(
                body::<CommitRequest>(m)?.params(stream, consumer),
            ))
        },
        held_field: "expected",
    },
    Kind {
        op: "group_checkpoint",
        component: "GroupCheckpointOp",
        description: "Move a consumer group bucket's checkpoint under the lease epoch the worker holds; the lease cannot be taken over before the request commits. A lease no longer held under `epoch` fails the request (409).",
        path: &[],
        body: body_schema::<GroupCheckpointRequest>,
        parse: |m| {
            let c = body::<GroupCheckpointRequest>(m)?;
            Ok(Write::GroupCheckpoint(GroupCheckpointParams::new(
                c.group, c.bucket, c.worker, c.epoch, c.offset,
            )))
        },
        held_field: "epoch",
    },
    Kind {
        op: "notify",
        component: "NotifyOp",
        description: "Send a notification; listeners get it when the request commits (never if it fails).",
        path: &[],
        body: body_schema::<NotifyRequest>,
        parse: |m| {
            let n = body::<NotifyRequest>(m)?;
            Ok(Write::Notify(NotifyParams::new(n.channel, n.payload)))
        },
        held_field: "token",
    },
    Kind {
        op: "lock_fence",
        component: "LockFenceOp",
        description: "Fence the request with a lock: refused (409) unless `token` is still the holder's, and the lock cannot pass on before the request commits, so its writes never land after the lock moved.",
        path: &[],
        body: body_schema::<LockFenceRequest>,
        parse: |m| {
            let f = body::<LockFenceRequest>(m)?;
            Ok(Write::LockFence(LockFenceParams::new(f.name, f.token)))
        },
        held_field: "token",
    },
    Kind {
        op: "schedule_set",
        component: "ScheduleSetOp",
        description: "Create or change a schedule: the body of `PUT /api/v1/schedules/{name}`, with `name`.",
        path: NAME,
        body: body_schema::<ScheduleRequest>,
        parse: |mut m| {
            let name = PathField::Name.take_name(&mut m)?;
            Ok(Write::ScheduleSet(
                body::<ScheduleRequest>(m)?.into_params(name)?,
            ))
        },
        held_field: "token",
    },
    Kind {
        op: "schedule_remove",
        component: "ScheduleRemoveOp",
        description: "Remove a schedule (`DELETE /api/v1/schedules/{name}`), with `name`.",
        path: NAME,
        body: body_schema::<NoBody>,
        parse: |m| schedule_named(m, Write::ScheduleRemove),
        held_field: "token",
    },
    Kind {
        op: "schedule_pause",
        component: "SchedulePauseOp",
        description: "Pause a schedule (`POST /api/v1/schedules/{name}/pause`), with `name`. No such schedule fails the request (404).",
        path: NAME,
        body: body_schema::<NoBody>,
        parse: |m| schedule_named(m, Write::SchedulePause),
        held_field: "token",
    },
    Kind {
        op: "schedule_resume",
        component: "ScheduleResumeOp",
        description: "Resume a schedule (`POST /api/v1/schedules/{name}/resume`), with `name`. No such schedule fails the request (404).",
        path: NAME,
        body: body_schema::<NoBody>,
        parse: |m| schedule_named(m, Write::ScheduleResume),
        held_field: "token",
    },
];

fn op_names() -> String {
    KINDS.iter().map(|k| k.op).collect::<Vec<_>>().join(", ")
}

impl Kind {
    /// The op's schema: the body's, with the `op` tag and the path values
    /// as fields.
    fn schema(&self, refs: &mut Vec<(String, RefOr<Schema>)>) -> RefOr<Schema> {
        let mut obj = match (self.body)(refs) {
            RefOr::T(Schema::Object(o)) => o,
            // Every body is a struct; a body of another shape would show
            // up as an op with only its tag (the document test checks
            // that every op has its body's fields).
            _ => Object::default(),
        };
        let tag = ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some([self.op]))
            .description(Some("The op's kind."));
        obj.properties.insert("op".into(), tag.into());
        let mut required = vec!["op".to_string()];
        for p in self.path {
            obj.properties.insert(p.key().into(), p.schema());
            required.push(p.key().into());
        }
        required.append(&mut obj.required);
        obj.required = required;
        obj.description = Some(self.description.into());
        obj.schema_type = Type::Object.into();
        RefOr::T(Schema::Object(obj))
    }
}

/// One op of an atomic request: the body of the single call it stands for
/// plus that call's path values and an `op` tag (documentation; the
/// handler reads each op by its tag, so a bad op is named by its index).
#[derive(Debug)]
pub struct AtomicOp;

impl PartialSchema for AtomicOp {
    fn schema() -> RefOr<Schema> {
        let mut discriminator = Discriminator::new("op");
        let mut one_of = OneOfBuilder::new().description(Some(
            "One write: the body of the single call it stands for, that call's path values as fields, and an `op` tag.",
        ));
        for k in KINDS {
            discriminator.mapping.insert(
                k.op.to_string(),
                format!("#/components/schemas/{}", k.component),
            );
            one_of = one_of.item(Ref::from_schema_name(k.component));
        }
        one_of.discriminator(Some(discriminator)).into()
    }
}

impl ToSchema for AtomicOp {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        for k in KINDS {
            let schema = k.schema(schemas);
            schemas.push((k.component.to_string(), schema));
        }
    }
}

/// Read op `index`: its tag, then the rest as that kind's fields.
pub(super) fn parse(index: usize, op: Value) -> ApiResult<(&'static Kind, Write)> {
    let bad = |field: &str, message: String| ApiError::invalid(field, message).in_op(index, None);
    let Value::Object(mut fields) = op else {
        let e = ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_input",
            None,
            format!("must be an object with an `op` tag, one of: {}", op_names()),
        );
        return Err(e.in_op(index, None));
    };
    let kind = match fields.remove("op") {
        Some(Value::String(tag)) => match KINDS.iter().find(|k| k.op == tag) {
            Some(k) => k,
            None => {
                return Err(bad(
                    "op",
                    format!("unknown op {tag:?}: one of {}", op_names()),
                ))
            }
        },
        Some(_) => return Err(bad("op", format!("must be one of {}", op_names()))),
        None => return Err(bad("op", format!("missing: one of {}", op_names()))),
    };
    let write = (kind.parse)(fields).map_err(|e| e.in_op(index, Some(kind.op)))?;
    Ok((kind, write))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_op_schema_has_its_tag_path_values_and_body_fields() {
        let mut refs = Vec::new();
        for k in KINDS {
            let RefOr::T(Schema::Object(body)) = (k.body)(&mut refs) else {
                panic!("{}: the body is not an object", k.op);
            };
            let RefOr::T(Schema::Object(op)) = k.schema(&mut refs) else {
                panic!("{}: not an object", k.op);
            };
            assert!(op.required.contains(&"op".to_string()), "{}", k.op);
            for p in k.path {
                assert!(op.properties.contains_key(p.key()), "{}", k.op);
            }
            for f in body.properties.keys() {
                assert!(op.properties.contains_key(f), "{}: {f}", k.op);
            }
        }
    }

    #[test]
    fn ops_are_read_by_their_tag_and_name_the_bad_field() {
        let ok = [
            serde_json::json!({"op": "enqueue", "queue": "q", "payload": 1}),
            serde_json::json!({"op": "enqueue_batch", "queue": "q", "jobs": [{"payload": 1}]}),
            serde_json::json!({"op": "publish", "stream": "s", "events": [{"payload": 1}]}),
            serde_json::json!({"op": "ack", "id": 1, "worker": "w", "token": 1}),
            serde_json::json!({"op": "retry", "id": 1, "worker": "w", "token": 1, "error": "e"}),
            serde_json::json!({"op": "fail", "id": 1, "worker": "w", "token": 1, "error": "e"}),
            serde_json::json!({"op": "snooze", "id": 1, "worker": "w", "token": 1, "delay_ms": 5}),
            serde_json::json!({"op": "offset_commit", "stream": "s", "consumer": "c", "offset": 1}),
            serde_json::json!({"op": "group_checkpoint", "group": "g", "bucket": 0, "worker": "w", "epoch": 1, "offset": 1}),
            serde_json::json!({"op": "notify", "channel": "c", "payload": "p"}),
            serde_json::json!({"op": "lock_fence", "name": "l", "token": 1}),
            serde_json::json!({"op": "schedule_set", "name": "n", "spec": "@every 1m", "queue": "q"}),
            serde_json::json!({"op": "schedule_remove", "name": "n"}),
            serde_json::json!({"op": "schedule_pause", "name": "n"}),
            serde_json::json!({"op": "schedule_resume", "name": "n"}),
        ];
        assert_eq!(ok.len(), KINDS.len(), "one sample per kind");
        for (i, op) in ok.into_iter().enumerate() {
            let (kind, _) = parse(i, op).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(kind.op, KINDS[i].op);
        }
        let bad = |op: Value| parse(3, op).err().map(|e| e.field().map(str::to_string));
        assert_eq!(
            bad(serde_json::json!({"op": "enqueue", "queue": "q", "payload": 1, "priority": "x"})),
            Some(Some("ops[3].priority".into()))
        );
        assert_eq!(
            bad(serde_json::json!({"op": "enqueue", "payload": 1})),
            Some(Some("ops[3].queue".into()))
        );
        assert_eq!(
            bad(serde_json::json!({"op": "ack", "id": 0, "worker": "w", "token": 1})),
            Some(Some("ops[3].id".into()))
        );
        assert_eq!(
            bad(serde_json::json!({"op": "ack", "id": 1, "worker": "w", "token": 1, "x": 1})),
            Some(Some("ops[3].x".into()))
        );
        assert_eq!(
            bad(serde_json::json!({"op": "launch"})),
            Some(Some("ops[3].op".into()))
        );
        assert_eq!(bad(serde_json::json!([1])), Some(Some("ops[3]".into())));
        assert_eq!(
            bad(
                serde_json::json!({"op": "enqueue_batch", "queue": "q", "jobs": [{"payload": 1, "priority": "x"}]})
            ),
            Some(Some("ops[3].jobs".into()))
        );
    }
}
