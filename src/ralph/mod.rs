//! The outer (Ralph) loop: pure decisions (`decide`: exit conditions, breakers, the after-run
//! policy; `fix_plan`, `promise`, `signs`) and the code that performs them, one way down:
//! `start` → `driver` → `iteration` → `accept` (plan guard, validate, gate, `commit`), all on
//! the loop held in `context`, agents run through `runner`; `recover` after a crash; `theirs`:
//! the user's uncommitted work at start. May import
//! `gate`, `agent`, `git`, `quality`, `disk`, `config` and `sys`.

pub mod accept;
pub mod agent_choice;
pub mod asking;
pub mod attempt_plan;
pub mod best;
pub mod books;
pub mod budget;
pub mod changes;
pub mod claim;
pub mod commit;
pub mod context;
pub mod decide;
pub mod deliver;
pub mod driver;
pub mod dry_run;
pub mod earlier;
pub mod event;
pub mod failure;
pub mod fallback;
pub mod fix_plan;
pub mod guard;
pub mod iteration;
pub mod limits;
pub mod named;
pub mod notify;
pub mod original;
pub mod progress;
pub mod promise;
pub mod recover;
pub mod runner;
pub mod signs;
pub mod sinks;
pub mod start;
pub mod templates;
pub mod theirs;
pub mod validation;
pub mod work;
