//! Reading a loop from any shell: one read model of a loop for `status`, `list`, `watch` and
//! `summary`, the analytics of `report`, and the live view (`watch`). Reads `disk`; acts on a loop
//! only through `disk::requests`. A loop as Kubernetes objects (`kube`) is a view of it, too.

pub mod access;
pub mod dashboard;
pub mod events;
pub mod feed;
pub mod kube;
pub mod model;
pub mod remote;
pub mod report;
pub mod summary;
pub mod table;
pub mod watch;
