//! The outer (Ralph) loop: pure decisions (`decide`, `fix_plan`, `metrics`, `promise`) and the
//! driver that performs them (`driver`, `iteration`, `accept`, `runner`, `start`).

pub mod accept;
pub mod commit;
pub mod context;
pub mod decide;
pub mod driver;
pub mod fix_plan;
pub mod iteration;
pub mod promise;
pub mod recover;
pub mod runner;
pub mod signs;
pub mod start;
pub mod templates;
