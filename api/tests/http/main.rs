//! Black-box tests of the HTTP API: the real router served over real loopback HTTP, driven by
//! the typed [`Client`] and by raw requests (malformed bodies, missing headers, node-to-node
//! calls). Every case checks the status code and the JSON body.
//!
//! "Nothing was written" is checked with `GET /v1/cluster/digest`. Requests the API refuses before
//! proposing leave `(last_applied, digest)` untouched; requests the state machine rejects are
//! applied as no-ops that change nothing, not even its clock, so the digest stays the same.

//!
//! One module per topic; [`harness`] holds what they share.

mod harness;

mod auth_config_audit;
mod claim_wait;
mod client_clock;
mod coordination;
mod created_at;
mod dead_letters;
mod dual_control;
mod errors;
mod lanes;
mod least_privilege;
mod matrix;
mod names;
mod node_to_node;
mod openapi_file;
mod oracle;
mod ownership;
mod pipeline;
mod poison;
mod request_reuse;
mod scope;
mod store_routes;
mod store_shapes;
mod ui;
mod users;
