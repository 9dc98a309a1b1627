//! The outer (Ralph) loop: pure decisions (`decide`, `fix_plan`, `metrics`, `promise`) and the
//! driver that performs them (`run`, `iteration`).

pub mod decide;
pub mod fix_plan;
pub mod metrics;
pub mod promise;
